// The session page's inspector (templates/browsers/detail.html, templates/browsers/session_base.html).
//
// - The split between the screen and the telemetry: dragged (pointer) or moved with the arrow keys on its
//   gutter, kept in localStorage ("console.inspector.split", a percentage of the width) and applied to every
//   inspector the page shows (also one htmx swaps in). Below the phone breakpoint the CSS stacks the two and
//   the gutter is hidden.
// - A permalinked event (?event=<seq>): the row is scrolled to, opened and highlighted once it is in.
// - "Copy as curl": the command built on the server (secrets already redacted) is copied from its <pre>.
(function () {
  "use strict";

  var KEY = "console.inspector.split";
  var MIN = 20, MAX = 80, STEP = 5;

  function stored() {
    try {
      var value = parseFloat(window.localStorage.getItem(KEY));
      return isNaN(value) ? null : Math.min(MAX, Math.max(MIN, value));
    } catch (e) { return null; }
  }

  function apply(root, percent) {
    // CSSOM, not a style attribute: the CSP allows the one and not the other.
    root.style.setProperty("--split", percent + "%");
    var gutter = root.querySelector("[data-inspector-gutter]");
    if (gutter) gutter.setAttribute("aria-valuenow", String(Math.round(percent)));
  }

  function save(percent) {
    try { window.localStorage.setItem(KEY, String(Math.round(percent * 10) / 10)); } catch (e) { /* private mode */ }
  }

  function initSplit(root) {
    if (root.dataset.inspectorReady) return;
    root.dataset.inspectorReady = "1";
    var gutter = root.querySelector("[data-inspector-gutter]");
    var start = stored();
    if (start !== null) apply(root, start);
    if (!gutter) return;
    var current = function () {
      return parseFloat(gutter.getAttribute("aria-valuenow")) || 50;
    };
    gutter.addEventListener("pointerdown", function (event) {
      if (event.button !== 0) return;
      event.preventDefault();
      gutter.setPointerCapture(event.pointerId);
      root.classList.add("inspector--dragging");
      var box = root.getBoundingClientRect();
      var move = function (e) {
        var percent = Math.min(MAX, Math.max(MIN, ((e.clientX - box.left) / box.width) * 100));
        apply(root, percent);
      };
      var up = function () {
        gutter.removeEventListener("pointermove", move);
        gutter.removeEventListener("pointerup", up);
        gutter.removeEventListener("pointercancel", up);
        root.classList.remove("inspector--dragging");
        save(current());
      };
      gutter.addEventListener("pointermove", move);
      gutter.addEventListener("pointerup", up);
      gutter.addEventListener("pointercancel", up);
    });
    gutter.addEventListener("keydown", function (event) {
      var delta = { ArrowLeft: -STEP, ArrowRight: STEP, Home: MIN - 100, End: 100 }[event.key];
      if (delta === undefined) return;
      event.preventDefault();
      var percent = Math.min(MAX, Math.max(MIN, current() + delta));
      apply(root, percent);
      save(percent);
    });
  }

  function highlight(pane) {
    var seq = pane.dataset.permalinkSeq;
    var row = pane.querySelector('li.trow[data-seq="' + CSS.escape(seq) + '"]');
    if (!row || row.dataset.highlighted) return;
    row.dataset.highlighted = "1";
    row.classList.add("is-permalinked");
    var details = row.querySelector("details");
    if (details) details.open = true;
    row.scrollIntoView({ block: "center" });
  }

  function init(scope) {
    if (!scope.querySelectorAll) return;
    if (scope.matches && scope.matches("[data-inspector]")) initSplit(scope);
    scope.querySelectorAll("[data-inspector]").forEach(initSplit);
    if (scope.matches && scope.matches("[data-permalink-seq]")) highlight(scope);
    scope.querySelectorAll("[data-permalink-seq]").forEach(highlight);
  }

  function copyText(button) {
    var source = document.getElementById(button.dataset.copyFrom);
    if (!source) return;
    var text = source.textContent;
    var done = function () {
      var label = button.dataset.label || button.textContent;
      button.dataset.label = label;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, done);
    } else {
      var range = document.createRange();
      range.selectNodeContents(source);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      try { document.execCommand("copy"); } catch (e) { /* left selected for Ctrl+C */ }
      done();
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy-from]");
    if (button) copyText(button);
  });
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (event) { init(event.target); });
})();
