// The files pane (templates/browsers/panes/files.html): uploads with a real progress bar.
//
// A form marked data-files-upload is sent with XMLHttpRequest so that upload progress drives its
// <progress>. The answer is the files pane (the listing, with the form's errors if any): it replaces
// #files-pane, and htmx's out-of-band flash rides along. Without JavaScript the form posts normally.
(function () {
  "use strict";

  function formatBytes(bytes) {
    if (bytes < 1024) return bytes + " B";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
    return (bytes / (1024 * 1024)).toFixed(1) + " MB";
  }

  function replacePane(html) {
    var pane = document.getElementById("files-pane");
    if (!pane) return;
    if (window.htmx && window.htmx.swap) {
      window.htmx.swap(pane, html, { swapStyle: "outerHTML" });
    } else {
      pane.outerHTML = html;
    }
  }

  function upload(form) {
    var box = form.querySelector("[data-upload-progress]");
    var bar = box.querySelector("[data-upload-bar]");
    var status = box.querySelector("[data-upload-status]");
    var cancel = box.querySelector("[data-upload-cancel]");
    var submit = form.querySelector("button[type=submit]");
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

    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("HX-Request", "true");
    xhr.setRequestHeader("HX-Target", "files-pane");
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
      status.textContent = "Uploading… " + percent + "% (" + formatBytes(event.loaded) + " of " + formatBytes(event.total) + ")";
    });
    xhr.upload.addEventListener("load", function () {
      bar.value = 100;
      status.textContent = "Uploaded; the session is unpacking it…";
    });

    function done() {
      submit.disabled = false;
      cancel.hidden = true;
      form.removeAttribute("aria-busy");
    }

    xhr.addEventListener("load", function () {
      done();
      if (xhr.status >= 200 && xhr.status < 300) {
        var retarget = xhr.getResponseHeader("HX-Retarget");
        if (retarget) {
          var target = document.querySelector(retarget);
          if (target && window.htmx) window.htmx.swap(target, xhr.responseText, { swapStyle: xhr.getResponseHeader("HX-Reswap") || "innerHTML" });
          status.textContent = "The upload failed: see the message above.";
          return;
        }
        replacePane(xhr.responseText);
      } else if (xhr.status === 403) {
        status.textContent = "Uploading needs the operator role.";
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
    cancel.onclick = function () { xhr.abort(); };

    xhr.send(new FormData(form));
  }

  // Capture phase: runs before htmx's own submit handling of the form's hx-post.
  document.addEventListener(
    "submit",
    function (event) {
      var form = event.target.closest && event.target.closest("form[data-files-upload]");
      if (!form || !window.FormData || !window.XMLHttpRequest) return;
      event.preventDefault();
      event.stopPropagation();
      upload(form);
    },
    true
  );
})();
