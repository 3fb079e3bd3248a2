"""Issue "Real browsers": what a real Chromium session costs and how fast it answers, in one sandbox run.

One sandbox on the Chromium engine (at most ``N`` running browsers, nothing put in standby for idleness,
the shared process kept up between sessions). Memory and create to first screenshot are measured twice:
for headful sessions (windows of one shared Chromium process on an Xvfb display of their size), then for
headless ones (contexts of one shared headless Chromium process).

- memory: PSS summed over the sandbox's Chromium processes (a browser process carries
  ``SANDBOX_BROWSER_OWNER``; its children are counted with it) and over the sandbox's whole process tree
  (the sandbox, Playwright's driver, Chromium), with 1 then ``N`` running sessions, then ``N`` more
  sessions that push the first ``N`` into standby; per session = the difference over the sessions added;
- create to first screenshot (``POST /browsers`` then ``POST …/computer/screenshot``): cold (the first
  session starts the browser process), warm, warm at the limit (the create puts the oldest session in
  standby), and from standby (the screenshot wakes the session);
- computer action round trip: ``POST …/computer/click_mouse`` on the lab page's button to its handler's
  ``console_log`` arriving on the session's telemetry stream (read from the sandbox directly);
- screencast: frames/s and frame latency read straight from CDP (Playwright ``connect_over_cdp`` on the
  session's ``cdp_ws_url``, a CDPSession with ``Page.startScreencast``, JPEG quality 70 as the live view)
  against the sandbox's live view websocket, interleaved rounds. The page animates: every
  requestAnimationFrame paints ``Date.now()`` as a row of black and white blocks; the latency of a frame
  is its arrival minus the time painted in it (blocks decoded from the JPEG by ffmpeg).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import statistics
import subprocess
import time
from pathlib import Path

import httpx
import websockets
from playwright.async_api import async_playwright

from console.sandbox.chromium.engine import chromium_path
from tests.sandbox_fixtures import browser_processes, new_tenant, start_sandbox, stop_sandbox

N = 4
CLICKS = 50
ROUNDS = 3
SECONDS = 5.0  # each screencast interval
WARMUP = 0.5  # seconds of each interval not counted (the screencast starting)
SETTLE = 3.0  # seconds for pages to finish loading before memory is read
VIEWPORT = {"width": 1280, "height": 720}
START_URL = "https://lab.example.com/"
BITS, BLOCK = 24, 40  # Date.now() modulo 2**24 ms, one 40x40 px block per bit
ANIMATE = f"""() => {{
  const c = document.createElement('canvas');
  c.width = {BITS * BLOCK}; c.height = {BLOCK};
  c.style.cssText = 'position:fixed;left:0;top:0;z-index:2147483647';
  document.body.appendChild(c);
  const g = c.getContext('2d');
  const paint = () => {{
    const now = Date.now() % {2**BITS};
    for (let i = 0; i < {BITS}; i++) {{
      g.fillStyle = (now >> i) & 1 ? '#fff' : '#000';
      g.fillRect(i * {BLOCK}, 0, {BLOCK}, {BLOCK});
    }}
    requestAnimationFrame(paint);
  }};
  requestAnimationFrame(paint);
}}"""


def run() -> str:
    owner = "bench-" + os.urandom(6).hex()
    load_before = os.getloadavg()
    url, process = start_sandbox(
        SANDBOX_ENGINE="chromium",
        SANDBOX_MAX_BROWSERS=str(N),
        SANDBOX_BROWSER_IDLE_SECONDS="3600",
        SANDBOX_BROWSER_LINGER_SECONDS="3600",
        SANDBOX_BROWSER_OWNER=owner,
    )
    try:
        status = httpx.get(url + "/", timeout=10).json()
        if status["engine"] != "chromium":
            raise SystemExit(f"the sandbox runs simulated browsers: {status['engine_reason']}")
        bench = BrowserBench(new_tenant(url), process.pid, owner)
        # Headful first (their process and display), then headless (the shared headless process).
        results = {
            "kinds": {"headful": bench.sessions(headless=False), "headless": bench.sessions(headless=True)}
        }
        results |= asyncio.run(bench.interactive())
    finally:
        stop_sandbox(process)
    version = subprocess.run([chromium_path(), "--version"], capture_output=True, text=True).stdout.strip()
    return f"{version}.\n\n" + report(results, load_before, os.getloadavg())


class BrowserBench:
    def __init__(self, tenant, sandbox_pid: int, owner: str):
        self.tenant, self.sandbox_pid, self.owner = tenant, sandbox_pid, owner

    # Memory -------------------------------------------------------------------------------------------

    def memory_mb(self) -> tuple[float, float]:
        """(PSS of the sandbox's Chromium processes, PSS of the sandbox's whole process tree), in MB.

        Only a browser process carries the owner marker (its renderers, GPU and utility processes start
        with an environment of their own): Chromium is the marked processes and their descendants.
        """
        chromium = sum(_pss_kb(pid) for root in browser_processes(self.owner) for pid in _descendants(root))
        tree = sum(_pss_kb(pid) for pid in _descendants(self.sandbox_pid))
        return chromium / 1024, tree / 1024

    def browser_state(self, session_id: str) -> str:
        return self.tenant.call("GET", f"/browsers/{session_id}").json()["sandbox"]["browser"]

    # Create to first screenshot -----------------------------------------------------------------------

    def create(self, **body) -> dict:
        body = {"headless": False, "viewport": VIEWPORT, "start_url": START_URL, **body}
        response = self.tenant.call("POST", "/browsers", json=body, timeout=60)
        assert response.status_code == 201, response.text
        return response.json()

    def screenshot(self, session_id: str) -> None:
        shot = self.tenant.call("POST", f"/browsers/{session_id}/computer/screenshot", json={}, timeout=60)
        assert shot.status_code == 200 and shot.content[:4] == b"\x89PNG", shot.status_code

    def create_to_screenshot(self, **body) -> tuple[dict, float]:
        started = time.perf_counter()
        session = self.create(**body)
        self.screenshot(session["session_id"])
        return session, time.perf_counter() - started

    def sessions(self, *, headless: bool) -> dict:
        memory = {"none": self.memory_mb()}
        first, cold = self.create_to_screenshot(headless=headless)
        time.sleep(SETTLE)
        memory["1 running"] = self.memory_mb()
        made, warm = [first], []
        for _ in range(N - 1):
            session, took = self.create_to_screenshot(headless=headless)
            made.append(session)
            warm.append(took)
        time.sleep(SETTLE)
        memory[f"{N} running"] = self.memory_mb()
        at_limit = []
        for _ in range(N):
            session, took = self.create_to_screenshot(headless=headless)
            made.append(session)
            at_limit.append(took)
        time.sleep(SETTLE)
        memory[f"{N} running + {N} standby"] = self.memory_mb()
        states = [self.browser_state(s["session_id"]) for s in made]
        assert states == ["standby"] * N + ["running"] * N, states
        wake = []
        for session in made[:N]:  # each wake puts the least recently used of the others in standby
            started = time.perf_counter()
            self.screenshot(session["session_id"])
            wake.append(time.perf_counter() - started)
        for session in made:
            self.tenant.call("DELETE", f"/browsers/{session['session_id']}", timeout=60)
        return {"memory": memory, "cold": cold, "warm": warm, "at_limit": at_limit, "wake": wake}

    # Clicks and screencast ----------------------------------------------------------------------------

    async def interactive(self) -> dict:
        session = self.create(telemetry={"enabled": True, "browser": {"console": {"enabled": True}}})
        self.screenshot(session["session_id"])
        try:
            clicks = await self.clicks(session["session_id"])
            screencast = await self.screencast(session)
        finally:
            self.tenant.call("DELETE", f"/browsers/{session['session_id']}", timeout=60)
        return {"clicks": clicks, "screencast": screencast}

    async def clicks(self, session_id: str) -> dict:
        """Click the lab page's button; time the response and the handler's console_log on the stream."""
        seen: asyncio.Queue = asyncio.Queue()
        auth = {"Authorization": f"Bearer {self.tenant.api_key}"}
        async with httpx.AsyncClient(base_url=self.tenant.url, headers=auth, timeout=30) as client:
            opened = asyncio.Event()

            async def read() -> None:
                async with client.stream("GET", f"/browsers/{session_id}/telemetry/stream") as stream:
                    opened.set()
                    async for line in stream.aiter_lines():
                        if line.startswith("data:") and "button clicked" in line:
                            seen.put_nowait(time.perf_counter())

            reader = asyncio.create_task(read())
            await asyncio.wait_for(opened.wait(), 10)
            await asyncio.sleep(0.5)
            answered, handled = [], []
            path = f"/browsers/{session_id}/computer/click_mouse"
            for _ in range(CLICKS):
                started = time.perf_counter()
                response = await client.post(path, json={"x": 120, "y": 50})
                assert response.status_code == 204, response.text
                answered.append((time.perf_counter() - started) * 1000)
                handled.append((await asyncio.wait_for(seen.get(), 15) - started) * 1000)
                await asyncio.sleep(0.05)
            reader.cancel()
        return {"answered": answered, "handled": handled}

    async def screencast(self, session: dict) -> dict:
        live_ws = session["sandbox"]["read_only_live_view_url"].replace("http", "ws", 1)
        live_ws = live_ws.replace("?", "/ws?", 1)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=30_000)
            try:
                page = browser.contexts[0].pages[0]
                await page.evaluate(ANIMATE)
                cdp = await page.context.new_cdp_session(page)
                rounds = {"cdp": [], "live view": []}
                for _ in range(ROUNDS):  # interleaved, one path at a time
                    rounds["cdp"].append(await _from_cdp(cdp))
                    rounds["live view"].append(await _from_live_view(live_ws))
            finally:
                await browser.close()
        result = {}
        for path, samples in rounds.items():
            frames = [frame for sample in samples for frame in sample]
            latencies = _latencies(frames)
            result[path] = {
                "fps": statistics.median(len(sample) / SECONDS for sample in samples),
                "fps_rounds": [len(sample) / SECONDS for sample in samples],
                "latency": latencies,
                "frames": len(frames),
            }
        return result


async def _from_cdp(cdp) -> list[tuple[float, bytes]]:
    frames, counting = [], [False]

    def on_frame(params: dict) -> None:
        if counting[0]:
            frames.append((time.time(), base64.b64decode(params["data"])))
        asyncio.get_running_loop().create_task(_ack(cdp, params["sessionId"]))

    cdp.on("Page.screencastFrame", on_frame)
    await cdp.send(
        "Page.startScreencast",
        {"format": "jpeg", "quality": 70, "maxWidth": VIEWPORT["width"], "maxHeight": VIEWPORT["height"]},
    )
    await asyncio.sleep(WARMUP)
    counting[0] = True
    await asyncio.sleep(SECONDS)
    counting[0] = False
    await cdp.send("Page.stopScreencast")
    cdp.remove_listener("Page.screencastFrame", on_frame)
    await asyncio.sleep(0.3)
    return frames


async def _ack(cdp, frame_session: int) -> None:
    with contextlib.suppress(Exception):
        await cdp.send("Page.screencastFrameAck", {"sessionId": frame_session})


async def _from_live_view(url: str) -> list[tuple[float, bytes]]:
    frames = []
    async with websockets.connect(url, max_size=None, open_timeout=30) as socket:
        loop = asyncio.get_running_loop()
        start = loop.time() + WARMUP
        end = start + SECONDS
        while loop.time() < end:
            try:
                data = await asyncio.wait_for(socket.recv(), end - loop.time())
            except TimeoutError:
                break
            if loop.time() >= start:
                frames.append((time.time(), data))
    await asyncio.sleep(0.3)
    return frames


def _latencies(frames: list[tuple[float, bytes]]) -> list[float]:
    """Arrival minus the Date.now() painted in each frame (ms), decoded from its block row by ffmpeg."""
    if not frames:
        return []
    width = VIEWPORT["width"]
    out = subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-f",
            "image2pipe",
            "-c:v",
            "mjpeg",
            "-i",
            "-",
            "-vf",
            f"crop={width}:{BLOCK}:0:0",
            "-fps_mode",
            "passthrough",  # one output frame per JPEG, none duplicated or dropped
            "-f",
            "rawvideo",
            "-pix_fmt",
            "gray",
            "-",
        ],
        input=b"".join(data for _, data in frames),
        capture_output=True,
        check=True,
    ).stdout
    size = width * BLOCK
    middle = (BLOCK // 2) * width
    latencies = []
    for index, (arrived, _) in enumerate(frames[: len(out) // size]):
        row = out[index * size + middle : index * size + middle + width]
        painted = sum(1 << i for i in range(BITS) if row[i * BLOCK + BLOCK // 2] > 127)
        latencies.append((int(arrived * 1000) - painted) % 2**BITS)
    return latencies


def _pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def report(results: dict, load_before, load_after) -> str:
    clicks, cast = results["clicks"], results["screencast"]
    cdp, live = cast["cdp"], cast["live view"]
    ratio = live["fps"] / cdp["fps"] if cdp["fps"] else 0.0
    kinds = {
        "headful": "Headful sessions (windows of one Chromium process on an Xvfb display of their size)",
        "headless": "Headless sessions (contexts of one headless Chromium process)",
    }
    sessions = []
    for kind, title in kinds.items():
        sessions += [f"**{title}**", "", *_sessions_report(results["kinds"][kind]), ""]

    def latency(path: dict) -> str:
        values = path["latency"]
        if not values:
            return "n/a | n/a"
        return f"{statistics.median(values):.0f} ms | {_pct(values, 0.99):.0f} ms"

    lines = [
        f"Load average (1 min) {load_before[0]:.1f} before the run, {load_after[0]:.1f} after: the machine"
        " was shared with other work, so every figure here is as measured under that load.",
        "",
        *sessions,
        f"- Click round trip over {CLICKS} clicks (`click_mouse` on the lab button to its handler's"
        f" `console_log` on the telemetry stream, a headful session): p50"
        f" **{statistics.median(clicks['handled']):.0f} ms**,"
        f" p99 **{_pct(clicks['handled'], 0.99):.0f} ms**; the POST itself answered in p50"
        f" {statistics.median(clicks['answered']):.0f} ms, p99 {_pct(clicks['answered'], 0.99):.0f} ms.",
        "",
        f"| screencast ({ROUNDS} interleaved rounds of {SECONDS:g} s) | frames/s (median) | rounds"
        " | latency p50 | latency p99 | frames decoded |",
        "|---|---:|---:|---:|---:|---:|",
        *(
            f"| {name} | {path['fps']:.1f} | {', '.join(f'{f:.1f}' for f in path['fps_rounds'])}"
            f" | {latency(path)} | {len(path['latency'])}/{path['frames']} |"
            for name, path in (("straight from CDP", cdp), ("sandbox live view websocket", live))
        ),
        "",
        f"- **live view / CDP: {ratio:.2f}** of the frames/s; budget ≥ 0.9: {_met(ratio >= 0.9)}.",
    ]
    return "\n".join(lines)


def _sessions_report(results: dict) -> list[str]:
    memory = results["memory"]
    rows = [
        f"| {label} | {chromium:,.0f} MB | {tree - chromium:,.0f} MB | {tree:,.0f} MB |"
        for label, (chromium, tree) in memory.items()
    ]
    one, running, both = memory["1 running"], memory[f"{N} running"], memory[f"{N} running + {N} standby"]
    per_running = [(running[i] - one[i]) / (N - 1) for i in (0, 1)]
    per_standby = [(both[i] - running[i]) / N for i in (0, 1)]
    fixed = one[1] - memory["none"][1] - per_running[1]  # the browser process (and driver) with no session
    fit = int((4096 - memory["none"][1] - fixed) // per_running[1]) if per_running[1] > 0 else 0
    warm = statistics.median(results["warm"])
    return [
        "| sessions | Chromium PSS | sandbox and Playwright driver PSS | total (sandbox's process tree) |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        f"- **Running session: {per_running[1]:.0f} MB** of the whole tree ({per_running[0]:.0f} MB of it"
        f" Chromium), from 1 to {N} running; budget < 150 MB: {_met(per_running[1] < 150)}.",
        f"- **Standby session: {per_standby[1]:.1f} MB** of the whole tree ({per_standby[0]:.1f} MB of it"
        f" Chromium), {N} added at the limit while {N} others ran; budget < 5 MB: "
        f"{_met(per_standby[1] < 5)}.",
        f"- The browser itself (no session): {fixed:.0f} MB; the tree before the first session of this kind "
        f"{memory['none'][1]:.0f} MB (after the headful sessions, their idle process is in it). **Running"
        f" sessions in 4 GB: {fit}** (4096 MB less both, divided by a running session).",
        "",
        f"| create to first screenshot ({VIEWPORT['width']}x{VIEWPORT['height']}) | time |",
        "|---|---:|",
        f"| cold (first session: Chromium starts) | {results['cold']:.2f} s |",
        f"| warm, median of {len(results['warm'])} | **{warm:.2f} s** |",
        f"| warm at the limit (puts the oldest in standby), median of {len(results['at_limit'])} "
        f"| {statistics.median(results['at_limit']):.2f} s |",
        f"| from standby (a screenshot wakes it), median of {len(results['wake'])} "
        f"| {statistics.median(results['wake']):.2f} s |",
        "",
        f"- warm runs: {', '.join(f'{t:.2f}' for t in results['warm'])} s; at the limit: "
        f"{', '.join(f'{t:.2f}' for t in results['at_limit'])} s; wakes: "
        f"{', '.join(f'{t:.2f}' for t in results['wake'])} s. Budget warm < 2 s: {_met(warm < 2)}.",
    ]
