// New deployment: send the form with XMLHttpRequest so the page can show upload progress. The server
// answers like an htmx request: HX-Redirect on success, or the form's partial with errors next to fields.
// Without JavaScript the form posts normally.
(function () {
  "use strict";

  function bind(form) {
    if (!form || form.dataset.bound) return;
    form.dataset.bound = "1";
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      send(form);
    });
  }

  function send(form) {
    var box = progressBox(form);
    var bar = box.querySelector("progress");
    var text = box.querySelector(".upload-progress__text");
    var button = form.querySelector("button[type=submit]");
    var xhr = new XMLHttpRequest();
    button.disabled = true;
    text.textContent = "Starting upload…";

    xhr.upload.addEventListener("progress", function (event) {
      if (!event.lengthComputable) return;
      var percent = Math.round((event.loaded / event.total) * 100);
      bar.value = percent;
      text.textContent = "Uploading… " + percent + "% (" + Math.round(event.loaded / 1024) + " of " +
        Math.round(event.total / 1024) + " KiB)";
    });
    xhr.upload.addEventListener("load", function () {
      bar.value = 100;
      text.textContent = "Uploaded; the service is checking the archive…";
    });
    xhr.addEventListener("load", function () {
      var redirect = xhr.getResponseHeader("HX-Redirect");
      if (redirect) {
        window.location.assign(redirect);
        return;
      }
      if (xhr.status === 200) {
        replace(xhr.responseText);
        return;
      }
      fail("The upload failed (HTTP " + xhr.status + "). Try again.");
    });
    xhr.addEventListener("error", function () {
      fail("The upload was interrupted: check the connection and try again.");
    });

    function fail(message) {
      button.disabled = false;
      text.textContent = message;
    }

    xhr.open("POST", form.action);
    xhr.setRequestHeader("HX-Request", "true");
    xhr.setRequestHeader("HX-Target", "deployment-create");
    xhr.send(new FormData(form));
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
    var invalid = fresh.querySelector(".has-error input, .has-error textarea, .has-error select");
    if (invalid) invalid.focus();
  }

  document.addEventListener("DOMContentLoaded", function () {
    bind(document.querySelector("form[data-upload-progress]"));
  });
})();
