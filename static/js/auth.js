// The login flow page: the expiry countdown, the polling fallback that stands down while the live
// stream is connected, a step already shown left as it is, and focus on the first input of each new step.
// No values are read or kept.
(function () {
  "use strict";

  function streamIsLive() {
    return document.querySelector('#auth-flow-live-status [data-state="live"]') !== null;
  }

  // The step polls every 2 s; skip the request while the events stream delivers the steps itself.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    if (elt && elt.hasAttribute && elt.hasAttribute("data-auth-poll") && streamIsLive()) {
      event.preventDefault();
    }
  });

  function format(seconds) {
    var m = Math.floor(seconds / 60);
    var s = seconds % 60;
    return m + ":" + (s < 10 ? "0" : "") + s;
  }

  function startCountdown(elt) {
    var total = parseInt(elt.getAttribute("data-countdown-seconds"), 10);
    if (isNaN(total)) { return; }
    var started = Date.now();
    var original = elt.textContent;
    function tick() {
      if (!document.body.contains(elt)) { return; }
      if (document.querySelector("#auth-flow-step[data-ended]")) {
        elt.textContent = "Flow ended";
        return;
      }
      var left = Math.max(total - Math.floor((Date.now() - started) / 1000), 0);
      elt.textContent = left > 0 ? "Expires in " + format(left) : "Expired";
      elt.setAttribute("title", original.trim());
      if (left > 0) { window.setTimeout(tick, 1000); }
    }
    tick();
  }

  function focusFirstInput(root) {
    var input = root && root.querySelector && root.querySelector("#auth-flow-step input:not([type=hidden]):not([disabled])");
    if (input && !root.closest("fieldset[disabled]")) { input.focus(); }
  }

  // The step the page already shows (drawn with the page, or brought by the answer to the operator's
  // submit before the stream brought it) is not swapped in again when the stream brings it: that would
  // empty the fields the operator is filling. A step is known by its pause key (status, step, interaction,
  // site error), in the form's hidden "pause" field.
  function pauseKey(root) {
    var input = root && root.querySelector('#auth-flow-step input[name="pause"]');
    return input ? input.value : "";
  }
  document.addEventListener("htmx:sseBeforeMessage", function (event) {
    var sink = event.target;
    if (!sink || sink.id !== "auth-flow-sink" || !event.detail || typeof event.detail.data !== "string") return;
    var shown = pauseKey(sink);
    if (!shown) return;
    var fresh = new DOMParser().parseFromString(event.detail.data, "text/html");
    if (pauseKey(fresh) === shown) event.preventDefault();
  });

  document.addEventListener("htmx:sseMessage", function (event) {
    focusFirstInput(document.getElementById("auth-flow-sink"));
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail && event.detail.target && event.detail.target.id === "auth-flow-step") {
      focusFirstInput(document.getElementById("auth-flow-sink"));
    }
  });

  function init() {
    document.querySelectorAll("[data-countdown-seconds]").forEach(startCountdown);
    focusFirstInput(document.getElementById("auth-flow-sink"));
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
