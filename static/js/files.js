// The files pane (templates/browsers/panes/files.html): uploads with a real progress bar.
//
// A form marked data-files-upload is sent with XMLHttpRequest (window.consoleUpload, upload.js) so that
// upload progress drives its <progress>. The answer is the files pane (the listing, with the form's errors
// if any): it replaces #files-pane, and htmx's out-of-band flash rides along. Without JavaScript the form
// posts normally.
(function () {
  "use strict";

  function upload(form) {
    var formatBytes = window.consoleUpload.formatBytes;
    var box = form.querySelector("[data-upload-progress]");
    var bar = box.querySelector("[data-upload-bar]");
    var status = box.querySelector("[data-upload-status]");
    var input = form.querySelector("input[type=file]");
    var chosen = input ? Array.prototype.slice.call(input.files) : [];
    var maxBytes = parseInt(form.dataset.maxBytes, 10);

    box.hidden = false;
    if (!chosen.length) {
      bar.hidden = true;
      status.textContent = "Choose a file first.";
      return;
    }
    var tooBig = chosen.filter(function (f) { return maxBytes && f.size > maxBytes; })[0];
    if (tooBig) {
      bar.hidden = true;
      status.textContent = tooBig.name + " is " + formatBytes(tooBig.size) + "; the limit is " + formatBytes(maxBytes) + ".";
      return;
    }

    window.consoleUpload(form, {
      target: "files-pane",
      bar: bar,
      status: status,
      cancel: box.querySelector("[data-upload-cancel]"),
      uploaded: "Uploaded; the session is unpacking it…",
      messages: {
        403: "Uploading needs the operator role.",
        413: "The server refused the file as too large.",
      },
    });
  }

  // Capture phase: runs before htmx's own submit handling of the form's hx-post.
  document.addEventListener(
    "submit",
    function (event) {
      var form = event.target.closest && event.target.closest("form[data-files-upload]");
      if (!form || !window.FormData || !window.XMLHttpRequest || !window.consoleUpload) return;
      event.preventDefault();
      event.stopPropagation();
      upload(form);
    },
    true
  );
})();
