// Extension uploads with a real progress bar (the XMLHttpRequest part is window.consoleUpload, upload.js).
// Without JavaScript the form posts normally.
// The answer is the upload form partial with its errors (swapped in place), or, once the service kept the
// extension, a redirect to the list (HX-Redirect).
(function () {
  "use strict";

  function upload(form) {
    var formatBytes = window.consoleUpload.formatBytes;
    var box = form.querySelector("[data-upload-progress]");
    var bar = box.querySelector("progress");
    var status = box.querySelector("[aria-live]");
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

    window.consoleUpload(form, {
      target: form.dataset.upload,
      bar: bar,
      status: status,
      cancel: box.querySelector("[data-upload-cancel]"),
      uploaded: "Uploaded; the service is checking the archive…",
      messages: {
        403: "Only admins can upload extensions.",
        413: "The server refused the file as too large.",
      },
    });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-upload]");
    if (!form || !window.FormData || !window.XMLHttpRequest || !window.consoleUpload) return;
    event.preventDefault();
    upload(form);
  });
})();
