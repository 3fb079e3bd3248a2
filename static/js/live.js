// Live lists (templates/web/live_note.html): a list whose rows change on their own refreshes itself every
// few seconds while the tab is visible, and says when it last did. The note names the list (its DOM id, which
// is also the name of its partial); each refresh asks the page's current URL (or data-live-url) for that
// partial and merges it in place, row by row (rows are keyed by their id):
// - a row the operator is using (a ticked checkbox, an open <details> menu, focus inside) is left exactly as
//   it is, even when the service says it changed or is gone (it is then marked, and updated once let go);
// - a row whose content changed, or a new row, is highlighted briefly (a class: the CSP allows no styles); a
//   row that says the same stays the node shown (what moves on its own, an uptime's title, is updated in it);
// - the rest of the list (pager, summaries) is replaced when it differs; the table head is kept.
// Filters, sorting and paging stay as they are: the URL carries them, and console.js sorts again on htmx:load.
// An action's answer that says the list changed (HX-Trigger, data-live-refresh-on) refreshes it at once; a
// poll then on its way may carry the list from before the action, so its answer is dropped for a new one.
// A poll never runs while the tab is hidden; the Pause button stops it until Resume. A poll answered with the
// login page, 401 or 403 (access ended: console.js) or 404 stops for good and says so, as do all the page's
// lists once any part of the page learnt that access ended.
(function () {
  "use strict";

  var TICK_MS = 1000;
  var lists = [];

  function currentUrl(note) {
    return note.dataset.liveUrl || window.location.pathname + window.location.search;
  }

  function ago(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    if (s < 2) return "just now";
    if (s < 60) return s + " s ago";
    var m = Math.round(s / 60);
    return m < 60 ? m + " min ago" : Math.round(m / 60) + " h ago";
  }

  function setLabel(list, state, text) {
    var label = list.note.querySelector("[data-live-label]");
    if (!label) return;
    var className = "live-status live-status--" + state; // each tick: what changed only
    if (label.className !== className) label.className = className;
    if (label.dataset.state !== state) label.dataset.state = state;
    if (label.textContent !== text) label.textContent = text;
    var toggle = list.note.querySelector("[data-live-toggle]");
    var action = list.paused ? "Resume" : "Pause";
    if (toggle && toggle.textContent !== action) toggle.textContent = action; // each tick: written only if new
  }

  function describeEnd(list) {
    var label = list.note.querySelector("[data-live-label]");
    var toggle = list.note.querySelector("[data-live-toggle]");
    if (toggle) toggle.hidden = true;
    if (!label || label.dataset.state === "ended" && label.dataset.ended === list.ended) return;
    label.className = "live-status live-status--ended";
    label.dataset.state = "ended";
    label.dataset.ended = list.ended;
    // One span for the sentence and its link: the label is a flex row (its dot), whose items would each
    // take a column of their own on a phone.
    var said = document.createElement("span");
    if (list.ended === "gone") {
      var reload = document.createElement("a");
      reload.href = window.location.pathname + window.location.search;
      reload.textContent = "reload the page";
      said.append("Not updating: this list answered “not found” (gone, or no longer yours to see); ", reload);
    } else {
      said.append("Access ended — ", window.consoleAccess.signInLink(), " (this list no longer updates)");
    }
    label.replaceChildren(said);
  }

  function describe(list) {
    if (list.ended) return describeEnd(list);
    var now = Date.now();
    if (list.paused) return setLabel(list, "ended", "Paused: not updating");
    if (document.visibilityState !== "visible") return setLabel(list, "ended", "Paused while this tab is hidden");
    if (list.error) {
      var since = Math.max(1, Math.round((now - list.updatedAt) / 1000));
      return setLabel(list, "stalled", "Not updated for " + (since < 60 ? since + " s" : Math.round(since / 60) + " min") +
        " (" + list.error + "); retrying");
    }
    setLabel(list, "live", "Live · updated " + ago(now - list.updatedAt));
  }

  // What a row says, without what scripts change after it arrived (relative times, copy buttons, the page's
  // own data-live-volatile parts) and what moves on its own (data-live-volatile="title": a title that says an
  // uptime), so only real changes are highlighted.
  function canonical(el) {
    var copy = el.cloneNode(true);
    var all = [copy].concat(Array.prototype.slice.call(copy.querySelectorAll("*")));
    all.forEach(function (node) {
      node.classList.forEach(function (name) {
        if (name.indexOf("live-row--") === 0 || name.indexOf("htmx-") === 0) node.classList.remove(name);
      });
      if (!node.classList.length) node.removeAttribute("class");
      if (node.matches("[data-live-volatile='title']")) {
        node.removeAttribute("title");
      } else if (node.matches("time[datetime], [data-live-volatile], button[data-copy]")) {
        node.textContent = "";
        node.removeAttribute("title");
        node.removeAttribute("data-copied");
      }
      node.removeAttribute("aria-sort");
      // A form's CSRF token is masked anew at every drawing: not a change.
      if (node.matches("input[name=csrfmiddlewaretoken]")) node.removeAttribute("value");
    });
    return copy.outerHTML.replace(/\s+/g, " ");
  }

  function busy(el) {
    if (el.querySelector("input[type=checkbox]:checked, details[open]")) return true;
    var focused = document.activeElement;
    return !!focused && focused !== document.body && el.contains(focused);
  }

  function adopt(node) {
    return document.importNode(node, true);
  }

  // A row that says the same but for what moves on its own (canonical) stays the row shown: its moving titles
  // are brought up to date in place. Replaced instead, every row of a list of young sessions was drawn anew
  // and highlighted at every poll (their uptime, in a title, had moved on).
  function refreshTitles(old, fresh) {
    var theirs = fresh.querySelectorAll("[data-live-volatile='title']");
    Array.prototype.forEach.call(old.querySelectorAll("[data-live-volatile='title']"), function (node, i) {
      var title = theirs[i] ? theirs[i].getAttribute("title") : null;
      if (title === null) node.removeAttribute("title");
      else if (node.getAttribute("title") !== title) node.setAttribute("title", title);
    });
    old.liveRaw = fresh.outerHTML;
  }

  function highlight(row) {
    row.classList.remove("live-row--changed");
    void row.offsetWidth; // restart the animation when the same row changes again
    row.classList.add("live-row--changed");
  }

  function mergeRows(oldBody, newBody) {
    var oldRows = Array.prototype.slice.call(oldBody.rows);
    var byId = {};
    oldRows.forEach(function (row) { if (row.id) byId[row.id] = row; });
    var order = [];
    var added = [];
    var seen = {};
    Array.prototype.forEach.call(newBody.rows, function (fresh) {
      var old = fresh.id ? byId[fresh.id] : null;
      if (fresh.id) seen[fresh.id] = true;
      if (old && busy(old)) {
        old.classList.remove("live-row--gone");
        // Updated (and highlighted) once the operator lets go of it.
        order.push(old);
        return;
      }
      if (old && old.liveRaw === fresh.outerHTML) {
        order.push(old);
        return;
      }
      var same = old && canonical(old) === canonical(fresh);
      if (same) {
        refreshTitles(old, fresh);
        order.push(old);
        return;
      }
      var row = adopt(fresh);
      row.liveRaw = fresh.outerHTML;
      if (old || fresh.id) highlight(row);
      order.push(row);
      added.push(row);
    });
    // Rows the service no longer lists: gone, unless the operator is using them.
    oldRows.forEach(function (row) {
      if (row.id && !seen[row.id] && busy(row)) {
        row.classList.add("live-row--gone");
        row.title = "No longer in this list: it changed or ended since it was shown.";
        order.push(row);
      }
    });
    var keep = new Set(order);
    oldRows.forEach(function (row) { if (!keep.has(row)) row.remove(); });
    // A list the operator sorted (console.js sorts it again once merged): the rows shown stay where they are
    // and the others go last, to be sorted into place; put in the service's order, every row moved twice.
    var table = oldBody.closest("table");
    if (table && table.querySelector("th[aria-sort]")) {
      order.forEach(function (row) { if (row.parentNode !== oldBody) oldBody.appendChild(row); });
      return added;
    }
    var cursor = oldBody.firstElementChild;
    order.forEach(function (row) {
      if (row === cursor) {
        cursor = cursor.nextElementSibling;
      } else {
        oldBody.insertBefore(row, cursor);
      }
    });
    return added;
  }

  function containing(parent, target) {
    var kids = Array.prototype.slice.call(parent.children);
    for (var i = 0; i < kids.length; i++) {
      if (kids[i] === target || kids[i].contains(target)) return { kids: kids, index: i };
    }
    return null;
  }

  function syncSiblings(parent, olds, news, before, added) {
    if (olds.length === news.length) {
      olds.forEach(function (old, i) {
        var fresh = news[i];
        if (old.tagName === "THEAD" && fresh.tagName === "THEAD") return; // sort buttons, select-all
        if (busy(old) || canonical(old) === canonical(fresh)) return;
        var node = adopt(fresh);
        old.replaceWith(node);
        added.push(node);
      });
      return;
    }
    olds.forEach(function (old) { if (!busy(old)) old.remove(); });
    news.forEach(function (fresh) {
      var node = adopt(fresh);
      parent.insertBefore(node, before);
      added.push(node);
    });
  }

  // Walk down from the list's root to its <tbody>, syncing what sits beside each level on the way.
  function mergeAround(oldEl, newEl, oldBody, newBody, added) {
    if (oldEl === oldBody) return added.concat(mergeRows(oldBody, newBody));
    var o = containing(oldEl, oldBody);
    var n = containing(newEl, newBody);
    if (!o || !n || o.kids[o.index].tagName !== n.kids[n.index].tagName) return null;
    var oldPath = o.kids[o.index];
    syncSiblings(oldEl, o.kids.slice(0, o.index), n.kids.slice(0, n.index), oldPath, added);
    syncSiblings(oldEl, o.kids.slice(o.index + 1), n.kids.slice(n.index + 1), null, added);
    return mergeAround(oldPath, n.kids[n.index], oldBody, newBody, added);
  }

  function merge(root, fresh) {
    var oldBody = root.querySelector("tbody");
    var newBody = fresh.querySelector("tbody");
    var added = oldBody && newBody ? mergeAround(root, fresh, oldBody, newBody, []) : null;
    if (added === null) {
      // No table on one side (nothing to list, an error): the whole list, unless the operator is using it.
      if (busy(root)) return root;
      var node = adopt(fresh);
      root.replaceWith(node);
      htmx.process(node);
      htmx.trigger(node, "htmx:load");
      return node;
    }
    added.forEach(function (node) { htmx.process(node); });
    htmx.trigger(root, "htmx:load"); // console.js: relative times, and the chosen sort order again
    return root;
  }

  function applyFlash(doc) {
    var flash = doc.getElementById("flash");
    var mine = document.getElementById("flash");
    if (flash && mine && flash.children.length) {
      var node = adopt(flash);
      node.removeAttribute("hx-swap-oob");
      mine.replaceWith(node);
    }
  }

  // ``asked``: something changed the list here (refreshOn). A poll already on its way may have been answered
  // before that change: its answer is then dropped, and the list asked again as soon as it is in.
  function poll(list, asked) {
    var root = document.getElementById(list.id);
    if (!root || list.ended || root.classList.contains("deferred-loading")) return;
    if (list.inFlight) {
      if (asked) list.again = true;
      return;
    }
    var url = currentUrl(list.note);
    list.inFlight = true;
    list.lastAttempt = Date.now();
    fetch(url, {
      credentials: "same-origin",
      headers: { "HX-Request": "true", "HX-Target": list.id, "HX-Current-URL": window.location.href },
    })
      .then(function (response) {
        var verdict = window.consoleAccess.verdict(response.status, response.url, response.redirected);
        if (verdict) {
          list.ended = verdict;
          if (verdict !== "gone") window.consoleAccess.ended({ quiet: true }); // the note says it
          return null;
        }
        if (response.redirected) throw new Error("signed out?");
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        if (html === null || list.again) return;
        // The operator changed filters or pages meanwhile: what they asked for wins.
        if (document.getElementById(list.id) !== root || currentUrl(list.note) !== url) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById(list.id);
        if (!fresh) throw new Error("unexpected answer");
        // A list that could not be read comes back as its failure (web/deferred.html): keep what is shown.
        if (fresh.classList.contains("deferred-failed") && !root.classList.contains("deferred-failed")) {
          var title = fresh.querySelector("strong");
          throw new Error(title ? title.textContent.replace(/\.$/, "") : "the service did not answer");
        }
        var focused = document.activeElement;
        var now = merge(root, fresh);
        if (focused && focused !== document.activeElement && document.contains(focused)) {
          focused.focus({ preventScroll: true });
        }
        applyFlash(doc);
        list.error = "";
        list.updatedAt = Date.now();
        now.dispatchEvent(new CustomEvent("live:merged", { bubbles: true }));
      })
      .catch(function (error) {
        list.error = error && error.message ? error.message : "no answer";
      })
      .then(function () {
        list.inFlight = false;
        if (list.again) {
          list.again = false;
          poll(list);
        }
        describe(list);
      });
  }

  function tick(force) {
    var visible = document.visibilityState === "visible";
    lists.forEach(function (list) {
      if (!document.contains(list.note)) return;
      if (!list.ended && window.consoleAccess.isEnded()) list.ended = "signed-out";
      if (visible && !list.ended && !list.paused && (force || Date.now() - list.lastAttempt >= list.every)) poll(list);
      describe(list);
    });
    lists = lists.filter(function (list) { return document.contains(list.note); });
  }

  function setUp(scope) {
    var notes = [];
    if (scope.matches && scope.matches("[data-live-list]")) notes.push(scope);
    notes = notes.concat(Array.prototype.slice.call(scope.querySelectorAll("[data-live-list]")));
    notes.forEach(function (note) {
      if (note.liveList) return;
      var list = {
        note: note,
        id: note.dataset.liveList,
        every: 1000 * (parseFloat(note.dataset.liveSeconds) || 5),
        lastAttempt: Date.now(),
        updatedAt: Date.now(),
        paused: false,
        error: "",
        ended: "",
        inFlight: false,
        again: false,
      };
      note.liveList = list;
      note.hidden = false;
      lists.push(list);
      listen(note);
      describe(list);
    });
  }

  document.addEventListener("DOMContentLoaded", function () { setUp(document); });
  document.addEventListener("htmx:load", function (event) { setUp(event.target); });
  document.addEventListener("visibilitychange", function () { tick(true); });
  document.addEventListener("console:access-ended", function () { tick(false); });
  setInterval(function () { tick(false); }, TICK_MS);

  document.addEventListener("click", function (event) {
    var toggle = event.target.closest("[data-live-toggle]");
    if (!toggle) return;
    var note = toggle.closest("[data-live-list]");
    if (!note || !note.liveList || note.liveList.ended) return;
    note.liveList.paused = !note.liveList.paused;
    if (!note.liveList.paused) poll(note.liveList);
    describe(note.liveList);
  });

  // Something changed the list here (a bulk action's answer says so with HX-Trigger): refresh now.
  function refreshOn(event) {
    lists.forEach(function (list) {
      var names = (list.note.dataset.liveRefreshOn || "").split(/\s+/);
      if (names.indexOf(event.type) >= 0 && !list.paused && !list.ended) poll(list, true);
    });
  }
  var listening = {};
  function listen(note) {
    (note.dataset.liveRefreshOn || "").split(/\s+/).forEach(function (name) {
      if (name && !listening[name]) {
        listening[name] = true;
        document.addEventListener(name, refreshOn);
      }
    });
  }
})();
