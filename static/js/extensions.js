// Extension uploads with a real progress bar: the form is sent with XMLHttpRequest so that
// upload progress events can drive the <progress> element. Without JavaScript the form posts normally.
// The answer is the upload form partial (swapped in place, with htmx's out-of-band flash); on success the
// server also sends the "extensions-changed" event, which refreshes the table.
(function () {
  "use strict";

  function formatBytes(bytes) {
    if (bytes < 1024) return bytes + " B";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
    return (bytes / (1024 * 1024)).toFixed(1) + " MB";
  }

  function fireTriggers(header) {
    if (!header || !window.htmx) return;
    var names = [];
    try {
      names = Object.keys(JSON.parse(header));
    } catch (e) {
      names = header.split(",");
    }
    names.forEach(function (name) {
      window.htmx.trigger(document.body, name.trim());
    });
  }

  function swap(selector, html, style) {
    var target = document.querySelector(selector);
    if (!target) return;
    if (window.htmx && window.htmx.swap) {
      window.htmx.swap(target, html, { swapStyle: style });
    } else if (style === "innerHTML") {
      target.innerHTML = html;
    } else {
      target.outerHTML = html;
    }
  }

  function upload(form) {
    var box = form.querySelector("[data-upload-progress]");
    var bar = box.querySelector("progress");
    var status = box.querySelector("[aria-live]");
    var cancel = box.querySelector("[data-upload-cancel]");
    var submit = form.querySelector("button[type=submit]");
    var input = form.querySelector("input[type=file]");
    var file = input && input.files[0];
    var maxBytes = parseInt(form.dataset.maxBytes, 10);

    box.hidden = false;
    if (!file) {
      bar.hidden = true;
      status.textContent = "Choose a .zip file first.";
      return;
    }
    if (maxBytes && file.size > maxBytes) {
      bar.hidden = true;
      status.textContent =
        "This file is " + formatBytes(file.size) + "; the limit is " + formatBytes(maxBytes) + ".";
      return;
    }

    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("HX-Request", "true");
    xhr.setRequestHeader("HX-Target", form.dataset.upload);
    xhr.setRequestHeader("HX-Current-URL", window.location.href);
    var token = form.querySelector("input[name=csrfmiddlewaretoken]");
    if (token) xhr.setRequestHeader("X-CSRFToken", token.value);

    bar.hidden = false;
    bar.value = 0;
    status.textContent = "Starting upload…";
    submit.disabled = true;
    cancel.hidden = false;
    form.setAttribute("aria-busy", "true");

    xhr.upload.addEventListener("progress", function (event) {
      if (!event.lengthComputable) return;
      var percent = Math.floor((event.loaded / event.total) * 100);
      bar.value = percent;
      status.textContent =
        "Uploading… " + percent + "% (" + formatBytes(event.loaded) + " of " + formatBytes(event.total) + ")";
    });
    xhr.upload.addEventListener("load", function () {
      bar.value = 100;
      status.textContent = "Uploaded; the service is checking the archive…";
    });

    function done() {
      submit.disabled = false;
      cancel.hidden = true;
      form.removeAttribute("aria-busy");
    }

    xhr.addEventListener("load", function () {
      done();
      var retarget = xhr.getResponseHeader("HX-Retarget");
      if (xhr.status >= 200 && xhr.status < 300) {
        if (retarget) {
          swap(retarget, xhr.responseText, xhr.getResponseHeader("HX-Reswap") || "innerHTML");
          status.textContent = "The upload failed: see the message above.";
          return;
        }
        swap("#" + form.dataset.upload, xhr.responseText, "outerHTML");
        fireTriggers(xhr.getResponseHeader("HX-Trigger"));
      } else if (xhr.status === 403) {
        status.textContent = "Only admins can upload extensions.";
      } else if (xhr.status === 413) {
        status.textContent = "The server refused the file as too large.";
      } else {
        status.textContent = "The upload failed (HTTP " + xhr.status + "). Try again.";
      }
    });
    xhr.addEventListener("error", function () {
      done();
      status.textContent = "The connection broke during the upload. Try again.";
    });
    xhr.addEventListener("abort", function () {
      done();
      bar.value = 0;
      status.textContent = "Upload cancelled.";
    });
    cancel.onclick = function () {
      xhr.abort();
    };

    xhr.send(new FormData(form));
  }

  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-upload]");
    if (!form || !window.FormData || !window.XMLHttpRequest) return;
    event.preventDefault();
    upload(form);
  });
})();
