// The replay player (templates/browsers/panes/replay.html): clicking an event or a timeline marker seeks the
// video to that event's moment; playing highlights the events as they pass; ?t= (position) and ?event= (the
// selected event) follow along in the address bar, and a link holding them opens at that moment.
(function () {
  "use strict";

  function init(root) {
    if (root.dataset.ready) return;
    root.dataset.ready = "1";
    var video = root.querySelector("video");
    var list = root.querySelector("[data-replay-events]");
    var timeline = root.querySelector("[data-timeline]");
    var played = root.querySelector("[data-played]");
    var head = root.querySelector("[data-head]");
    var items = Array.prototype.slice.call(root.querySelectorAll("[data-replay-events] li[data-offset]"));
    var offsets = items.map(function (li) { return parseFloat(li.dataset.offset); });
    var selected = root.dataset.selected || "";
    var current = -1;
    var lastWritten = -1;

    function length() {
      var declared = parseFloat(root.dataset.length);
      if (isFinite(video.duration) && video.duration > 0) return video.duration;
      return declared > 0 ? declared : 0;
    }

    function writeUrl(seconds) {
      var url = new URL(window.location.href);
      url.searchParams.set("t", seconds.toFixed(3));
      if (selected) url.searchParams.set("event", selected);
      else url.searchParams.delete("event");
      window.history.replaceState(window.history.state, "", url.toString());
      lastWritten = seconds;
    }

    function scrollTo(li) {
      if (!li || !list) return;
      var top = li.offsetTop, bottom = top + li.offsetHeight;
      if (top < list.scrollTop || bottom > list.scrollTop + list.clientHeight) {
        list.scrollTop = Math.max(top - list.clientHeight / 3, 0);
      }
    }

    function select(seq) {
      selected = seq || "";
      items.forEach(function (li) {
        var on = li.dataset.seq === selected;
        li.classList.toggle("is-selected", on);
        var link = li.querySelector("a");
        if (on) link.setAttribute("aria-current", "true");
        else link.removeAttribute("aria-current");
        if (on) scrollTo(li);
      });
      root.dataset.selected = selected;
    }

    function highlight(seconds) {
      // The last event at or before the position (offsets are in time order).
      var index = -1;
      for (var i = 0; i < offsets.length; i++) {
        if (offsets[i] <= seconds + 0.0005) index = i; else break;
      }
      if (index !== current) {
        items.forEach(function (li, i) {
          li.classList.toggle("is-passed", i <= index);
          li.classList.toggle("is-current", i === index);
        });
        current = index;
        if (!video.paused && index >= 0) scrollTo(items[index]);
      }
      var total = length();
      var x = total > 0 ? Math.min(seconds / total, 1) * 1000 : 0;
      if (played) played.setAttribute("width", x.toFixed(1));
      if (head) head.setAttribute("x", Math.max(x - 1.5, 0).toFixed(1));
    }

    function seek(seconds, seq) {
      if (!isFinite(seconds)) return;
      select(seq);
      video.currentTime = seconds;
      highlight(seconds);
      writeUrl(seconds);
    }

    root.addEventListener("click", function (event) {
      var target = event.target.closest("[data-seek]");
      if (target && root.contains(target)) {
        event.preventDefault();
        seek(parseFloat(target.dataset.seek), target.dataset.event || "");
        return;
      }
      if (timeline && timeline.contains(event.target)) {
        var box = timeline.getBoundingClientRect();
        var fraction = Math.min(Math.max((event.clientX - box.left) / box.width, 0), 1);
        seek(fraction * length(), "");
      }
    });

    video.addEventListener("timeupdate", function () {
      highlight(video.currentTime);
      // While playing, the position follows in the URL about once a second.
      if (!video.paused && Math.abs(video.currentTime - lastWritten) >= 1) writeUrl(video.currentTime);
    });
    video.addEventListener("seeked", function () { highlight(video.currentTime); });
    // The markers were placed on the replay's declared length; the video's own duration is the truth.
    video.addEventListener("loadedmetadata", function () {
      var total = length();
      if (!(total > 0) || !timeline) return;
      timeline.querySelectorAll("[data-seek]").forEach(function (marker) {
        var rect = marker.querySelector("rect");
        var x = Math.min(parseFloat(marker.dataset.seek) / total, 1) * 1000;
        if (rect) rect.setAttribute("x", Math.max(x - 2.5, 0).toFixed(1));
      });
      highlight(video.currentTime);
    });
    video.addEventListener("pause", function () { writeUrl(video.currentTime); });

    // Opening a link to a moment: the position wins; without one, the selected event's moment.
    var start = parseFloat(root.dataset.position);
    if (selected) {
      select(selected);
      var chosen = items.filter(function (li) { return li.dataset.seq === selected; })[0];
      if (!isFinite(start) && chosen) start = parseFloat(chosen.dataset.offset);
    }
    if (isFinite(start)) {
      var apply = function () { video.currentTime = start; highlight(start); };
      if (video.readyState >= 1) apply();
      else video.addEventListener("loadedmetadata", apply, { once: true });
    }
    root.dataset.started = "1";
  }

  function scan(scope) {
    if (scope && scope.querySelectorAll) scope.querySelectorAll("[data-replay-player]").forEach(init);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { scan(document); });
  } else {
    scan(document);
  }
  document.addEventListener("htmx:load", function (event) { scan(event.target); });
})();
