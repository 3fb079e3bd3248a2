// The computer pane (templates/browsers/panes/computer.html).
//
// - "Refresh the screenshot" loads a new screenshot (a new URL each time, so nothing stale is shown);
//   after every action the pane is re-rendered with a new one anyway.
// - The batch builder: "Add a row" clones the last row (numbered names action-<n>-<field>), "Remove"
//   drops a row, and each row shows only the inputs its action uses. Without JavaScript, "Add a row"
//   posts the builder back with one more row, and every input is shown.
(function () {
  "use strict";

  var USES = {
    "": [],
    move_mouse: ["x", "y"],
    click_mouse: ["x", "y", "button"],
    type_text: ["text"],
    press_key: ["keys"],
    scroll: ["x", "y", "delta_y"],
    sleep: ["duration_ms"],
  };

  function shape(row) {
    var type = row.querySelector("[data-field=type]").value;
    var used = USES[type] || [];
    row.querySelectorAll("[data-field]").forEach(function (input) {
      var name = input.dataset.field;
      if (name === "type") return;
      input.hidden = used.indexOf(name) < 0;
    });
  }

  function renumber(tbody) {
    tbody.querySelectorAll("[data-batch-row]").forEach(function (row, index) {
      row.querySelector("[data-row-number]").textContent = String(index + 1);
      row.querySelectorAll("[name^=action-]").forEach(function (input) {
        input.name = input.name.replace(/^action-\d+-/, "action-" + index + "-");
        var label = input.getAttribute("aria-label");
        if (label) input.setAttribute("aria-label", label.replace(/([Aa]ction )\d+$/, "$1" + (index + 1)));
      });
    });
  }

  function setup(root) {
    root.querySelectorAll("[data-batch-row]").forEach(shape);
  }

  document.addEventListener("change", function (event) {
    if (event.target.matches("[data-batch-row] [data-field=type]")) shape(event.target.closest("[data-batch-row]"));
  });

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (target.matches("[data-refresh-screen]")) {
      var img = target.closest("[data-computer]").querySelector("[data-screen]");
      if (img) img.src = img.src.replace(/([?&]t=)[^&]*/, "$1" + Date.now());
      return;
    }
    var form = target.closest && target.closest("[data-batch]");
    if (!form) return;
    var tbody = form.querySelector("[data-batch-rows]");
    if (target.matches("[data-add-row]")) {
      event.preventDefault();
      var rows = tbody.querySelectorAll("[data-batch-row]");
      if (rows.length >= (parseInt(form.dataset.maxRows, 10) || 20)) return;
      var copy = rows[rows.length - 1].cloneNode(true);
      copy.classList.remove("batch-row--error");
      copy.querySelectorAll(".row-errors").forEach(function (el) { el.remove(); });
      copy.querySelectorAll("input").forEach(function (input) { input.value = ""; });
      copy.querySelector("[data-field=type]").value = "";
      tbody.appendChild(copy);
      renumber(tbody);
      shape(copy);
      copy.querySelector("[data-field=type]").focus();
    } else if (target.matches("[data-remove-row]")) {
      event.preventDefault();
      if (tbody.querySelectorAll("[data-batch-row]").length > 1) {
        target.closest("[data-batch-row]").remove();
        renumber(tbody);
      } else {
        var only = target.closest("[data-batch-row]");
        only.querySelectorAll("input").forEach(function (input) { input.value = ""; });
        only.querySelector("[data-field=type]").value = "";
        shape(only);
      }
    }
  });

  document.addEventListener("DOMContentLoaded", function () { setup(document); });
  document.addEventListener("htmx:afterSwap", function (event) { setup(event.target.parentNode || document); });
  document.addEventListener("htmx:load", function (event) { setup(event.target); });
})();
