// The export of the service audit log (templates/audit_logs/list.html): fetches the window chunk by chunk
// through the console, moves the progress bar after each, then saves the rows as one file. Without this
// script the link downloads the same file in one streamed response.
(function () {
  "use strict";

  async function run(box, link) {
    var progress = box.querySelector("[data-export-progress]");
    var status = box.querySelector("[data-export-status]");
    var parts = [];
    var rows = 0;
    var bytes = 0;
    var cursor = "";
    var stopped = "";
    progress.hidden = false;
    progress.value = 0;
    link.setAttribute("aria-disabled", "true");
    try {
      for (;;) {
        // The chunks and bytes so far: past the console's bounds of one export it answers the notice that
        // ends the file (X-Export-Stopped) instead of asking the service for more.
        var url = box.dataset.chunkUrl + "&n=" + parts.length + "&sent=" + bytes +
          (cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
        var response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/x-ndjson" } });
        if (!response.ok) throw new Error("the console answered " + response.status);
        var part = await response.blob();
        parts.push(part);
        bytes += part.size;
        stopped = response.headers.get("X-Export-Stopped") || "";
        rows += parseInt(response.headers.get("X-Row-Count") || "0", 10);
        progress.value = parseInt(response.headers.get("X-Progress") || "0", 10);
        status.textContent = rows + " rows…";
        if (response.headers.get("X-Has-More") !== "true") break;
        cursor = response.headers.get("X-Next-Cursor") || "";
        if (!cursor) throw new Error("the service gave no cursor for the next chunk");
      }
      progress.value = 100;
      status.textContent = rows + " rows exported." + (stopped ? " The export stopped early: " + stopped + "." : "");
      var save = document.createElement("a");
      save.href = URL.createObjectURL(new Blob(parts, { type: "application/x-ndjson" }));
      save.download = "audit-log.jsonl";
      document.body.appendChild(save);
      save.click();
      save.remove();
    } catch (error) {
      status.textContent = "Export failed: " + error.message;
    } finally {
      link.removeAttribute("aria-disabled");
    }
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest("[data-export]");
    if (!link || link.getAttribute("aria-disabled") === "true") return;
    var box = link.closest("[data-chunk-url]");
    if (!box || !window.fetch) return;
    event.preventDefault();
    run(box, link);
  });
})();
