// Layout choices kept in this browser, applied before the first paint (this file loads without defer).
(function () {
  "use strict";
  try {
    if (localStorage.getItem("console.sidebar") === "collapsed") {
      document.documentElement.classList.add("sidebar-collapsed");
    }
  } catch (e) {
    // Storage disabled: the default layout.
  }
})();
