// Credential vault: add/remove key/value rows, and the TOTP code's countdown. No inline scripts (CSP).
(function () {
  "use strict";

  // Buttons that only work with JavaScript stay hidden without it (the forms render spare rows instead).
  function reveal(root) {
    root.querySelectorAll("[data-add-row], [data-remove-row], [data-copy]").forEach(function (el) {
      el.hidden = false;
    });
  }

  document.addEventListener("click", function (event) {
    var add = event.target.closest("[data-add-row]");
    if (add) {
      var list = document.getElementById(add.dataset.addRow);
      var template = document.getElementById(add.dataset.template);
      if (!list || !template) return;
      var row = template.content.firstElementChild.cloneNode(true);
      list.appendChild(row);
      reveal(row);
      var key = row.querySelector("input");
      if (key) key.focus();
      return;
    }
    var remove = event.target.closest("[data-remove-row]");
    if (remove) {
      var current = remove.closest("[data-value-row]");
      if (current) current.remove();
      return;
    }
    var copy = event.target.closest("[data-copy]");
    if (copy && navigator.clipboard) {
      var source = document.querySelector(copy.dataset.copy);
      if (!source) return;
      navigator.clipboard.writeText(source.textContent.trim()).then(function () {
        copy.textContent = "Copied";
      });
    }
  });

  // The countdown counts the seconds the server computed (data-totp-seconds), on a monotonic clock, so a
  // skewed browser clock cannot make it lie. At zero, htmx re-fetches the partial (hx-trigger on it).
  function startCountdowns(root) {
    root.querySelectorAll("[data-totp-seconds]").forEach(function (el) {
      if (el.dataset.deadline) return;
      el.dataset.deadline = String(performance.now() + Number(el.dataset.totpSeconds) * 1000);
    });
  }

  function tick() {
    document.querySelectorAll("[data-totp-seconds][data-deadline]").forEach(function (el) {
      var left = Math.max(0, Math.ceil((Number(el.dataset.deadline) - performance.now()) / 1000));
      // Four ticks a second, a new figure once a second: only that is written (each write lays the page out).
      if (el.textContent !== left + " s") el.textContent = left + " s";
      var box = el.closest(".totp");
      var bar = box && box.querySelector("[data-totp-progress]");
      if (bar && bar.value !== left) bar.value = left;
    });
  }

  function init(root) {
    reveal(root);
    startCountdowns(root);
  }

  document.addEventListener("DOMContentLoaded", function () {
    init(document);
  });
  document.addEventListener("htmx:load", function (event) {
    init(event.detail.elt);
  });
  setInterval(tick, 250);
})();
