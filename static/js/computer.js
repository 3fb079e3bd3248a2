// The computer pane (templates/browsers/panes/computer.html).
//
// - "Refresh the screenshot" loads a new screenshot (a new URL each time, so nothing stale is shown);
//   after every action the pane is re-rendered with a new one, and once more when the page had time to
//   react ("screen-changed": the pane's own actions, and clicks and keys from the live screen).
// - A click on the screenshot fills x and y of the actions (in the browser's pixels) with that point.
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

  var SETTLE_MS = 700; // a click's navigation or repaint, before the screenshot is taken again

  function refresh(img) {
    if (img) img.src = img.src.replace(/([?&]t=)[^&]*/, "$1" + Date.now());
  }

  var settleTimer = null;
  document.addEventListener("screen-changed", function () {
    clearTimeout(settleTimer);
    settleTimer = setTimeout(function () {
      document.querySelectorAll("[data-computer] img[data-screen]").forEach(refresh);
    }, SETTLE_MS);
  });

  // The point clicked on the screenshot, in the browser's pixels, into every x and y of the actions.
  function pick(img, event) {
    var pane = img.closest("[data-computer]");
    // The picture inside the image's border: its content box.
    var box = img.getBoundingClientRect();
    var left = box.left + img.clientLeft, top = box.top + img.clientTop;
    var shownWidth = img.clientWidth, shownHeight = img.clientHeight;
    var width = Number(pane.dataset.width) || img.naturalWidth, height = Number(pane.dataset.height) || img.naturalHeight;
    if (!shownWidth || !shownHeight || !width || !height) return;
    // A scaled screenshot's CSS pixel covers several of the browser's: a whole-number pointer position is
    // the pixel's corner, so its centre is taken (half a CSS pixel on), not the corner's browser pixel.
    var clientX = event.clientX + (Number.isInteger(event.clientX) ? 0.5 : 0);
    var clientY = event.clientY + (Number.isInteger(event.clientY) ? 0.5 : 0);
    var x = Math.min(width - 1, Math.max(0, Math.floor(((clientX - left) * width) / shownWidth)));
    var y = Math.min(height - 1, Math.max(0, Math.floor(((clientY - top) * height) / shownHeight)));
    pane.querySelectorAll("form[data-action] input[name$='-x']").forEach(function (input) { input.value = x; });
    pane.querySelectorAll("form[data-action] input[name$='-y']").forEach(function (input) { input.value = y; });
    var said = pane.querySelector("[data-picked]");
    if (said) said.textContent = "Picked (" + x + ", " + y + "): x and y of the actions are set.";
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (target.matches("[data-computer] img[data-screen]")) return pick(target, event);
    if (target.matches("[data-refresh-screen]")) {
      refresh(target.closest("[data-computer]").querySelector("[data-screen]"));
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
