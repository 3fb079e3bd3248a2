// Uploads with a real progress bar, shared by extensions.js, files.js and deployments.js (load this first).
//
// window.consoleUpload(form, options) sends the form with XMLHttpRequest, so that upload progress events
// can drive a <progress> element, and handles the answer the way htmx would. It returns the request.
//
//   options.target    the id of the element the answer is for: sent as HX-Target, and by default the
//                     answer replaces it (outerHTML)
//   options.bar       the <progress max="100">: shown, reset to 0, then follows the upload
//   options.status    the element whose text says how it goes (best aria-live)
//   options.submit    disabled while the upload runs (default: the form's submit button)
//   options.cancel    optional: shown while the upload runs; a click aborts it
//   options.uploaded  the text once all bytes are sent and the server works on them
//   options.describe  optional function (percent, loaded, total) -> the text while uploading
//   options.onDone    optional function (html, xhr) for a 2xx answer (default: replace #target with it)
//   options.messages  optional texts by HTTP status ({403: "…", 413: "…"}) and for a broken
//                     connection ({error: "…"}); other statuses get a generic "HTTP <status>" text
//
// The request carries HX-Request, HX-Target, HX-Current-URL and X-CSRFToken (the form's
// csrfmiddlewaretoken, else the one in the body's hx-headers), so the server answers as to htmx:
// HX-Redirect / HX-Location navigate there; a 2xx answer with HX-Retarget (a service error for the page
// banner) is swapped there (HX-Reswap, default innerHTML); any other 2xx answer goes to onDone and then
// its HX-Trigger events are fired on the body.
//
// window.consoleUpload.formatBytes(n) and window.consoleUpload.swap(selector, html, style) are the helpers.
(function () {
  "use strict";

  function formatBytes(bytes) {
    if (bytes < 1024) return bytes + " B";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
    return (bytes / (1024 * 1024)).toFixed(1) + " MB";
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

  function csrfToken(form) {
    var input = form.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (e) {
      return "";
    }
  }

  // Where HX-Redirect or HX-Location sends the page ("" when neither is there).
  function location(xhr) {
    var redirect = xhr.getResponseHeader("HX-Redirect");
    if (redirect) return redirect;
    var where = xhr.getResponseHeader("HX-Location");
    if (!where) return "";
    try {
      return JSON.parse(where).path || "";
    } catch (e) {
      return where;
    }
  }

  function describeDefault(percent, loaded, total) {
    return "Uploading… " + percent + "% (" + formatBytes(loaded) + " of " + formatBytes(total) + ")";
  }

  function consoleUpload(form, options) {
    var bar = options.bar;
    var status = options.status;
    var submit = options.submit || form.querySelector("button[type=submit]");
    var cancel = options.cancel;
    var messages = options.messages || {};
    var describe = options.describe || describeDefault;
    var onDone =
      options.onDone ||
      function (html) {
        swap("#" + options.target, html, "outerHTML");
      };

    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("HX-Request", "true");
    xhr.setRequestHeader("HX-Target", options.target);
    xhr.setRequestHeader("HX-Current-URL", window.location.href);
    var token = csrfToken(form);
    if (token) xhr.setRequestHeader("X-CSRFToken", token);

    bar.hidden = false;
    bar.value = 0;
    status.textContent = "Starting upload…";
    if (submit) submit.disabled = true;
    if (cancel) cancel.hidden = false;
    form.setAttribute("aria-busy", "true");

    function finish() {
      if (submit) submit.disabled = false;
      if (cancel) cancel.hidden = true;
      form.removeAttribute("aria-busy");
    }

    xhr.upload.addEventListener("progress", function (event) {
      if (!event.lengthComputable) return;
      var percent = Math.floor((event.loaded / event.total) * 100);
      bar.value = percent;
      status.textContent = describe(percent, event.loaded, event.total);
    });
    xhr.upload.addEventListener("load", function () {
      bar.value = 100;
      status.textContent = options.uploaded;
    });

    xhr.addEventListener("load", function () {
      var next = location(xhr);
      if (next) {
        window.location.assign(next); // the button stays disabled while the page goes
        return;
      }
      finish();
      if (xhr.status >= 200 && xhr.status < 300) {
        var retarget = xhr.getResponseHeader("HX-Retarget");
        if (retarget) {
          swap(retarget, xhr.responseText, xhr.getResponseHeader("HX-Reswap") || "innerHTML");
          status.textContent = "The upload failed: see the message above.";
          return;
        }
        onDone(xhr.responseText, xhr);
        fireTriggers(xhr.getResponseHeader("HX-Trigger"));
      } else {
        status.textContent = messages[xhr.status] || "The upload failed (HTTP " + xhr.status + "). Try again.";
      }
    });
    xhr.addEventListener("error", function () {
      finish();
      status.textContent = messages.error || "The connection broke during the upload. Try again.";
    });
    xhr.addEventListener("abort", function () {
      finish();
      bar.value = 0;
      status.textContent = "Upload cancelled.";
    });
    if (cancel) {
      cancel.onclick = function () {
        xhr.abort();
      };
    }

    xhr.send(new FormData(form));
    return xhr;
  }

  consoleUpload.formatBytes = formatBytes;
  consoleUpload.swap = swap;
  window.consoleUpload = consoleUpload;
})();
