// New deployment: send the form with XMLHttpRequest (window.consoleUpload, upload.js) so the page can show
// upload progress. The server answers like an htmx request: HX-Redirect on success, or the form's partial
// with errors next to fields.
// Without JavaScript the form posts normally.
(function () {
  "use strict";

  function bind(form) {
    if (!form || form.dataset.bound || !window.consoleUpload) return;
    form.dataset.bound = "1";
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      send(form);
    });
  }

  function send(form) {
    var box = progressBox(form);
    window.consoleUpload(form, {
      target: "deployment-create",
      bar: box.querySelector("progress"),
      status: box.querySelector(".upload-progress__text"),
      uploaded: "Uploaded; the service is checking the archive…",
      describe: function (percent, loaded, total) {
        return "Uploading… " + percent + "% (" + Math.round(loaded / 1024) + " of " + Math.round(total / 1024) + " KiB)";
      },
      onDone: replace,
      messages: { error: "The upload was interrupted: check the connection and try again." },
    });
  }

  // The progress bar exists only while uploading (and only with JavaScript).
  function progressBox(form) {
    var box = form.querySelector(".upload-progress");
    if (box) return box;
    box = document.createElement("div");
    box.className = "upload-progress";
    var bar = document.createElement("progress");
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute("aria-label", "Upload progress");
    var text = document.createElement("span");
    text.className = "upload-progress__text";
    text.setAttribute("aria-live", "polite");
    box.append(bar, text);
    var actions = form.querySelector(".actions");
    form.insertBefore(box, actions);
    return box;
  }

  function replace(html) {
    var current = document.getElementById("deployment-create");
    var holder = document.createElement("div");
    holder.innerHTML = html;
    var fresh = holder.querySelector("#deployment-create");
    if (!current || !fresh) return;
    current.replaceWith(fresh);
    bind(fresh.querySelector("form[data-upload-progress]"));
    var invalid = fresh.querySelector("[aria-invalid=\"true\"]");
    if (invalid) invalid.focus();
  }

  document.addEventListener("DOMContentLoaded", function () {
    bind(document.querySelector("form[data-upload-progress]"));
  });
})();
