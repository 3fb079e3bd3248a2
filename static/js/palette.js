// The command palette: Ctrl+K (Cmd+K) or the search button opens it; typing asks /o/<org>/search/ for the
// results partial (htmx, on the form in base.html); arrows move, Enter opens, Escape closes.
//
// Enter acts on the answer to what the input says: results drawn for an older query (the answer to the new one
// not in yet, or a late answer to an old one) are never chosen from. Enter then asks again at once and opens
// the first result when that answer arrives, unless the query changes or the palette closes first.
//
// Besides what the server finds (actions, pages, records), two kinds of action run here, in the page:
// "Toggle theme", and the page's own actions: any element of the page marked
// data-palette-action="<label>" (e.g. a session page's "Take control" button, drawn only for those who may
// use it) is offered under that label, and choosing it clicks the element, so the page's own checks apply.
(function () {
  "use strict";

  var dialog = document.getElementById("palette");
  if (!dialog) return;
  var input = document.getElementById("palette-input");
  var form = input.form;
  var pendingEnter = false;
  var picked = null; // the option the arrows moved to since these results came: chosen as seen, even if older

  function results() {
    return document.getElementById("search-results");
  }
  // The query as the server reads it (trimmed, cut to its maximum in characters).
  function query() {
    var max = Number(results().dataset.maxQuery) || Infinity;
    return Array.from(input.value.trim()).slice(0, max).join("");
  }
  function answered() {
    return results().dataset.query === query();
  }

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

  // Actions run in the page -----------------------------------------------------------------------------
  function clientActions() {
    var found = [];
    if (window.consoleTheme) {
      found.push({ label: "Toggle theme", detail: "light or dark", words: "dark light mode colour color", run: function () {
        window.consoleTheme.set(document.documentElement.dataset.theme === "dark" ? "light" : "dark");
      } });
    }
    document.querySelectorAll("[data-palette-action]").forEach(function (el) {
      if (dialog.contains(el) || el.disabled || el.closest("[hidden]")) return;
      found.push({ label: el.dataset.paletteAction, detail: "on this page", words: "", run: function () { el.click(); } });
    });
    return found;
  }
  var running = [];
  function addClientActions(results) {
    var needle = (results.dataset.query || "").toLowerCase();
    running = clientActions().filter(function (a) {
      return !needle || (a.label + " " + a.words).toLowerCase().indexOf(needle) >= 0;
    });
    if (!running.length) return;
    var empty = results.querySelector(".empty");
    if (empty) empty.remove();
    running.slice().reverse().forEach(function (action, index) {
      var option = document.createElement("a");
      option.className = "search-hit";
      option.setAttribute("role", "option");
      option.id = "palette-action-" + (running.length - 1 - index);
      option.href = "#";
      option.dataset.clientAction = String(running.length - 1 - index);
      option.innerHTML = '<span class="chip chip-muted search-hit__kind">Action</span><span class="search-hit__title ellipsis"></span><code class="search-hit__detail ellipsis muted"></code>';
      option.querySelector(".search-hit__title").textContent = action.label;
      option.querySelector(".search-hit__detail").textContent = action.detail;
      results.insertBefore(option, results.firstChild);
    });
    select(options()[0]);
  }
  function runClientAction(option) {
    var action = running[Number(option.dataset.clientAction)];
    dialog.close();
    if (action) action.run();
  }
  function choose(option) {
    if (option.dataset.clientAction !== undefined) runClientAction(option);
    else window.location.assign(option.href);
  }

  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "k") {
      event.preventDefault();
      open();
    }
  });
  document.addEventListener("click", function (event) {
    var client = event.target.closest && event.target.closest("#palette [data-client-action]");
    if (client) {
      event.preventDefault();
      runClientAction(client);
      return;
    }
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
      picked = all[(index + step + all.length) % all.length];
      select(picked);
    } else if (event.key === "Enter") {
      event.preventDefault(); // the form's own submit would only search again, and lose the Enter
      if (!answered() && !(picked && picked === selected())) {
        pendingEnter = true;
        results().setAttribute("aria-busy", "true");
        htmx.trigger(form, "submit"); // now, not after the typing delay
        return;
      }
      var option = selected();
      if (option) choose(option);
    }
  });
  function forgetEnter() {
    pendingEnter = false;
    results().removeAttribute("aria-busy");
  }
  input.addEventListener("input", function () {
    forgetEnter(); // an Enter given for what the input said before
    picked = null;
  });
  dialog.addEventListener("close", forgetEnter);

  // New results (on the swap, not the settle: no moment shows them without this page's actions): the first
  // one is selected (the server marks it), the input points at it; a waiting Enter opens it if they answer.
  document.addEventListener("htmx:afterSwap", function (event) {
    var shown = event.target;
    if (shown.id !== "search-results" || !dialog.contains(shown)) return;
    picked = null;
    select(selected());
    addClientActions(shown);
    if (pendingEnter && answered()) {
      pendingEnter = false;
      var option = selected();
      if (option) choose(option);
    } else if (pendingEnter) {
      shown.setAttribute("aria-busy", "true");
    }
  });
})();
