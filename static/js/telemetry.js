// The telemetry pane of a browser session page (templates/browsers/_telemetry.html).
//
// Live rows arrive through the htmx SSE extension into a hidden inbox ([data-telemetry-inbox]); this
// script moves each one into the list unless the pane is paused (then it waits in a buffer and the
// "N new events" pill counts it), drops rows it already shows (by seq) or that the URL's filters exclude,
// keeps at most data-max-rows rows (trimming the oldest, with a notice), follows the tail while the log is
// scrolled to the bottom, and keeps the stream URL's last_event_id current so a reconnect resumes exactly.
(function () {
  "use strict";

  var NEAR_BOTTOM = 40; // px: closer than this to the bottom counts as "following the tail"

  function csv(value) {
    return (value || "").split(",").map(function (s) { return s.trim(); }).filter(Boolean);
  }

  function Pane(root) {
    this.root = root;
    this.log = root.querySelector("[data-telemetry-log]");
    this.list = root.querySelector("[data-telemetry-rows]");
    this.inbox = root.querySelector("[data-telemetry-inbox]");
    this.pill = root.querySelector("[data-telemetry-pill]");
    this.toggle = root.querySelector("[data-telemetry-toggle]");
    this.count = root.querySelector("[data-telemetry-count]");
    this.trimmedNotice = root.querySelector("[data-telemetry-trimmed]");
    this.maxRows = parseInt(root.dataset.maxRows, 10) || 1000;
    this.categories = csv(root.dataset.categories);
    this.types = csv(root.dataset.types);
    // The rest of the page's filters (console/browsers/finding.py applies the same to the history).
    this.text = (root.dataset.q || "").toLowerCase();
    this.errors = root.dataset.errors === "1";
    this.level = root.dataset.level || "";
    this.target = root.dataset.target || "";
    this.paused = false;
    this.pausedByScroll = false;
    this.pending = [];
    this.trimmed = 0;
    this.seen = new Set();
    this.lastSeq = 0;
    var self = this;
    this.list.querySelectorAll("li.trow").forEach(function (row) { self.remember(row); });
    this.setState("");
    this.bind();
    this.scrollToBottom();
    this.render();
  }

  Pane.prototype.remember = function (row) {
    var seq = parseInt(row.dataset.seq, 10);
    if (!isNaN(seq)) {
      this.seen.add(seq);
      if (seq > this.lastSeq) this.lastSeq = seq;
    }
  };

  Pane.prototype.matches = function (row) {
    if (this.categories.length && this.categories.indexOf(row.dataset.category) < 0) return false;
    if (this.types.length && this.types.indexOf(row.dataset.type) < 0) return false;
    if (this.errors && !row.classList.contains("trow--error")) return false;
    if (this.level && row.dataset.level !== this.level) return false;
    if (this.target && row.dataset.target !== this.target) return false;
    if (this.text) {
      var summary = row.querySelector("summary");
      var body = row.querySelector(".trow__text, .trow__url");
      var haystack = (row.dataset.type + "\n" + (summary ? summary.textContent : "") + "\n" + (body ? body.textContent : "")).toLowerCase();
      if (haystack.indexOf(this.text) < 0) return false;
    }
    return true;
  };

  Pane.prototype.bind = function () {
    var self = this;
    if (this.inbox) {
      new MutationObserver(function () { self.drainSoon(); }).observe(this.inbox, { childList: true });
    }
    if (this.toggle) {
      this.toggle.addEventListener("click", function () {
        if (self.paused) self.resume(); else self.pause(false);
      });
    }
    if (this.pill) this.pill.addEventListener("click", function () { self.resume(); });
    // "Load older events" swaps a page of history in above the rows: remember them and count them.
    this.list.addEventListener("htmx:afterSettle", function () {
      self.rows().forEach(function (row) { self.remember(row); });
      self.render();
    });
    var clear = this.root.querySelector("[data-telemetry-clear]");
    if (clear) clear.addEventListener("click", function () { self.clear(); });
    this.log.addEventListener("scroll", function () { self.onScroll(); }, { passive: true });
    var status = this.root.querySelector(".live-indicator");
    if (status) {
      new MutationObserver(function () { self.onStatus(status); }).observe(status, { childList: true, subtree: true });
      // The browser lost the console's stream: say so until the relay's own status arrives again
      // (it sends the current one to every new connection).
      this.root.addEventListener("htmx:sseError", function (event) {
        if (event.target !== self.root || self.root.dataset.state === "ended") return;
        status.innerHTML = '<span class="live-status live-status--reconnecting" data-state="reconnecting">Reconnecting…</span>';
      });
    }
  };

  // Live rows --------------------------------------------------------------------------------------

  // Each event arrives as an SSE message of its own. Moving the rows into the list once a frame, not once a
  // message, lays the list out once for a whole burst (per message, a burst of a thousand events laid out a
  // thousand-row list a thousand times). Without frames (a hidden tab) the inbox is drained whenever it
  // holds a list's worth, so it never grows past that.
  Pane.prototype.drainSoon = function () {
    if (this.inbox.children.length >= this.maxRows) {
      this.drain();
      return;
    }
    if (this.drainPending) return;
    this.drainPending = true;
    var self = this;
    requestAnimationFrame(function () {
      self.drainPending = false;
      self.drain();
    });
  };

  Pane.prototype.drain = function () {
    var rows = Array.prototype.slice.call(this.inbox.children);
    if (!rows.length) return;
    var follow = !this.paused && this.atBottom();
    var added = 0;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      this.inbox.removeChild(row);
      if (!row.matches || !row.matches("li.trow")) continue;
      var seq = parseInt(row.dataset.seq, 10);
      if (!isNaN(seq)) {
        if (this.seen.has(seq)) continue; // replayed after a reconnect: already shown
        this.seen.add(seq);
        if (seq > this.lastSeq) this.lastSeq = seq;
      }
      if (!this.matches(row)) continue;
      if (this.paused) {
        this.pending.push(row);
      } else {
        this.list.appendChild(row);
        added++;
      }
    }
    this.trimPending();
    if (added) {
      this.removeEmpty();
      this.trim();
      if (follow) this.scrollToBottom();
    }
    this.updateResumePoint();
    this.render();
  };

  Pane.prototype.removeEmpty = function () {
    var empty = this.list.querySelector("[data-telemetry-empty]");
    if (empty) empty.remove();
  };

  Pane.prototype.rows = function () {
    return this.list.querySelectorAll("li.trow");
  };

  Pane.prototype.trim = function () {
    var rows = this.rows();
    var extra = rows.length - this.maxRows;
    if (extra <= 0) return;
    for (var i = 0; i < extra; i++) rows[i].remove();
    this.trimmed += extra;
    // The history cursor points below rows that are gone now: paging back would leave a hole.
    var older = this.list.querySelector("#telemetry-older");
    if (older) older.remove();
  };

  Pane.prototype.trimPending = function () {
    var extra = this.pending.length - this.maxRows;
    if (extra > 0) {
      this.pending.splice(0, extra);
      this.trimmed += extra;
    }
  };

  Pane.prototype.updateResumePoint = function () {
    // htmx's SSE extension re-reads sse-connect when it opens a new EventSource after a failure.
    var url = this.root.getAttribute("sse-connect");
    if (!url || !this.lastSeq) return;
    var parts = url.split("?");
    var params = new URLSearchParams(parts[1] || "");
    params.set("last_event_id", String(this.lastSeq));
    this.root.setAttribute("sse-connect", parts[0] + "?" + params.toString());
  };

  // Pause, resume, clear, follow ---------------------------------------------------------------------

  Pane.prototype.pause = function (byScroll) {
    if (this.paused) return;
    this.paused = true;
    this.pausedByScroll = byScroll;
    this.render();
  };

  Pane.prototype.resume = function () {
    this.paused = false;
    this.pausedByScroll = false;
    var rows = this.pending;
    this.pending = [];
    if (rows.length) {
      var fragment = document.createDocumentFragment();
      rows.forEach(function (row) { fragment.appendChild(row); });
      this.list.appendChild(fragment);
      this.removeEmpty();
      this.trim();
    }
    this.scrollToBottom();
    this.render();
  };

  Pane.prototype.clear = function () {
    this.rows().forEach(function (row) { row.remove(); });
    this.pending = [];
    this.trimmed = 0;
    var older = this.list.querySelector("#telemetry-older");
    if (older) older.remove();
    this.render();
  };

  Pane.prototype.atBottom = function () {
    var log = this.log;
    return log.scrollHeight - log.scrollTop - log.clientHeight <= NEAR_BOTTOM;
  };

  Pane.prototype.scrollToBottom = function () {
    this.log.scrollTop = this.log.scrollHeight;
  };

  Pane.prototype.onScroll = function () {
    if (!this.toggle) return; // not live: nothing to follow
    if (this.atBottom()) {
      if (this.paused && this.pausedByScroll) this.resume();
    } else if (!this.paused) {
      this.pause(true);
    }
  };

  // Connection state ----------------------------------------------------------------------------------

  Pane.prototype.onStatus = function (status) {
    var chip = status.querySelector("[data-state]");
    var state = chip ? chip.dataset.state : "";
    this.setState(state);
    if (state === "ended" || state === "error") {
      // The relay said the stream is over: stop htmx from reopening it.
      this.root.removeAttribute("sse-connect");
    }
  };

  Pane.prototype.setState = function (state) {
    if (state) this.root.dataset.state = state;
    if (state === "ended" && this.toggle) {
      this.toggle.disabled = true;
    }
    if (state) this.renderPaused();
  };

  Pane.prototype.render = function () {
    var shown = this.rows().length;
    if (this.count) {
      var text = shown + " event" + (shown === 1 ? "" : "s");
      if (this.categories.length || this.types.length || this.text || this.errors || this.level || this.target) text += " matching the filters";
      this.count.textContent = text;
    }
    if (this.toggle) {
      this.toggle.textContent = this.paused ? "▶ Resume live" : "❚❚ Pause";
      this.toggle.setAttribute("aria-pressed", this.paused ? "true" : "false");
      this.toggle.title = this.paused ? "Show new events as they arrive" : "Stop the list from moving (events keep buffering)";
    }
    if (this.pill) {
      var n = this.pending.length;
      this.pill.hidden = !(this.paused && n > 0);
      this.pill.textContent = n + " new event" + (n === 1 ? "" : "s") + " ↓";
    }
    this.root.dataset.paused = this.paused ? "true" : "false";
    this.renderPaused();
    if (this.trimmedNotice) this.trimmedNotice.hidden = this.trimmed === 0;
  };

  // While paused the connection chip ("Live") gives way to a "Paused" one: the list is not live then.
  Pane.prototype.renderPaused = function () {
    var indicator = this.root.querySelector(".live-indicator");
    if (!indicator) return;
    if (!this.pausedChip) {
      this.pausedChip = document.createElement("span");
      this.pausedChip.className = "live-status live-status--paused";
      this.pausedChip.dataset.telemetryPaused = "";
      this.pausedChip.textContent = "Paused";
      indicator.parentNode.insertBefore(this.pausedChip, indicator);
    }
    var over = this.root.dataset.state === "ended" || this.root.dataset.state === "error";
    var paused = this.paused && !over;
    this.pausedChip.hidden = !paused;
    indicator.hidden = paused;
  };

  // Copy a row's JSON ---------------------------------------------------------------------------------

  function copy(button) {
    var pre = button.parentElement.querySelector("pre");
    if (!pre) return;
    var text = pre.textContent;
    var done = function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(pre); done(); });
    } else {
      fallbackCopy(pre);
      done();
    }
  }

  function fallbackCopy(pre) {
    var range = document.createRange();
    range.selectNodeContents(pre);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    try { document.execCommand("copy"); } catch (e) { /* the text stays selected for Ctrl+C */ }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (button) copy(button);
  });

  // The server sends each event's JSON compact (cheaper for every live event); indent it when a row opens.
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details.open || !details.querySelector) return;
    var pre = details.querySelector("pre[data-json]");
    links(details);
    if (!pre || pre.dataset.pretty) return;
    try { pre.textContent = JSON.stringify(JSON.parse(pre.textContent), null, 2); } catch (e) { /* leave as sent */ }
    pre.dataset.pretty = "1";
  }, true);

  // A row's links, added when it opens: its permalink (the page ending a second after it, scrolled to it
  // and highlighted: console/browsers/finding.py) and "open in replay" when a replay of the session covers
  // its time (the player seeks to it).
  function links(details) {
    var row = details.closest("li.trow");
    var pane = details.closest("[data-telemetry]");
    var body = details.querySelector(".trow__body");
    if (!row || !pane || !body || body.querySelector(".trow__links")) return;
    var time = row.querySelector("time[datetime]");
    var seq = row.dataset.seq;
    if (!time || !seq) return;
    var at = new Date(time.getAttribute("datetime"));
    if (isNaN(at.getTime())) return;
    var nav = document.createElement("p");
    nav.className = "trow__links";
    var params = new URLSearchParams();
    if (pane.classList.contains("telemetry--console")) params.set("view", "console");
    else if (pane.dataset.categories) params.set("category", pane.dataset.categories);
    params.set("until", new Date(at.getTime() + 1000).toISOString());
    params.set("event", seq);
    var permalink = document.createElement("a");
    permalink.href = pane.dataset.pageUrl + "?" + params.toString();
    permalink.textContent = "Link to this event";
    permalink.dataset.permalink = "";
    nav.appendChild(permalink);
    var replays = [];
    try { replays = JSON.parse(pane.dataset.replays || "[]"); } catch (e) { replays = []; }
    for (var i = 0; i < replays.length; i++) {
      var start = new Date(replays[i].start), end = new Date(replays[i].end);
      if (at >= start && at <= end) {
        var open = document.createElement("a");
        var offset = ((at - start) / 1000).toFixed(1);
        open.href = pane.dataset.replayUrl + encodeURIComponent(replays[i].id) + "/?t=" + offset + "&event=" + encodeURIComponent(seq);
        open.textContent = "Open in replay (" + offset + " s)";
        open.dataset.openReplay = "";
        nav.appendChild(open);
        break;
      }
    }
    body.insertBefore(nav, body.firstChild);
  }

  // Set-up, also for panes htmx swaps in (filters changed) --------------------------------------------

  function init(scope) {
    var panes = [];
    if (scope.matches && scope.matches("[data-telemetry]")) panes.push(scope);
    if (scope.querySelectorAll) panes = panes.concat(Array.prototype.slice.call(scope.querySelectorAll("[data-telemetry]")));
    panes.forEach(function (root) {
      // The Network view has no event log: nothing to follow there.
      if (!root.querySelector("[data-telemetry-rows]")) return;
      if (!root.telemetryPane) root.telemetryPane = new Pane(root);
    });
  }

  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (event) { init(event.target); });
})();
