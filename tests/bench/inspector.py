"""Issue 22, "Tests and figures": the session page as an inspector, in headless Chromium.

One sandbox (simulated engine, no generated telemetry), one session with 150 console events in its history.
For each console measured (this checkout's, and with ``INSPECTOR_BASELINE=<a checkout>`` the page before,
from that checkout, interleaved round by round), ``ROUNDS`` fresh page loads of the session page at 1440 px:

- first useful paint, from navigation start (``performance.timeOrigin``; times taken in the page by an init
  script's MutationObserver, so the bench's own calls cost nothing): the first screen frame shown (the
  screen pane's image decoded), the telemetry's first rows (the history page), and 100 events shown (the
  bench bursts 100 more the moment the page commits, so they arrive live through the relay);
- then the memory of a pane that has held 10,000 events: 10,000 more are burst, and once the last one is
  in the page, after a garbage collection, Chromium's JS heap and DOM node count (CDP ``Performance``).
  The pane keeps its newest 1,000 rows (``MAX_ROWS``), so this is what 10,000 events leave behind.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.bench import harness
from tests.sandbox_fixtures import new_tenant

ROUNDS = int(os.environ.get("INSPECTOR_ROUNDS", "5"))
HISTORY = 150
LIVE = 100
HELD = 10_000
CHUNK = 1_000  # bursts of this many, each shown before the next (one of 10,000 lags a viewer: it resyncs)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
TELEMETRY = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}

# Marks, in ms since navigation start: first screen frame, first telemetry row, 100 rows.
WATCH = """
(() => {
  const marks = (window.__marks = {});
  const check = () => {
    const img = document.querySelector('[data-screen-image]');
    const shown = img && img.complete && img.naturalWidth > 0 && img.getAttribute('src');
    if (!marks.frame && shown) marks.frame = performance.now();
    const rows = document.getElementsByClassName('trow').length;
    if (!marks.rows && rows > 0) marks.rows = performance.now();
    if (!marks.hundred && rows >= 100) marks.hundred = performance.now();
    // Done: watching every later mutation would cost the page under measure.
    if (marks.frame && marks.hundred) {
      observer.disconnect();
      document.removeEventListener('load', check, true);
    }
  };
  const observer = new MutationObserver(check);
  observer.observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['src'] });
  document.addEventListener('load', check, true);
})();
"""


SEEN = "seq => document.querySelector('[data-telemetry]').telemetryPane.lastSeq >= seq"


def _pane_ready(page) -> None:
    page.wait_for_function(
        "() => document.querySelector('#telemetry-pane [data-state=\"live\"]')", timeout=30_000
    )


def measure(browser, console: harness.Console, tenant, sid: str) -> dict:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    host = console.url.split("//", 1)[1].split(":")[0]
    context.add_cookies([{"name": "sessionid", "value": console.session_cookie, "domain": host, "path": "/"}])
    context.add_init_script(WATCH)
    page = context.new_page()
    try:
        page.goto(f"{console.url}/o/{console.org_slug}/browsers/{sid}/", wait_until="commit")
        _pane_ready(page)
        tenant.control("POST", "telemetry/burst", {"session_id": sid, "count": LIVE})
        try:
            page.wait_for_function("() => window.__marks.frame && window.__marks.hundred", timeout=60_000)
        except Exception:
            print("no first paint:", page.evaluate("JSON.stringify(window.__marks)"), flush=True)
            raise
        marks = page.evaluate("window.__marks")
        for _ in range(HELD // CHUNK):
            burst = tenant.control("POST", "telemetry/burst", {"session_id": sid, "count": CHUNK}).json()
            # Arrived in the pane (shown, or buffered behind the "new events" pill if it paused itself).
            page.wait_for_function(SEEN, arg=burst["last_seq"], timeout=60_000)
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        cdp.send("HeapProfiler.collectGarbage")
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        rows = page.evaluate(
            "(() => { const p = document.querySelector('[data-telemetry]').telemetryPane;"
            " return p.rows().length + p.pending.length; })()"
        )
        return {
            **marks,
            "heap": metrics["JSHeapUsedSize"] / 1024 / 1024,
            "nodes": metrics["Nodes"],
            "kept": rows,
        }
    finally:
        context.close()


def _summary(name: str, runs: list[dict]) -> str:
    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    return (
        f"| {name} | {med('frame'):.0f} ms | {med('rows'):.0f} ms | {med('hundred'):.0f} ms | "
        f"{med('heap'):.1f} MB | {med('nodes'):.0f} | {runs[0]['kept']} |"
    )


def run() -> str:
    baseline = os.environ.get("INSPECTOR_BASELINE")
    with harness.sandbox() as (sandbox_url, _):
        tenant = new_tenant(sandbox_url)
        tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
        body = {"name": "bench-inspector", "timeout_seconds": 86_400, "telemetry": TELEMETRY}
        sid = tenant.call("POST", "/browsers", json=body).json()["session_id"]
        tenant.control("POST", "telemetry/burst", {"session_id": sid, "count": HISTORY})
        with contextlib.ExitStack() as stack:
            consoles = {"this page": stack.enter_context(harness.console(sandbox_url, tenant.api_key))}
            if baseline:
                before = stack.enter_context(
                    harness.console(sandbox_url, tenant.api_key, root=Path(baseline))
                )
                consoles = {"the page before (baseline)": before, **consoles}
            results: dict[str, list[dict]] = {name: [] for name in consoles}
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                try:
                    for _ in range(ROUNDS):
                        for name, console in consoles.items():
                            results[name].append(measure(browser, console, tenant, sid))
                            print(name, {k: round(v) for k, v in results[name][-1].items()}, flush=True)
                            time.sleep(0.5)  # the relay's upstream closes behind the last viewer
                finally:
                    browser.close()
    lines = [
        f"Session page at 1440 px in headless Chromium, median of {ROUNDS} fresh loads per page, "
        f"interleaved; the session's history holds {HISTORY} events (the pane opens with its newest 50), "
        f"{LIVE} more are burst when the page commits; then {HELD:,} more, in bursts of {CHUNK:,}.",
        "",
        "| page | first screen frame | first telemetry rows | 100 events shown | JS heap after 10,000 events "
        "| DOM nodes | rows kept |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(_summary(name, runs) for name, runs in results.items()),
        "",
        "Times from navigation start, taken in the page. Heap after a forced garbage collection "
        "(CDP `Performance.getMetrics`); the pane keeps its newest 1,000 rows.",
    ]
    if not baseline:
        lines.append("No baseline measured: set `INSPECTOR_BASELINE` to a checkout of the page before.")
    return "\n".join(lines)
