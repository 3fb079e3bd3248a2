// The command palette: Ctrl+K (Cmd+K) or the search button opens it; typing asks /o/<org>/search/ for the
// results partial (htmx, on the form in base.html); arrows move, Enter opens, Escape closes.
(function () {
  "use strict";

  var dialog = document.getElementById("palette");
  if (!dialog) return;
  var input = document.getElementById("palette-input");
  var form = input.form;

  function options() {
    return Array.prototype.slice.call(dialog.querySelectorAll("#search-results [role='option']"));
  }
  function selected() {
    return dialog.querySelector("#search-results [role='option'][aria-selected='true']");
  }
  function select(option) {
    options().forEach(function (o) { o.setAttribute("aria-selected", String(o === option)); });
    if (option) {
      input.setAttribute("aria-activedescendant", option.id);
      option.scrollIntoView({ block: "nearest" });
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  }
  function open() {
    if (dialog.open) {
      input.select();
      return;
    }
    dialog.showModal();
    input.select();
    if (!options().length) htmx.trigger(form, "submit");
  }

  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "k") {
      event.preventDefault();
      open();
    }
  });
  document.addEventListener("click", function (event) {
    if (event.target.closest("#palette-button")) {
      event.preventDefault();
      open();
    } else if (event.target === dialog) {
      dialog.close(); // a click on the backdrop
    }
  });

  input.addEventListener("keydown", function (event) {
    var all = options();
    var index = all.indexOf(selected());
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (!all.length) return;
      var step = event.key === "ArrowDown" ? 1 : -1;
      select(all[(index + step + all.length) % all.length]);
    } else if (event.key === "Enter") {
      var option = selected();
      if (option) {
        event.preventDefault();
        window.location.assign(option.href);
      }
    }
  });

  // New results: the first one is selected (the server marks it), the input points at it.
  document.addEventListener("htmx:load", function (event) {
    if (event.target.id === "search-results" && dialog.contains(event.target)) select(selected());
  });
})();
