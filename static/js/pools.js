// Live pool counts: every element with data-poll="<seconds>" receives a "poll" event at that interval,
// only while the tab is visible (htmx listens with hx-trigger="poll"). Coming back to the tab refreshes
// at once. This replaces htmx's "every 3s [visible]" filter, which needs eval and the CSP forbids it.
(function () {
  "use strict";

  var last = {};

  function tick(force) {
    if (document.visibilityState !== "visible") return;
    var now = Date.now();
    document.querySelectorAll("[data-poll]").forEach(function (el) {
      var every = (parseFloat(el.dataset.poll) || 3) * 1000;
      var key = el.id || "poll";
      if (!last[key]) {
        // A part that has just loaded (console/web/deferred.py) is fresh: its first poll is one interval on.
        last[key] = now;
        return;
      }
      if (force || now - last[key] >= every - 100) {
        last[key] = now;
        el.dispatchEvent(new CustomEvent("poll"));
      }
    });
  }

  // The first tick marks the start; polls follow every data-poll seconds after it.
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-poll]").forEach(function (el) {
      last[el.id || "poll"] = Date.now();
    });
  });
  setInterval(function () { tick(false); }, 500);
  document.addEventListener("visibilitychange", function () { tick(true); });

  // A pool page's "Acquired session …" banner: once the lease list has shown that session and then no
  // longer does (released here or elsewhere, or ended), the banner gives way to a short note.
  function checkAcquired() {
    var leases = document.getElementById("pool-leases");
    if (!leases || leases.classList.contains("deferred-failed") || leases.classList.contains("deferred-loading")) return;
    document.querySelectorAll("[data-acquired-session]").forEach(function (banner) {
      var leased = document.getElementById("lease-row-" + banner.dataset.acquiredSession);
      if (leased) {
        banner.dataset.seen = "true";
      } else if (banner.dataset.seen && !banner.hidden) {
        banner.hidden = true;
        var gone = banner.parentNode.querySelector("[data-acquired-gone]");
        if (gone) gone.hidden = false;
        // The release form was filled in for that browser: nothing to release now.
        banner.parentNode.querySelectorAll("input[name=session_id]").forEach(function (input) {
          if (input.value === banner.dataset.acquiredSession) input.value = "";
        });
      }
    });
  }
  document.addEventListener("live:merged", checkAcquired);
  document.addEventListener("htmx:afterSettle", checkAcquired);
})();
