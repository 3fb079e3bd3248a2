// The process page and the processes pane (templates/browsers/panes/process.html, processes.html).
//
// Live output arrives through the htmx SSE extension into the terminal (<pre data-terminal>, event
// "output"). This script keeps the terminal scrolled to the end while "Follow the output" is on (and
// turns it off when the operator scrolls up to read), hides or shows standard error, and when the exit
// event arrives tells the status block to refresh at once (the "process-exited" event on <body>) and takes
// the standard input form away.
(function () {
  "use strict";

  var NEAR_BOTTOM = 24;

  function panel(el) {
    return el && el.closest ? el.closest("[data-process-output]") : null;
  }

  function follow(root) {
    var box = root.querySelector("[data-follow]");
    var terminal = root.querySelector("[data-terminal]");
    if (box && box.checked && terminal) terminal.scrollTop = terminal.scrollHeight;
  }

  // Output comes as one message a chunk: scrolling once a frame lays the terminal out once for a burst of
  // them, not once each.
  function followSoon(root) {
    if (root.followPending) return;
    root.followPending = true;
    requestAnimationFrame(function () {
      root.followPending = false;
      follow(root);
    });
  }

  document.addEventListener("htmx:sseMessage", function (event) {
    var root = panel(event.target);
    if (!root) return;
    var type = event.detail && event.detail.type;
    if (type === "output") followSoon(root);
    if (type === "exit") {
      // Nothing reads standard input any more: the form goes, a note says why.
      var stdin = document.getElementById("process-stdin");
      if (stdin) stdin.remove();
      var closed = document.querySelector("[data-stdin-closed]");
      if (closed) closed.hidden = false;
      if (window.htmx) window.htmx.trigger(document.body, "process-exited");
    }
  });

  document.addEventListener("change", function (event) {
    var root = panel(event.target);
    if (!root) return;
    var terminal = root.querySelector("[data-terminal]");
    if (event.target.matches("[data-show-stderr]") && terminal) {
      terminal.classList.toggle("hide-stderr", !event.target.checked);
    }
    if (event.target.matches("[data-follow]")) follow(root);
  });

  document.addEventListener(
    "scroll",
    function (event) {
      var terminal = event.target;
      if (!terminal.matches || !terminal.matches("[data-terminal]")) return;
      var root = panel(terminal);
      var box = root && root.querySelector("[data-follow]");
      if (!box) return;
      var atEnd = terminal.scrollHeight - terminal.scrollTop - terminal.clientHeight < NEAR_BOTTOM;
      if (box.checked !== atEnd) box.checked = atEnd;
    },
    true
  );
})();
