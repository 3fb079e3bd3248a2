// Layout choices kept in this browser, applied before the first paint (this file loads without defer): a
// collapsed sidebar, and the theme (the user menu's system, light or dark; "system" follows the system).
(function () {
  "use strict";
  var root = document.documentElement;
  var stored = function (key) {
    try { return localStorage.getItem(key); } catch (e) { return null; } // storage disabled: the defaults
  };
  if (stored("console.sidebar") === "collapsed") root.classList.add("sidebar-collapsed");

  var system = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  function choice() {
    var value = stored("console.theme");
    return value === "light" || value === "dark" ? value : "system";
  }
  function apply() {
    var value = choice();
    if (value === "system") value = system && system.matches ? "dark" : "light";
    root.dataset.theme = value;
  }
  apply();
  if (system && system.addEventListener) system.addEventListener("change", apply);
  // The user menu's radios (console.js marks the current one and stores the new one).
  window.consoleTheme = {
    choice: choice,
    set: function (value) {
      try {
        if (value === "system") localStorage.removeItem("console.theme");
        else localStorage.setItem("console.theme", value);
      } catch (e) { /* not remembered, applied to this page only */ }
      if (value === "light" || value === "dark") root.dataset.theme = value; else apply();
    },
  };
})();
