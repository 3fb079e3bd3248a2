// Small behaviours for the console. No inline scripts anywhere: the CSP forbids them.
// CSRF for htmx comes from hx-headers on <body>; nothing to do here for it.
(function () {
  "use strict";

  // Close the org switcher (a <details> dropdown) when clicking elsewhere or pressing Escape.
  document.addEventListener("click", function (event) {
    document.querySelectorAll("details.switcher[open]").forEach(function (el) {
      if (!el.contains(event.target)) el.removeAttribute("open");
    });
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    document.querySelectorAll("details.switcher[open]").forEach(function (el) {
      el.removeAttribute("open");
    });
  });

  // Countdowns: <time data-countdown="2025-01-01T00:00:00Z"> shows the time left, updated each second.
  function tick() {
    document.querySelectorAll("[data-countdown]").forEach(function (el) {
      var left = Math.max(0, Math.round((Date.parse(el.dataset.countdown) - Date.now()) / 1000));
      var m = Math.floor(left / 60);
      var s = left % 60;
      el.textContent = m + ":" + (s < 10 ? "0" : "") + s;
    });
  }
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);

  // Live panes: the chip says "Stalled" while the relay's keepalive events say its upstream went silent, or
  // when nothing at all (frame or keepalive) came from the relay for twice its keepalive interval; it says
  // "Live" again by itself when frames or live keepalives arrive. Only a chip the relay set to "Live" is
  // touched: connecting, reconnecting and ended chips are the relay's to change.
  function indicatorOf(element) {
    var root = element.closest("[sse-connect]");
    return root && root.querySelector(".live-indicator[data-keepalive-seconds]");
  }
  function setChip(chip, state, label) {
    chip.className = "live-status live-status--" + state;
    chip.dataset.state = state;
    chip.textContent = label;
  }
  function checkLiveness(indicator) {
    var chip = indicator.querySelector(".live-status");
    if (!chip || (chip.dataset.state !== "live" && chip.dataset.state !== "stalled")) return;
    var limit = 2000 * parseFloat(indicator.dataset.keepaliveSeconds || "15");
    var heardAt = indicator.heardAt || 0;
    var stalled = indicator.upstreamStalled || (heardAt > 0 && Date.now() - heardAt > limit);
    if (stalled && chip.dataset.state === "live") setChip(chip, "stalled", "Stalled");
    else if (!stalled && chip.dataset.state === "stalled") setChip(chip, "live", "Live");
  }
  document.addEventListener("htmx:sseOpen", function (event) {
    var indicator = event.target.querySelector(".live-indicator[data-keepalive-seconds]");
    if (indicator) indicator.heardAt = Date.now();
  });
  document.addEventListener("htmx:sseMessage", function (event) {
    var indicator = indicatorOf(event.target);
    if (!indicator) return;
    indicator.heardAt = Date.now();
    indicator.upstreamStalled = event.detail.type === "keepalive" && event.detail.data === "stalled";
    checkLiveness(indicator);
  });
  setInterval(function () {
    document.querySelectorAll(".live-indicator[data-keepalive-seconds]").forEach(checkLiveness);
  }, 250);

  // Select the whole invite link on focus so it is one keystroke to copy.
  document.addEventListener("focusin", function (event) {
    if (event.target.matches("input[readonly]")) event.target.select();
  });
})();
