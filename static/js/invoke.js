// Invocation page: when the live summary reports a finished run, remove the controls that only make sense
// while it runs, and tell the browsers panel to refresh (hx-trigger="invocation-finished from:body").
(function () {
  "use strict";

  function finished() {
    var summary = document.getElementById("invocation-summary");
    return summary && summary.dataset.terminal === "true";
  }

  var announced = false;
  document.addEventListener("htmx:afterSwap", function () {
    if (!finished() || announced) return;
    announced = true;
    document.querySelectorAll("[data-while-active]").forEach(function (el) {
      el.remove();
    });
    if (window.htmx) window.htmx.trigger(document.body, "invocation-finished");
  });
})();
