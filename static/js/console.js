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

  // Select the whole invite link on focus so it is one keystroke to copy.
  document.addEventListener("focusin", function (event) {
    if (event.target.matches("input[readonly]")) event.target.select();
  });
})();
