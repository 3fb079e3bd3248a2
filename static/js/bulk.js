// Bulk selection: a table's row checkboxes belong to a bulk form by their form="<form id>" attribute (so the
// form works without this script: a plain POST of the ticked ones). Here:
// - <input type="checkbox" data-select-all="<form id>"> (hidden until now) ticks every row of the page;
// - [data-bulk-count="<form id>"] says how many are ticked;
// - a bulk result (data-bulk-done="<form id>" data-bulk-ids="id id …") unticks the rows it dealt with;
// - [data-bulk-dismiss] closes a confirmation without leaving the page;
// - Shift+click ticks (or unticks) every row between the last one clicked and this one.
(function () {
  "use strict";

  function boxes(formId) {
    return Array.prototype.filter.call(
      document.querySelectorAll('input[type="checkbox"][form="' + formId + '"]'),
      function (box) { return !box.hasAttribute("data-select-all") && !box.disabled; }
    );
  }

  function sync(formId) {
    var all = boxes(formId);
    var ticked = all.filter(function (box) { return box.checked; }).length;
    document.querySelectorAll('[data-bulk-count="' + formId + '"]').forEach(function (el) {
      el.textContent = ticked ? ticked + " selected" : "none selected";
    });
    document.querySelectorAll('[data-select-all="' + formId + '"]').forEach(function (el) {
      el.hidden = false;
      el.disabled = all.length === 0;
      el.checked = all.length > 0 && ticked === all.length;
      el.indeterminate = ticked > 0 && ticked < all.length;
    });
  }

  function syncAll() {
    var seen = {};
    document.querySelectorAll("[data-select-all], [data-bulk-count]").forEach(function (el) {
      var id = el.dataset.selectAll || el.dataset.bulkCount;
      if (!seen[id]) {
        seen[id] = true;
        sync(id);
      }
    });
  }

  var lastClicked = {};
  document.addEventListener("click", function (event) {
    var box = event.target;
    if (!box.matches || !box.matches('input[type="checkbox"][form]') || box.dataset.selectAll) return;
    var formId = box.getAttribute("form");
    var all = boxes(formId);
    var from = all.indexOf(lastClicked[formId]);
    var to = all.indexOf(box);
    if (event.shiftKey && from >= 0 && to >= 0) {
      all.slice(Math.min(from, to), Math.max(from, to) + 1).forEach(function (each) { each.checked = box.checked; });
      sync(formId);
    }
    lastClicked[formId] = box;
  });

  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!box.matches || !box.matches('input[type="checkbox"]')) return;
    if (box.dataset.selectAll) {
      boxes(box.dataset.selectAll).forEach(function (each) { each.checked = box.checked; });
      sync(box.dataset.selectAll);
    } else if (box.getAttribute("form")) {
      sync(box.getAttribute("form"));
    }
  });

  function clearDone(scope) {
    var done = [];
    if (scope.matches && scope.matches("[data-bulk-done]")) done.push(scope);
    done = done.concat(Array.prototype.slice.call(scope.querySelectorAll("[data-bulk-done]")));
    done.forEach(function (el) {
      var ids = (el.dataset.bulkIds || "").split(/\s+/);
      boxes(el.dataset.bulkDone).forEach(function (box) {
        if (ids.indexOf(box.value) >= 0) box.checked = false;
      });
    });
  }

  document.addEventListener("click", function (event) {
    var dismiss = event.target.closest("[data-bulk-dismiss]");
    if (!dismiss) return;
    var panel = dismiss.closest("[data-bulk-panel]");
    if (!panel) return;
    event.preventDefault();
    panel.replaceChildren();
  });

  document.addEventListener("DOMContentLoaded", syncAll);
  document.addEventListener("htmx:load", function (event) {
    clearDone(event.target);
    syncAll();
  });
  document.addEventListener("live:merged", syncAll);
})();
