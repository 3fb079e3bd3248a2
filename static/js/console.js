// Small behaviours for the console. No inline scripts anywhere: the CSP forbids them.
// CSRF for htmx comes from hx-headers on <body>; nothing to do here for it.
(function () {
  "use strict";

  // Close the org switcher and the user menu (<details> dropdowns) when clicking elsewhere or pressing Escape.
  var DROPDOWNS = "details.switcher[open], details.dropdown[open]";
  document.addEventListener("click", function (event) {
    document.querySelectorAll(DROPDOWNS).forEach(function (el) {
      if (!el.contains(event.target)) el.removeAttribute("open");
    });
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    document.querySelectorAll(DROPDOWNS).forEach(function (el) {
      el.removeAttribute("open");
    });
  });

  // The user menu's theme (system, light, dark): prefs.js applies and remembers it.
  function markTheme() {
    if (!window.consoleTheme) return;
    var current = window.consoleTheme.choice();
    document.querySelectorAll("[data-theme-choice] input[name=theme]").forEach(function (input) {
      input.checked = input.value === current;
    });
  }
  document.addEventListener("DOMContentLoaded", markTheme);
  document.addEventListener("change", function (event) {
    var input = event.target;
    if (!input.closest || !input.closest("[data-theme-choice]") || !window.consoleTheme) return;
    window.consoleTheme.set(input.value);
  });

  // Countdowns: <time data-countdown="2025-01-01T00:00:00Z"> shows the time left, updated each second.
  function tick() {
    document.querySelectorAll("[data-countdown]").forEach(function (el) {
      var left = Math.max(0, Math.round((Date.parse(el.dataset.countdown) - Date.now()) / 1000));
      var m = Math.floor(left / 60);
      var s = left % 60;
      el.textContent = m + ":" + (s < 10 ? "0" : "") + s;
    });
  }
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);

  // Live panes: the chip says "Stalled" while the relay's keepalive events say its upstream went silent, or
  // when nothing at all (frame or keepalive) came from the relay for twice its keepalive interval; it says
  // "Live" again by itself when frames or live keepalives arrive. Only a chip the relay set to "Live" is
  // touched: connecting, reconnecting and ended chips are the relay's to change.
  function indicatorOf(element) {
    var root = element.closest("[sse-connect]");
    return root && root.querySelector(".live-indicator[data-keepalive-seconds]");
  }
  function setChip(chip, state, label) {
    chip.className = "live-status live-status--" + state;
    chip.dataset.state = state;
    chip.textContent = label;
  }
  function checkLiveness(indicator) {
    var chip = indicator.querySelector(".live-status");
    if (!chip || (chip.dataset.state !== "live" && chip.dataset.state !== "stalled")) return;
    var limit = 2000 * parseFloat(indicator.dataset.keepaliveSeconds || "15");
    var heardAt = indicator.heardAt || 0;
    var stalled = indicator.upstreamStalled || (heardAt > 0 && Date.now() - heardAt > limit);
    if (stalled && chip.dataset.state === "live") setChip(chip, "stalled", "Stalled");
    else if (!stalled && chip.dataset.state === "stalled") setChip(chip, "live", "Live");
  }
  document.addEventListener("htmx:sseOpen", function (event) {
    var indicator = event.target.querySelector(".live-indicator[data-keepalive-seconds]");
    if (indicator) indicator.heardAt = Date.now();
  });
  document.addEventListener("htmx:sseMessage", function (event) {
    var indicator = indicatorOf(event.target);
    if (!indicator) return;
    indicator.heardAt = Date.now();
    indicator.upstreamStalled = event.detail.type === "keepalive" && event.detail.data === "stalled";
    checkLiveness(indicator);
  });
  setInterval(function () {
    document.querySelectorAll(".live-indicator[data-keepalive-seconds]").forEach(checkLiveness);
  }, 250);

  // Everything below enhances what the server rendered, on load and on each piece htmx swaps in.
  function onContent(callback) {
    document.addEventListener("DOMContentLoaded", function () { callback(document); });
    document.addEventListener("htmx:load", function (event) { callback(event.target); });
  }

  // Access ended (signed out elsewhere, the session flushed, the password changed, the membership removed,
  // the role lowered). Streams say so themselves (console/live/guard.py: their last words carry a link,
  // a[data-sign-in]); a poll or a fragment learns it from its answer: a redirect to the login page, 401 or
  // 403. Then the page stops every poll (pools.js, live.js ask consoleAccess.isEnded()), never swaps the
  // login page into a fragment, and says so once above the content, with a link to sign in that comes back
  // to this page. A 404 to a poll stops that poll: what it watched is gone, or no longer this member's.
  var ACCESS_ENDED = "Access ended — ";
  function loginPath() {
    return (document.body && document.body.dataset.loginUrl) || "/login/";
  }
  function signInUrl() {
    var here = window.location.pathname + window.location.search;
    return loginPath() + "?next=" + encodeURIComponent(here);
  }
  function signInLink() {
    var link = document.createElement("a");
    link.href = signInUrl();
    link.dataset.signIn = "";
    link.textContent = "sign in again";
    return link;
  }
  function pointSignInLinks(scope) {
    var links = scope.matches && scope.matches("a[data-sign-in]") ? [scope] : [];
    if (scope.querySelectorAll) links = links.concat(Array.prototype.slice.call(scope.querySelectorAll("a[data-sign-in]")));
    links.forEach(function (link) { link.href = signInUrl(); });
    return links.length > 0;
  }
  function notice(id, parts) {
    var flash = document.getElementById("flash");
    if (!flash || document.getElementById(id)) return;
    var line = document.createElement("p");
    line.id = id;
    line.className = "flash flash-warning";
    line.setAttribute("role", "alert");
    parts.forEach(function (part) {
      line.appendChild(typeof part === "string" ? document.createTextNode(part) : part);
    });
    flash.appendChild(line);
  }
  function accessEnded(options) {
    var first = !document.documentElement.hasAttribute("data-access-ended");
    document.documentElement.setAttribute("data-access-ended", "");
    var gone = document.getElementById("poll-gone"); // a 404 to a poll: access ending explains it
    if (gone) gone.remove();
    if (!(options && options.quiet)) {
      notice("access-ended", [ACCESS_ENDED, signInLink(), ". What this page shows is as it was then: it no longer updates."]);
    }
    if (first) document.dispatchEvent(new CustomEvent("console:access-ended"));
  }
  function stopPolling(element, why) {
    element.removeAttribute("data-poll"); // pools.js sends "poll" to [data-poll] only
    element.dataset.pollStopped = why;
  }
  window.consoleAccess = {
    signInUrl: signInUrl,
    signInLink: signInLink,
    ended: accessEnded,
    isEnded: function () { return document.documentElement.hasAttribute("data-access-ended"); },
    // What an answer says about access: "signed-out" (the login page, 401), "forbidden" (403), "gone" (404),
    // or "" (anything else). `url` is where the answer finally came from (after redirects).
    verdict: function (status, url, redirected) {
      if (status === 401 || (redirected && pathOf(url) === loginPath())) return "signed-out";
      if (status === 403) return "forbidden";
      if (status === 404) return "gone";
      return "";
    },
    // Why a stream could not be reopened: its URL asked once (the answer's headers only; a stream that opens
    // is dropped at once). Resolves to a verdict, "ended" (204: nothing more will come) or "" (try again).
    probe: function (url) {
      var controller = new AbortController();
      return fetch(url, { credentials: "same-origin", headers: { Accept: "text/event-stream" }, signal: controller.signal })
        .then(function (response) {
          controller.abort();
          if (response.status === 204) return "ended";
          return window.consoleAccess.verdict(response.status, response.url, response.redirected);
        })
        .catch(function () { return ""; });
    },
  };
  onContent(pointSignInLinks);
  // A stream's last words: access ended (its link says so). The rest of the page stops polling too; the pane
  // itself says why, so no second notice.
  document.addEventListener("htmx:sseMessage", function (event) {
    if (event.detail && event.detail.type === "ended" && pointSignInLinks(event.target)) accessEnded({ quiet: true });
  });
  // A stream htmx could not reopen (EventSource CLOSED: the answer was not a stream, e.g. the login page
  // after "sign out everywhere" while the laptop slept) would be retried forever: ask once why, and when it
  // is access or the stream's end, stop it (no sse-connect: htmx's retry has nothing to open) and say so.
  document.addEventListener("htmx:sseError", function (event) {
    var root = event.target;
    var source = event.detail && event.detail.source;
    if (!source || source.readyState !== EventSource.CLOSED || !root.getAttribute || root.sseProbing) return;
    var url = root.getAttribute("sse-connect");
    if (!url) return;
    root.sseProbing = true;
    window.consoleAccess.probe(url).then(function (verdict) {
      root.sseProbing = false;
      if (!verdict) return;
      root.removeAttribute("sse-connect");
      source.close();
      var access = verdict === "signed-out" || verdict === "forbidden";
      var said = access ? [ACCESS_ENDED, signInLink()] : [verdict === "gone" ? "Ended: not found (gone, or no longer yours to see)" : "Ended"];
      var chip = root.querySelector(".live-indicator");
      if (chip) {
        var state = document.createElement("span");
        state.className = "live-status live-status--ended";
        state.dataset.state = "ended";
        state.textContent = "Ended";
        var message = document.createElement("span");
        message.className = "live-status__message";
        message.append.apply(message, access ? [ACCESS_ENDED, signInLink()] : said);
        chip.replaceChildren(state, " ", message);
      }
      var end = root.querySelector('[sse-swap="ended"]');
      if (end) end.replaceChildren.apply(end, said);
      if (access) accessEnded({ quiet: true });
    });
  });
  function pathOf(url) {
    try { return new URL(url, window.location.href).pathname; } catch (e) { return ""; }
  }
  // What htmx asks by itself (a poll, a part loading, a pane revealed), not what the operator clicked.
  function automatic(element) {
    return /(^|[\s,])(load|revealed|intersect|poll|every)\b/.test(element.getAttribute("hx-trigger") || "");
  }
  // The operator's action wins over a refresh in flight. A poll asked before the click, answering while
  // the click's request is on its way, would replace the form that sent it: the action's answer (and its
  // message) would then land in a detached element, and htmx would log an error for its flash. So while a
  // request the operator made is in flight, what htmx asked by itself is not swapped over it; the action's
  // answer brings the fresh state.
  var acting = new Set();
  document.addEventListener("htmx:beforeRequest", function (event) {
    var element = event.target;
    var xhr = event.detail && event.detail.xhr;
    if (event.defaultPrevented || !xhr || !element.getAttribute || automatic(element) || element.hasAttribute("data-poll")) return;
    acting.add(element);
    xhr.addEventListener("loadend", function () { acting.delete(element); });
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var config = event.detail.requestConfig;
    var element = config && config.elt;
    var target = event.detail.target;
    if (!acting.size || !element || !target || !(automatic(element) || element.hasAttribute("data-poll"))) return;
    acting.forEach(function (busy) {
      if (target.contains(busy)) event.detail.shouldSwap = false;
    });
  });
  // A poll whose answer is the one it had last time changes nothing: not swapped (a swap lays the page out and
  // draws the part again, every few seconds for each card of the overview). Only answers to what htmx asks by
  // itself, for a target with an id; a form's CSRF token, masked anew at every drawing, is not a change.
  // Anything else swapped in or around a polled part (an action's answer, a part out of band) makes its next
  // poll swap whatever it says.
  var lastAnswers = {};
  document.addEventListener("htmx:beforeSwap", function (event) {
    var config = event.detail.requestConfig;
    var element = config && config.elt;
    var target = event.detail.target;
    var xhr = event.detail.xhr;
    if (!event.detail.shouldSwap || !element || !target || !target.id || !xhr || xhr.status !== 200) return;
    if (!(automatic(element) || element.hasAttribute("data-poll"))) return;
    var answer = String(xhr.responseText).replace(/(name="csrfmiddlewaretoken" value=")[^"]*"/g, "$1");
    if (lastAnswers[target.id] === answer) event.detail.shouldSwap = false;
    lastAnswers[target.id] = answer;
    xhr.consolePolled = true;
  });
  function forgetAnswers(event) {
    if (event.detail.xhr && event.detail.xhr.consolePolled) return;
    for (var element = event.detail.target; element; element = element.parentElement) {
      if (element.id) delete lastAnswers[element.id];
    }
  }
  document.addEventListener("htmx:afterSwap", forgetAnswers);
  document.addEventListener("htmx:oobAfterSwap", forgetAnswers);
  // Once access ended, htmx asks nothing more by itself: the answers could only be the login page or 404.
  window.addEventListener("htmx:beforeRequest", function (event) {
    var element = event.target;
    if (window.consoleAccess.isEnded() && element && element.getAttribute && automatic(element)) event.preventDefault();
  }, true);
  // Before htmx does anything with the answer (and before django-htmx's debug handler, with DEBUG on, puts
  // an error page in place of the whole document): on the window, capturing.
  window.addEventListener("htmx:beforeOnLoad", function (event) {
    var xhr = event.detail.xhr;
    var element = event.target;
    if (!xhr || !element || !element.hasAttribute) return;
    var asked = event.detail.pathInfo ? pathOf(event.detail.pathInfo.finalRequestPath || "") : "";
    var redirected = Boolean(xhr.responseURL) && pathOf(xhr.responseURL) !== asked;
    var verdict = window.consoleAccess.verdict(xhr.status, xhr.responseURL, redirected);
    var polled = element.hasAttribute("data-poll");
    var loading = element.classList.contains("deferred-loading");
    var unasked = polled || loading || automatic(element);
    if (verdict === "signed-out" || (unasked && verdict === "forbidden")) {
      accessEnded();
    } else if (unasked && verdict === "gone" && window.consoleAccess.isEnded()) {
      // Already said.
    } else if (unasked && verdict === "gone") {
      var reload = document.createElement("a");
      reload.href = window.location.pathname + window.location.search;
      reload.textContent = "Reload the page";
      notice("poll-gone", ["Updates stopped: the console answered “not found” (what this page shows is gone, or no longer yours to see). ", reload]);
    } else {
      return;
    }
    // Never the login page (or an error page) inside a fragment; a part still loading says it will not.
    event.preventDefault();
    event.stopPropagation();
    if (polled) stopPolling(element, verdict);
    if (loading) {
      element.classList.remove("deferred-loading");
      element.removeAttribute("aria-busy");
      element.textContent = "Not loaded: " + (verdict === "gone" ? "not found." : "access ended.");
    }
  }, true);
  document.addEventListener("console:access-ended", function () {
    document.querySelectorAll("[data-poll]").forEach(function (element) { stopPolling(element, "access-ended"); });
  });
  function store(key, value) {
    try {
      if (value === null) localStorage.removeItem(key);
      else localStorage.setItem(key, value);
    } catch (e) {
      // Storage disabled: the choice lasts for this page only.
    }
  }
  function stored(key) {
    try { return localStorage.getItem(key); } catch (e) { return null; }
  }

  // Sidebar: on a phone the menu button slides it in over the page; on a desktop it hides or shows it,
  // and the choice is remembered (prefs.js applies it before the first paint).
  var root = document.documentElement;
  var phone = window.matchMedia("(max-width: 860px)");
  function sidebarShown() {
    return phone.matches ? root.classList.contains("sidebar-open") : !root.classList.contains("sidebar-collapsed");
  }
  function syncMenuToggle() {
    var toggle = document.getElementById("menu-toggle");
    if (toggle) toggle.setAttribute("aria-expanded", String(sidebarShown()));
  }
  function closePhoneSidebar() {
    root.classList.remove("sidebar-open");
    syncMenuToggle();
  }
  document.addEventListener("click", function (event) {
    if (event.target.closest("#menu-toggle")) {
      if (phone.matches) {
        root.classList.toggle("sidebar-open");
      } else {
        var collapsed = root.classList.toggle("sidebar-collapsed");
        store("console.sidebar", collapsed ? "collapsed" : null);
      }
      syncMenuToggle();
    } else if (event.target.closest("#sidebar-backdrop")) {
      closePhoneSidebar();
    }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && root.classList.contains("sidebar-open")) closePhoneSidebar();
  });
  phone.addEventListener("change", closePhoneSidebar);
  document.addEventListener("DOMContentLoaded", syncMenuToggle);

  // allauth's security-key and passkey buttons are served disabled (templates/allauth/elements/button.html):
  // its onload script wires them at DOMContentLoaded, in a listener registered while the page was parsed, so
  // before this one. Enabled once wired, and only if its script loaded.
  document.addEventListener("DOMContentLoaded", function () {
    if (!(window.allauth && window.allauth.webauthn)) return;
    document.querySelectorAll("button[data-wired-by-script]").forEach(function (button) {
      button.disabled = false;
    });
  });

  // Section groups: each remembers whether it is open; the group of the current page always opens.
  function closedGroups() {
    try { return JSON.parse(stored("console.navClosed") || "[]"); } catch (e) { return []; }
  }
  document.addEventListener("DOMContentLoaded", function () {
    var closed = closedGroups();
    document.querySelectorAll("details.nav-group").forEach(function (group) {
      if (closed.indexOf(group.dataset.navGroup) >= 0 && !group.querySelector("[aria-current]")) {
        group.removeAttribute("open");
      }
    });
  });
  document.addEventListener("toggle", function (event) {
    var group = event.target;
    if (!group.matches || !group.matches("details.nav-group")) return;
    var closed = closedGroups().filter(function (name) { return name !== group.dataset.navGroup; });
    if (!group.open) closed.push(group.dataset.navGroup);
    store("console.navClosed", closed.length ? JSON.stringify(closed) : null);
  }, true);

  // Times: <time datetime="…" data-relative> reads "3 min ago", the exact time on hover, in local time or
  // UTC as this browser chose (the button at the foot of the sidebar).
  function useUtc() { return stored("console.timezone") === "utc"; }
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function exactTime(date) {
    if (useUtc()) return date.toISOString().slice(0, 19).replace("T", " ") + " UTC";
    var zone = "";
    try { zone = " " + Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { zone = ""; }
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + " " +
      pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds()) + zone;
  }
  function relativeTime(date) {
    var seconds = Math.round((Date.now() - date.getTime()) / 1000);
    var future = seconds < 0;
    var s = Math.abs(seconds);
    var text;
    if (s < 45) return future ? "in a moment" : "just now";
    if (s < 3600) text = Math.max(1, Math.round(s / 60)) + " min";
    else if (s < 86400) text = Math.round(s / 3600) + " h";
    else if (s < 86400 * 30) text = Math.round(s / 86400) + (Math.round(s / 86400) === 1 ? " day" : " days");
    else return exactTime(date).slice(0, 10);
    return future ? "in " + text : text + " ago";
  }
  function renderTimes(scope) {
    (scope || document).querySelectorAll("time[data-relative][datetime]").forEach(function (el) {
      var date = new Date(el.getAttribute("datetime"));
      if (isNaN(date.getTime())) return;
      // Written only when it changed: each live list's refresh and the half-minute tick ask again for every
      // time on the page, and the same text written again still lays the page out.
      var text = relativeTime(date), title = exactTime(date);
      if (el.textContent !== text) el.textContent = text;
      if (el.title !== title) el.title = title;
    });
  }
  function syncZoneToggle() {
    var toggle = document.getElementById("time-zone-toggle");
    if (toggle) toggle.textContent = useUtc() ? "UTC" : "local time";
  }
  onContent(renderTimes);
  document.addEventListener("DOMContentLoaded", syncZoneToggle);
  setInterval(function () { renderTimes(document); }, 30000);
  document.addEventListener("click", function (event) {
    if (!event.target.closest("#time-zone-toggle")) return;
    store("console.timezone", useUtc() ? null : "utc");
    syncZoneToggle();
    renderTimes(document);
  });

  // Copy buttons (web/copy.html): the value to the clipboard, "Copied" for a moment.
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "visually-hidden";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } finally { area.remove(); }
    return Promise.resolve();
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button) return;
    copyText(button.dataset.copy).then(function () {
      button.dataset.copied = "";
      button.textContent = "Copied";
      setTimeout(function () {
        delete button.dataset.copied;
        button.textContent = "Copy";
      }, 1500);
    });
  });

  // Sortable columns: <th data-sort> in a table of one page of rows. The rendered rows are sorted here (a
  // page's worth, not the whole list), aria-sort says how, and the order survives an htmx refresh.
  var sortOrders = {};
  function sortKey(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    if (cell.dataset.sortValue !== undefined) return cell.dataset.sortValue;
    var time = cell.querySelector("time[datetime]");
    if (time) return time.getAttribute("datetime");
    return cell.textContent.trim().toLowerCase();
  }
  function compare(a, b) {
    var x = parseFloat(a);
    var y = parseFloat(b);
    if (!isNaN(x) && !isNaN(y) && String(x) === a && String(y) === b) return x - y;
    if (a === "" && b !== "") return 1;
    if (b === "" && a !== "") return -1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  function sortTable(table, index, direction) {
    var body = table.tBodies[0];
    if (!body) return;
    var rows = Array.prototype.slice.call(body.rows);
    if (rows.some(function (row) { return row.querySelector("td.empty"); })) return;
    var sorted = rows.slice().sort(function (a, b) {
      var order = compare(sortKey(a, index), sortKey(b, index));
      return direction === "descending" ? -order : order;
    });
    // Rows already in that order (a live list's refresh sorts again) are not moved.
    if (sorted.some(function (row, i) { return row !== rows[i]; })) {
      sorted.forEach(function (row) { body.appendChild(row); });
    }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      if (th.hasAttribute("data-sort")) {
        if (i === index) th.setAttribute("aria-sort", direction);
        else th.removeAttribute("aria-sort");
      }
    });
  }
  function tableKey(table) {
    var holder = table.closest("[id]");
    return holder ? holder.id : "";
  }
  onContent(function (scope) {
    var tables = scope.matches && scope.matches("table") ? [scope] : [];
    tables = tables.concat(Array.prototype.slice.call(scope.querySelectorAll("table")));
    tables.forEach(function (table) {
      if (!table.tHead) return;
      table.tHead.querySelectorAll("th[data-sort]").forEach(function (th) {
        if (th.querySelector("button")) return;
        var button = document.createElement("button");
        button.type = "button";
        while (th.firstChild) button.appendChild(th.firstChild);
        th.appendChild(button);
      });
      var order = sortOrders[tableKey(table)];
      if (order) sortTable(table, order.index, order.direction);
    });
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest("th[data-sort] > button");
    if (!button) return;
    var th = button.parentElement;
    var table = th.closest("table");
    var direction = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    sortTable(table, th.cellIndex, direction);
    sortOrders[tableKey(table)] = { index: th.cellIndex, direction: direction };
  });

  // Select the whole invite link on focus so it is one keystroke to copy.
  document.addEventListener("focusin", function (event) {
    if (event.target.matches("input[readonly]")) event.target.select();
  });
})();
