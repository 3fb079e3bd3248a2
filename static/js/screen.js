// The live screen (templates/browsers/panes/screen.html) and the session wall (templates/browsers/wall.html).
//
// Frames come from the console's relay as server-sent events: "status" (JSON: s = session id, state, label,
// message) and "frame" (a JSON line: s, n = frame number, t = when the console sent it, c = when the browser
// captured it, both in ms since the epoch; then the base64 JPEG). The image shows the newest frame; the
// pane shows frames/s and latency (capture to display, as far as the clocks agree).
//
// Without a relay (data-snapshot-url only, or the relay said "unavailable"): the session's screenshots
// through the console, refreshed while the tab is visible.
//
// Input, only when the operator holds the control lease (data-control-token, renewed by a heartbeat): clicks (a single click waits 250 ms in
// case it becomes a double click), right clicks, wheel turns (summed over 120 ms), typed characters (sent
// together after 400 ms without typing) and key combinations go to data-input-url in order, one at a time.
// The server refuses input without control whatever this script does.
(function () {
  "use strict";

  var KEYS = {
    Enter: "Return", Tab: "Tab", Backspace: "BackSpace", Delete: "Delete", Escape: "Escape",
    ArrowUp: "Up", ArrowDown: "Down", ArrowLeft: "Left", ArrowRight: "Right", Home: "Home", End: "End",
    PageUp: "Page_Up", PageDown: "Page_Down", Insert: "Insert", ContextMenu: "Menu", " ": "space",
  };
  for (var f = 1; f <= 12; f++) KEYS["F" + f] = "F" + f;

  function csrf() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (e) {
      return "";
    }
  }

  function parseFrame(data) {
    var cut = data.indexOf("\n");
    if (cut < 0) return null;
    try {
      return { meta: JSON.parse(data.slice(0, cut)), jpeg: data.slice(cut + 1) };
    } catch (e) {
      return null;
    }
  }

  // A frame is a JPEG; the still picture shown before the first one (a screenshot) says it is a PNG.
  function frameSource(frame) {
    return "data:image/" + (frame.meta.f === "png" ? "png" : "jpeg") + ";base64," + frame.jpeg;
  }

  // Frames per second over the last second, and the median latency of the last 30 frames.
  // The first frame of a connection is the one the relay held, however old (a still page sends no new
  // ones): it counts as a frame, not for the latency.
  function Meter() {
    this.times = [];
    this.latencies = [];
    this.count = 0;
    this.held = true;
  }
  Meter.prototype.connected = function () {
    this.held = true;
  };
  Meter.prototype.add = function (meta) {
    var now = Date.now();
    this.count += 1;
    this.times.push(now);
    while (this.times.length && now - this.times[0] > 1000) this.times.shift();
    if (this.held) {
      this.held = false;
      return;
    }
    var from = typeof meta.c === "number" ? meta.c : meta.t;
    this.latencies.push(Math.max(0, now - from));
    if (this.latencies.length > 30) this.latencies.shift();
  };
  Meter.prototype.fps = function () {
    var now = Date.now();
    while (this.times.length && now - this.times[0] > 1000) this.times.shift();
    return this.times.length;
  };
  Meter.prototype.latency = function () {
    if (!this.latencies.length) return null;
    var sorted = this.latencies.slice().sort(function (a, b) { return a - b; });
    return Math.round(sorted[Math.floor(sorted.length / 2)]);
  };

  // console.js knows where to sign in and comes back to this page; the server's link is the fallback.
  function signInLink(fallback) {
    if (window.consoleAccess) return window.consoleAccess.signInLink();
    var link = document.createElement("a");
    link.href = fallback;
    link.textContent = "sign in again";
    return link;
  }

  function accessEnded(options) {
    if (window.consoleAccess) window.consoleAccess.ended(options || { quiet: true });
  }

  // A write to the page only where it changes something: the same text written again still lays the page out.
  function setText(element, text) {
    if (element.textContent !== text) element.textContent = text;
  }

  function setState(chip, status) {
    if (!chip) return;
    var className = "live-status live-status--" + status.state;
    if (chip.className !== className) chip.className = className;
    if (chip.dataset.state !== status.state) chip.dataset.state = status.state;
    setText(chip, status.label);
    if (chip.title !== (status.message || "")) chip.title = status.message || "";
  }

  // Session page -----------------------------------------------------------------------------------

  // Access ended (console/live/guard.py, or a snapshot's answer): no more frames, no more input, a way to
  // sign in again.
  function accessLost(pane, source, label, fallback) {
    if (source) source.close();
    stopSnapshots(pane);
    var chip = pane.querySelector("[data-screen-state]");
    var note = pane.querySelector("[data-screen-note]");
    var stats = pane.querySelector("[data-screen-stats]");
    setState(chip, { state: "ended", label: "Ended", message: label });
    pane.dataset.state = "ended";
    pane.dataset.accessEnded = "";
    // Control went with access: no more input, no control form, no "you control" frame.
    loseControl(pane);
    pane.querySelectorAll(".screen__control, .screen__help").forEach(function (el) { el.hidden = true; });
    if (stats) stats.textContent = "no frames";
    if (note) {
      note.hidden = false;
      note.textContent = "";
      note.append("Access ended — ", signInLink(fallback), ".");
    }
    accessEnded();
  }

  // Control lost (released elsewhere, taken over after it lapsed, the membership changed): no more input.
  function loseControl(pane, message) {
    if (pane._renewTimer) clearInterval(pane._renewTimer);
    pane._renewTimer = null;
    delete pane.dataset.controlToken;
    var stage = pane.querySelector("[data-screen-stage]");
    if (stage) stage.classList.remove("screen__stage--control");
    if (message) {
      var driver = pane.querySelector("[data-screen-driver]");
      if (driver) driver.textContent = message;
    }
    if (pane._tabs) renderTabs(pane, pane._tabs); // read-only from now on
  }

  // The tab strip (the stream's "tabs" events): every page of the browser, the one the screen shows marked.
  // The driver's page gets buttons that bring a tab to front (the screen follows it); everyone else, text.
  // Titles and URLs are the page's own: text nodes only.
  function renderTabs(pane, body) {
    pane._tabs = body;
    var strip = pane.querySelector("[data-screen-tabs]");
    if (!strip) return;
    var list = strip.querySelector("[data-screen-tab-list]");
    var driving = Boolean(pane.dataset.controlToken) && !pane.hasAttribute("data-access-ended");
    var focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.closest("[data-tab]") : null;
    var refocus = focused ? focused.dataset.tab : "";
    list.replaceChildren();
    body.tabs.forEach(function (tab) {
      var shown = tab.id === body.shown;
      var item = document.createElement("li");
      item.className = "screen__tab" + (shown ? " screen__tab--shown" : "");
      item.dataset.tab = tab.id;
      if (shown) item.dataset.shown = "";
      var face = document.createElement(driving ? "button" : "span");
      var title = document.createElement("span");
      title.className = "screen__tab-title";
      title.textContent = tab.title || tab.url || "Untitled";
      var url = document.createElement("span");
      url.className = "screen__tab-url";
      url.textContent = tab.url;
      face.append(title, url);
      face.title = (tab.title ? tab.title + "\n" : "") + tab.url;
      if (driving) {
        face.type = "button";
        face.setAttribute("aria-pressed", shown ? "true" : "false");
        face.addEventListener("click", function () { bringTab(pane, tab.id); });
      } else if (shown) {
        face.setAttribute("aria-current", "page");
      }
      item.append(face);
      list.append(item);
    });
    if (body.more) {
      var more = document.createElement("li");
      more.className = "muted";
      more.textContent = "and more (the first " + body.tabs.length + " are listed)";
      list.append(more);
    }
    strip.hidden = body.tabs.length === 0;
    if (refocus) {
      var again = list.querySelector("[data-tab='" + CSS.escape(refocus) + "'] > button");
      if (again) again.focus();
    }
  }

  function bringTab(pane, id) {
    var strip = pane.querySelector("[data-screen-tabs]");
    var note = strip.querySelector("[data-screen-tabs-note]");
    if (!pane.dataset.controlToken || !strip.dataset.tabUrl) return;
    note.hidden = true;
    fetch(strip.dataset.tabUrl, {
      method: "POST",
      body: new URLSearchParams({ target: id }),
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), "X-Screen-Control": pane.dataset.controlToken },
    }).then(function (response) {
      if (response.status === 204) return document.dispatchEvent(new CustomEvent("screen-changed"));
      var verdict = window.consoleAccess ? window.consoleAccess.verdict(response.status, response.url, response.redirected) : "";
      if (verdict === "signed-out" || verdict === "forbidden") return accessLost(pane, pane._screenSource, "Access ended — sign in again", "");
      return response.text().then(function (message) {
        note.hidden = false;
        note.textContent = verdict === "gone" ? "Not found: gone, or no longer yours to see." : message;
        if (response.status === 409 && /control|driving/i.test(message)) loseControl(pane, message);
      });
    }).catch(function () {
      note.hidden = false;
      note.textContent = "The tab could not be switched: the console did not answer.";
    });
  }

  // The screen as screenshots through the console (a session the console cannot relay, or whose relay was
  // refused): one at a time, every data-snapshot-seconds while the tab is visible.
  function startSnapshots(pane, why) {
    if (pane._snapshots || !pane.dataset.snapshotUrl) return;
    var image = pane.querySelector("[data-screen-image]");
    var note = pane.querySelector("[data-screen-note]");
    var chip = pane.querySelector("[data-screen-state]");
    var every = 1000 * Number(pane.dataset.snapshotSeconds || 2);
    var state = { timer: null, stopped: false, count: 0 };
    pane._snapshots = state;
    pane.dataset.mode = "snapshots";
    var mode = pane.querySelector("[data-screen-mode]");
    if (mode && why) mode.textContent = "Screenshots through the console (" + why + ")";
    function again() {
      if (!state.stopped) state.timer = setTimeout(load, every);
    }
    function load() {
      if (state.stopped) return;
      if (!document.body.contains(pane)) return stopSnapshots(pane);
      if (document.hidden) return again();
      fetch(pane.dataset.snapshotUrl + "?at=" + Date.now(), { credentials: "same-origin", cache: "no-store" })
        .then(function (response) {
          var verdict = window.consoleAccess ? window.consoleAccess.verdict(response.status, response.url, response.redirected) : "";
          if (verdict === "signed-out" || verdict === "forbidden") return accessLost(pane, null, "Access ended — sign in again", "");
          if (verdict === "gone") {
            // (A member removed from the org gets 404 too: the console does not say whether it exists.)
            // An ended session's pane says so, and the page's header changes with it.
            checkEnded(pane);
            stopSnapshots(pane);
            loseControl(pane);
            pane.querySelectorAll(".screen__control").forEach(function (el) { el.hidden = true; });
            setState(chip, { state: "ended", label: "Ended", message: "Not found: gone, or no longer yours to see" });
            pane.dataset.state = "ended";
            note.hidden = false;
            note.textContent = "Ended: not found (gone, or no longer yours to see).";
            return;
          }
          if (!response.ok || (response.headers.get("Content-Type") || "").indexOf("image/") !== 0) {
            return response.text().then(function (text) {
              setState(chip, { state: "reconnecting", label: "Retrying…", message: text.slice(0, 200) });
              note.hidden = false;
              note.textContent = "No screenshot: " + (text.slice(0, 200) || "HTTP " + response.status) + ". Trying again.";
              again();
            });
          }
          return response.blob().then(readAsDataUrl).then(function (dataUrl) {
            if (state.stopped) return;
            image.src = dataUrl; // (a data: URL: the page's policy loads images from itself and data: only)
            state.count += 1;
            pane.dataset.frames = String(state.count);
            setState(chip, { state: "live", label: "Live" });
            note.hidden = true;
            again();
          });
        })
        .catch(function () {
          setState(chip, { state: "reconnecting", label: "Retrying…" });
          again();
        });
    }
    load();
  }

  function readAsDataUrl(blob) {
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () { resolve(reader.result); };
      reader.onerror = reject;
      reader.readAsDataURL(blob);
    });
  }

  function stopSnapshots(pane) {
    var state = pane._snapshots;
    if (!state) return;
    state.stopped = true;
    clearTimeout(state.timer);
  }

  // The holder's page renews its control lease while it stays open (the server also renews it with each
  // action); a refusal means control ended: the page stops sending input and says who drives now.
  function keepControl(pane) {
    var every = 1000 * Number(pane.dataset.renewSeconds || 30);
    pane._renewTimer = setInterval(function () {
      if (!document.body.contains(pane)) return clearInterval(pane._renewTimer);
      if (!pane.dataset.controlToken || pane.hasAttribute("data-access-ended")) return;
      fetch(pane.dataset.controlUrl, {
        method: "POST",
        body: new URLSearchParams({ action: "renew" }),
        credentials: "same-origin",
        headers: { "X-CSRFToken": csrf(), "X-Screen-Control": pane.dataset.controlToken },
      }).then(function (response) {
        if (response.status === 409) return response.text().then(function (text) { loseControl(pane, text); });
      }).catch(function () { /* the next beat tries again; an action says more */ });
    }, every);
  }

  // Presence and handoff ---------------------------------------------------------------------------
  //
  // The page's window (one id per page load) checks in every data-presence-seconds: the answer is the
  // control bar as the database has it (who drives, who watches, requests, a notice for this window), the
  // same whichever console process answers. The bar's data-control says what this window is: "mine" (it
  // holds the lease with its token), "claim" (control was handed to it: it takes it), "other" or "free".

  var WINDOW_ID = Array.from(crypto.getRandomValues(new Uint8Array(16)), function (b) {
    return (b % 36).toString(36);
  }).join("");

  function csrfToken() {
    return csrf();
  }

  function controlsOf(pane) {
    return pane.querySelector("[data-screen-controls]");
  }

  // What the bar says about this window, applied to the pane: control lost (no more input), or handed
  // to it (claimed with a take, which redraws the pane with its token).
  function syncControl(pane) {
    var bar = controlsOf(pane);
    if (!bar) return;
    var state = bar.dataset.control;
    if (pane.dataset.controlToken && state !== "mine") loseControl(pane);
    if (state === "claim" && !pane._claiming && window.htmx && bar.dataset.claimUrl) {
      pane._claiming = true;
      window.htmx.ajax("POST", bar.dataset.claimUrl, { target: pane, swap: "outerHTML", values: { action: "take", window: WINDOW_ID } });
    }
  }

  // The bar as drawn, without what changes at every drawing (each form's CSRF token is masked anew).
  function drawn(bar) {
    return bar.outerHTML.replace(/name="csrfmiddlewaretoken" value="[^"]*"/g, "");
  }

  function replaceControls(pane, html) {
    var bar = controlsOf(pane);
    if (!bar) return;
    var holder = document.createElement("div");
    holder.innerHTML = html;
    var fresh = holder.querySelector("[data-screen-controls]");
    if (!fresh) return;
    // What the bar was told (an answer to the user's action, a request declined, a take-over) stays
    // until the state changes: later check-ins say nothing new, not that it is over.
    var told = bar.querySelector("[data-screen-notice]");
    var who = fresh.querySelector(".screen__who");
    if (told && who && !fresh.querySelector("[data-screen-notice]") && fresh.dataset.control === bar.dataset.control) {
      who.after(told.cloneNode(true));
    }
    // A button the user is about to press keeps its place: only a bar that changed is replaced, and the
    // focus stays on the same button when it is still there.
    if (drawn(bar) === drawn(fresh)) return;
    var focused = bar.contains(document.activeElement) ? document.activeElement.textContent : null;
    bar.replaceWith(fresh);
    if (window.htmx) window.htmx.process(fresh);
    if (focused !== null) {
      var same = Array.from(fresh.querySelectorAll("button")).filter(function (b) { return b.textContent === focused; })[0];
      if (same) same.focus();
    }
  }

  function checkIn(pane) {
    var bar = controlsOf(pane);
    if (!bar || !bar.dataset.presenceUrl || pane._presence) return;
    var every = 1000 * Number(bar.dataset.presenceSeconds || 2);
    var url = bar.dataset.presenceUrl;
    var state = { timer: null, stopped: false };
    pane._presence = state;
    function again() {
      if (!state.stopped) state.timer = setTimeout(once, every);
    }
    function once() {
      if (state.stopped) return;
      if (!document.body.contains(pane)) return (state.stopped = true);
      if (pane.hasAttribute("data-access-ended") || pane.dataset.sessionEnded) return (state.stopped = true);
      var headers = { "X-CSRFToken": csrfToken(), "HX-Request": "true" };
      if (pane.dataset.controlToken) headers["X-Screen-Control"] = pane.dataset.controlToken;
      fetch(url, { method: "POST", body: new URLSearchParams({ window: WINDOW_ID }), credentials: "same-origin", headers: headers })
        .then(function (response) {
          if (response.status === 409) return sessionEnded(pane);
          var verdict = window.consoleAccess ? window.consoleAccess.verdict(response.status, response.url, response.redirected) : "";
          if (verdict === "signed-out" || verdict === "forbidden") return accessLost(pane, pane._screenSource, "Access ended — sign in again", "");
          if (!response.ok) return again();
          return response.text().then(function (html) {
            replaceControls(pane, html);
            syncControl(pane);
            again();
          });
        })
        .catch(again);
    }
    once();
  }

  function stopPresence(pane) {
    if (!pane._presence) return;
    pane._presence.stopped = true;
    clearTimeout(pane._presence.timer);
  }

  // The page goes away: its window watches no more (a beacon: it outlives the page).
  window.addEventListener("pagehide", function () {
    document.querySelectorAll("[data-screen-controls][data-presence-url]").forEach(function (bar) {
      var body = new FormData();
      body.append("window", WINDOW_ID);
      body.append("leave", "1");
      body.append("csrfmiddlewaretoken", csrfToken());
      if (navigator.sendBeacon) navigator.sendBeacon(bar.dataset.presenceUrl, body);
    });
  });

  // Requests sent from the pane (take, ask, grant…) carry this window's id and the pane's token.
  document.addEventListener("htmx:configRequest", function (event) {
    var pane = event.detail.elt && event.detail.elt.closest && event.detail.elt.closest("[data-screen]");
    if (!pane) return;
    event.detail.parameters.window = WINDOW_ID;
    if (pane.dataset.controlToken) event.detail.headers["X-Screen-Control"] = pane.dataset.controlToken;
  });


  // The session ended while watched: the pane is drawn again (it says so, no controls), and the page
  // is told (console:session-ended: the header's badge, uptime and actions change with it).
  function sessionEnded(pane) {
    if (pane.dataset.sessionEnded) return;
    pane.dataset.sessionEnded = "1";
    stopPresence(pane);
    loseControl(pane);
    stopSnapshots(pane);
    if (pane._screenSource) pane._screenSource.close();
    document.dispatchEvent(new CustomEvent("console:session-ended"));
    if (window.htmx && pane.dataset.paneUrl) {
      window.htmx.ajax("GET", pane.dataset.paneUrl, { target: pane, swap: "outerHTML" });
    }
  }

  // The screen is gone (404 for a screenshot): an ended session, or no access any more. The pane, asked
  // again, tells which: drawn as ended, or refused (and left as it is).
  function checkEnded(pane) {
    if (!pane.dataset.paneUrl || pane.dataset.sessionEnded) return;
    fetch(pane.dataset.paneUrl, { credentials: "same-origin", headers: { "HX-Request": "true", "HX-Target": "screen-pane" } })
      .then(function (response) {
        if (!response.ok || response.redirected) return null;
        return response.text();
      })
      .then(function (html) {
        if (html && html.indexOf('data-mode="none"') >= 0) sessionEnded(pane);
      })
      .catch(function () {});
  }

  function initScreen(pane) {
    if (pane.dataset.screenReady) return;
    pane.dataset.screenReady = "1";
    checkIn(pane);
    if (pane.dataset.controlToken) {
      keepControl(pane);
      drive(pane);
    }
    if (!pane.dataset.streamUrl) {
      startSnapshots(pane, "");
      return;
    }
    var image = pane.querySelector("[data-screen-image]");
    var note = pane.querySelector("[data-screen-note]");
    var chip = pane.querySelector("[data-screen-state]");
    var stats = pane.querySelector("[data-screen-stats]");
    var meter = new Meter();
    var source = new EventSource(pane.dataset.streamUrl);
    pane._screenSource = source;
    source.onopen = function () { meter.connected(); };

    source.addEventListener("status", function (event) {
      var status = JSON.parse(event.data);
      if (status.sign_in) return accessLost(pane, source, status.label, status.sign_in);
      setState(chip, status);
      pane.dataset.state = status.state;
      if (status.state === "ended" || status.state === "unavailable" || status.state === "refused") {
        source.close();
        if (status.state === "ended") sessionEnded(pane);
        note.hidden = false;
        note.textContent = status.label + (status.message ? ": " + status.message : "") + ".";
        // Refused for now (no browser free): said, and tried again only when the operator asks.
        if (status.state === "refused" && pane.dataset.paneUrl && window.htmx) {
          var retry = document.createElement("button");
          retry.type = "button";
          retry.textContent = "Retry";
          retry.addEventListener("click", function () {
            window.htmx.ajax("GET", pane.dataset.paneUrl, { target: pane, swap: "outerHTML" });
          });
          note.append(" ", retry);
        }
        // The relay could not show it: the screenshots through the console can (never the service's URL).
        if (status.state === "unavailable") {
          stats.textContent = "";
          startSnapshots(pane, "the relay: " + (status.message || status.label));
        }
      }
    });
    source.addEventListener("tabs", function (event) {
      var body;
      try { body = JSON.parse(event.data); } catch (e) { return; }
      if (body && Array.isArray(body.tabs)) renderTabs(pane, body);
    });
    source.addEventListener("frame", function (event) {
      var frame = parseFrame(event.data);
      if (!frame) return;
      image.src = frameSource(frame);
      if (!note.hidden) note.hidden = true;
      meter.add(frame.meta);
      pane.dataset.frames = String(meter.count);
    });
    source.onerror = function () {
      if (source.readyState === EventSource.CONNECTING) {
        setState(chip, { state: "reconnecting", label: "Reconnecting…" });
        return;
      }
      // Closed: the console answered something that is not a stream (the login page after signing out
      // elsewhere, 404, 204 once the screen ended). Never "Live" after that: ask once why.
      setState(chip, { state: "ended", label: "Ended", message: "The stream closed" });
      pane.dataset.state = "ended";
      if (!window.consoleAccess) return;
      window.consoleAccess.probe(pane.dataset.streamUrl).then(function (verdict) {
        if (verdict === "signed-out" || verdict === "forbidden") accessLost(pane, source, "Access ended — sign in again", "");
        else if (verdict === "gone") setState(chip, { state: "ended", label: "Ended", message: "Not found: gone, or no longer yours to see" });
      });
    };
    var timer = setInterval(function () {
      if (!document.body.contains(pane)) {
        source.close();
        clearInterval(timer);
        return;
      }
      if (pane.hasAttribute("data-access-ended") || pane._snapshots) return; // "no frames" stays
      var latency = meter.latency();
      // (A still page's line stays the same: it is not written again.)
      setText(stats, meter.fps() + " fps · " + (latency === null ? "—" : latency) + " ms");
    }, 500);
  }

  function drive(pane) {
    var stage = pane.querySelector("[data-screen-stage]");
    var image = pane.querySelector("[data-screen-image]");
    var pointer = pane.querySelector("[data-screen-pointer]");
    var note = pane.querySelector("[data-screen-note]");
    var width = Number(pane.dataset.width), height = Number(pane.dataset.height);
    var queue = Promise.resolve();
    var text = "", textTimer = null, clickTimer = null, wheel = null;

    function at(event) {
      var box = image.getBoundingClientRect();
      var x = Math.floor(((event.clientX - box.left) * width) / box.width);
      var y = Math.floor(((event.clientY - box.top) * height) / box.height);
      return { x: Math.min(width - 1, Math.max(0, x)), y: Math.min(height - 1, Math.max(0, y)) };
    }

    function say(message) {
      note.hidden = false;
      note.textContent = message;
    }

    function send(fields) {
      var body = new URLSearchParams(fields);
      queue = queue.then(function () {
        return fetch(pane.dataset.inputUrl, {
          method: "POST",
          body: body,
          credentials: "same-origin",
          headers: { "X-CSRFToken": csrf(), "X-Screen-Control": pane.dataset.controlToken },
        }).then(function (response) {
          // The screen changed: other views of it (the computer pane's screenshot) look again.
          if (response.status === 204) return document.dispatchEvent(new CustomEvent("screen-changed"));
          // Not a member any more (404), below operator (403), signed out (the login page): access ended.
          var verdict = window.consoleAccess ? window.consoleAccess.verdict(response.status, response.url, response.redirected) : "";
          if (verdict === "signed-out" || verdict === "forbidden") return accessLost(pane, pane._screenSource, "Access ended — sign in again", "");
          if (verdict === "gone") {
            loseControl(pane, "Not found: gone, or no longer yours to see");
            return say("Nothing was sent: not found (gone, or no longer yours to see).");
          }
          return response.text().then(function (message) {
            say(message);
            if (response.status === 409) loseControl(pane, message);
          });
        }).catch(function () { say("The action could not reach the console."); });
      });
      return queue;
    }

    function flushText() {
      clearTimeout(textTimer);
      if (text) send({ kind: "type", text: text });
      text = "";
    }

    function active() {
      return Boolean(pane.dataset.controlToken);
    }

    stage.addEventListener("mousemove", function (event) {
      var box = stage.getBoundingClientRect();
      pointer.hidden = false;
      pointer.style.transform =
        "translate(" + (event.clientX - box.left) + "px," + (event.clientY - box.top) + "px)";
    });
    stage.addEventListener("mouseleave", function () { pointer.hidden = true; });
    stage.addEventListener("click", function (event) {
      if (!active()) return;
      stage.focus();
      var point = at(event);
      flushText();
      clearTimeout(clickTimer);
      if (event.detail > 1) return; // the dblclick handler sends it
      clickTimer = setTimeout(function () {
        send({ kind: "click", x: point.x, y: point.y, hold: modifiers(event).join(" ") });
      }, 250);
    });
    stage.addEventListener("dblclick", function (event) {
      if (!active()) return;
      clearTimeout(clickTimer);
      var point = at(event);
      send({ kind: "dblclick", x: point.x, y: point.y });
    });
    stage.addEventListener("contextmenu", function (event) {
      if (!active()) return;
      event.preventDefault();
      flushText();
      var point = at(event);
      send({ kind: "rightclick", x: point.x, y: point.y });
    });
    stage.addEventListener(
      "wheel",
      function (event) {
        if (!active()) return;
        event.preventDefault();
        var point = at(event);
        if (!wheel) {
          wheel = { kind: "scroll", x: point.x, y: point.y, dx: 0, dy: 0 };
          setTimeout(function () {
            var done = wheel;
            wheel = null;
            done.dx = Math.round(Math.max(-5000, Math.min(5000, done.dx)));
            done.dy = Math.round(Math.max(-5000, Math.min(5000, done.dy)));
            if (done.dx || done.dy) {
              flushText();
              send(done);
            }
          }, 120);
        }
        var scale = event.deltaMode === 1 ? 40 : event.deltaMode === 2 ? height : 1;
        wheel.dx += event.deltaX * scale;
        wheel.dy += event.deltaY * scale;
      },
      { passive: false }
    );
    stage.addEventListener("keydown", function (event) {
      if (!active()) return;
      if (["Control", "Shift", "Alt", "Meta", "AltGraph", "CapsLock"].indexOf(event.key) >= 0) return;
      var held = modifiers(event).filter(function (m) { return m !== "Shift"; });
      var named = KEYS[event.key];
      event.preventDefault();
      // AltGr (reported as Ctrl+Alt on Windows) makes a character (@ on a German keyboard): typed text.
      var altGraph = event.getModifierState && event.getModifierState("AltGraph");
      if ((!held.length || altGraph) && event.key.length === 1) {
        text += event.key;
        clearTimeout(textTimer);
        textTimer = setTimeout(flushText, 400);
        return;
      }
      if (!named && event.key.length !== 1) return;
      flushText();
      var all = modifiers(event);
      if (event.key.length === 1) all = held; // Shift is already in the character
      send({ kind: "keys", keys: all.concat([named || event.key]).join("+") });
    });
  }

  function modifiers(event) {
    var held = [];
    if (event.ctrlKey) held.push("Ctrl");
    if (event.altKey) held.push("Alt");
    if (event.shiftKey) held.push("Shift");
    if (event.metaKey) held.push("Super");
    return held;
  }

  // Session header -----------------------------------------------------------------------------------
  //
  // Its uptime ticks (from what the service said when the page was drawn); when the page learns the session
  // ended (console:session-ended), the header is asked for again: the badge, uptime and actions change.

  function formatDuration(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    var days = Math.floor(seconds / 86400), hours = Math.floor((seconds % 86400) / 3600);
    var minutes = Math.floor((seconds % 3600) / 60), secs = seconds % 60;
    if (days) return days + " d " + hours + " h";
    if (hours) return hours + " h " + minutes + " min";
    if (minutes) return minutes + " min " + secs + " s";
    return secs + " s";
  }

  function initHead(head) {
    if (head._ticking) return;
    var uptime = head.querySelector("[data-uptime][data-uptime-seconds]");
    if (!uptime || head.hasAttribute("data-ended")) return;
    var base = Number(uptime.dataset.uptimeSeconds), since = Date.now();
    head._ticking = setInterval(function () {
      if (!document.body.contains(uptime)) return clearInterval(head._ticking);
      setText(uptime, formatDuration(base + (Date.now() - since) / 1000)); // past an hour, once a minute
    }, 1000);
  }

  document.addEventListener("console:session-ended", function () {
    document.querySelectorAll("[data-session-head][data-head-url]").forEach(function (head) {
      if (head.hasAttribute("data-ended") || !window.htmx) return;
      clearInterval(head._ticking);
      window.htmx.ajax("GET", head.dataset.headUrl, { target: head, swap: "outerHTML" });
    });
  });

  // Session wall -----------------------------------------------------------------------------------
  //
  // A live tile holds a CDP connection at the console, which keeps its browser awake: the wall asks for the
  // tiles on screen only (an IntersectionObserver), at most data-live-max of them (the ones the viewer asked
  // to see first, then in page order), and none while the tab is hidden. When that set changes, the one
  // stream is opened again for the new set (the console keeps a screen's upstream a few seconds after its
  // last viewer, so the tiles that stay are not reconnected). The console may pause more (its bounds per
  // viewer and per organization). A tile that is not live says why, in words, with what can be done. Every
  // awake tile starts with a still picture (the console's screenshot, in the page's markup, loaded lazily),
  // so a wall of more tiles than may be live shows every session at once; live frames replace it.

  var DONE = ["ended", "unavailable", "refused", "no-screen"];

  function initWall(wall) {
    if (wall.dataset.wallReady || !wall.dataset.streamUrl) return;
    wall.dataset.wallReady = "1";
    var max = Math.max(1, Number(wall.dataset.liveMax || 4));
    var tiles = {}, order = [], visible = {}, first = [], done = {};
    var source = null, current = null, timer = null;
    // This page's name at the console: a new stream of it replaces the one just closed at once.
    var name = Array.from(crypto.getRandomValues(new Uint8Array(12)), function (b) { return (b % 36).toString(36); }).join("");
    wall.querySelectorAll("[data-tile][data-relay]").forEach(function (tile) {
      tiles[tile.dataset.tile] = tile;
      order.push(tile.dataset.tile);
      // Its still picture (the console's screenshot) could not be had: an empty tile, not a broken image.
      var image = tile.querySelector("[data-tile-image]");
      image.addEventListener("error", function () {
        if (image.getAttribute("src") && image.getAttribute("src").indexOf("data:") !== 0) image.removeAttribute("src");
      });
    });

    function say(id, status, why, action) {
      var tile = tiles[id];
      tile.dataset.state = status.state;
      setState(tile.querySelector("[data-tile-state]"), status);
      var line = tile.querySelector("[data-tile-why]");
      // A session in standby (the console read it from the list) says so while it is not shown.
      if (tile.dataset.standby && status.state === "paused") why = (why ? why + " " : "") + tile.dataset.standby;
      if (line) line.textContent = why || "";
      var button = tile.querySelector("[data-tile-action]");
      if (button) {
        button.hidden = !action;
        button.textContent = action || "";
        button.dataset.action = action ? (action === "Retry" ? "retry" : "show") : "";
      }
    }

    function wanted() {
      var ids = [];
      first.concat(order).forEach(function (id) {
        if (visible[id] && !done[id] && ids.indexOf(id) < 0) ids.push(id);
      });
      return ids.slice(0, max);
    }

    function close() {
      if (source) source.close();
      source = null;
      current = null;
    }

    function update() {
      timer = null;
      if (!document.body.contains(wall)) return close();
      if (window.consoleAccess && window.consoleAccess.isEnded()) return close();
      var live = document.hidden ? [] : wanted();
      order.forEach(function (id) {
        if (done[id] || live.indexOf(id) >= 0) return;
        var paused = { state: "paused", label: "Paused" };
        if (document.hidden) say(id, paused, "Paused while this tab is hidden.", "");
        else if (!visible[id]) say(id, paused, "Paused: off screen.", "");
        else say(id, paused, "Paused: at most " + max + " live tile" + (max === 1 ? "" : "s") + " at once.", "Show live");
      });
      var key = live.join(" ");
      if (key === current) return;
      close();
      current = key;
      if (!live.length) return;
      live.forEach(function (id) {
        if (tiles[id].dataset.state === "paused") say(id, { state: "connecting", label: "Connecting…" }, "", "");
      });
      var query = live.map(function (id) { return "id=" + encodeURIComponent(id); }).join("&") + "&wall=" + name;
      source = new EventSource(wall.dataset.streamUrl + "?" + query);
      var mine = source;
      source.addEventListener("status", function (event) {
        var status = JSON.parse(event.data);
        if (!tiles[status.s]) return;
        if (status.sign_in) {
          // Access ended: each tile says "Ended", the page says why once, with the link to sign in again.
          order.forEach(function (id) { done[id] = true; say(id, { state: "ended", label: "Ended", message: status.label }, status.label, ""); });
          close();
          accessEnded({ quiet: false });
          return;
        }
        var why = status.message ? status.label + ": " + status.message + "." : "";
        if (status.state === "paused") {
          say(status.s, status, "Paused by the console: " + status.message + ".", "Retry");
        } else if (DONE.indexOf(status.state) >= 0) {
          done[status.s] = true;
          say(status.s, status, why || status.label + ".", status.state === "ended" ? "" : "Retry");
        } else {
          say(status.s, status, status.state === "live" ? "" : why, "");
        }
        // Nothing more will come on this stream (every tile over or paused): no reconnecting.
        var over = live.every(function (id) { return done[id] || tiles[id].dataset.state === "paused"; });
        if (over && source === mine) {
          source.close();
          source = null;
        }
      });
      source.addEventListener("frame", function (event) {
        var frame = parseFrame(event.data);
        if (!frame || !tiles[frame.meta.s]) return;
        var tile = tiles[frame.meta.s];
        tile.querySelector("[data-tile-image]").src = frameSource(frame);
        tile.dataset.frames = String(Number(tile.dataset.frames || 0) + 1);
      });
    }

    function schedule() {
      if (!timer) timer = setTimeout(update, 200);
    }

    wall.addEventListener("click", function (event) {
      var button = event.target.closest("[data-tile-action]");
      if (!button) return;
      var id = button.closest("[data-tile]").dataset.tile;
      first = [id].concat(first.filter(function (other) { return other !== id; }));
      delete done[id];
      current = null; // asked again, even for the same set (a retry)
      schedule();
    });
    if ("IntersectionObserver" in window) {
      var observer = new IntersectionObserver(function (entries) {
        entries.forEach(function (entry) { visible[entry.target.dataset.tile] = entry.isIntersecting; });
        schedule();
      });
      order.forEach(function (id) { observer.observe(tiles[id]); });
    } else {
      order.forEach(function (id) { visible[id] = true; });
      schedule();
    }
    document.addEventListener("visibilitychange", schedule);
    document.addEventListener("console:access-ended", close);
  }

  function init(root) {
    root = root || document;
    if (root.matches && root.matches("[data-screen]")) initScreen(root);
    if (root.matches && root.matches("[data-wall]")) initWall(root);
    root.querySelectorAll("[data-screen]").forEach(initScreen);
    root.querySelectorAll("[data-wall]").forEach(initWall);
    // A control bar swapped in by an answer (ask, grant, decline): the pane does what it says at once.
    if (root.matches && root.matches("[data-screen-controls]") && root.closest("[data-screen]")) {
      syncControl(root.closest("[data-screen]"));
    }
    if (root.matches && root.matches("[data-session-head]")) initHead(root);
    root.querySelectorAll("[data-session-head]").forEach(initHead);
  }

  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (event) { init(event.target); });
  document.addEventListener("htmx:beforeSwap", function (event) {
    // A pane replaced (take/release control) closes its stream; the new one opens its own.
    var old = event.detail.target;
    if (!old) return;
    // A session tab replaced (templates/browsers/_tabs.html) takes the screen pane inside it along.
    var panes = old.querySelectorAll ? Array.prototype.slice.call(old.querySelectorAll("[data-screen]")) : [];
    panes.concat([old]).forEach(function (pane) {
      if (pane._screenSource) pane._screenSource.close();
      if (pane._snapshots) stopSnapshots(pane);
      if (pane._renewTimer) clearInterval(pane._renewTimer);
      if (pane._presence) stopPresence(pane);
    });
  });
})();
