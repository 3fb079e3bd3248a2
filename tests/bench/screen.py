"""Issue 12, "Measured": the live screen through the console against the same screencast read from CDP.

One sandbox on the Chromium engine; sessions show the lab page with ``animate=1`` (a counter repainted every
animation frame, so Chromium sends frames as fast as it can). Interleaved rounds of ``SECONDS`` each:

- direct: one reader on the session's ``cdp_ws_url`` (websockets; attach, ``Page.startScreencast`` at JPEG
  quality 70, ack each frame): frames/s and capture-to-arrival latency (the frame's CDP timestamp);
- through the console with 1 and with 20 viewers of ``…/screen/stream/``: frames/s per viewer, the
  latency the console adds (a viewer's arrival minus the moment the console had the frame from CDP, the
  ``t`` of the frame's header) and the capture-to-viewer latency; CDP connections the console opened
  (``cdp_connect`` events in the session's telemetry); the console process's CPU (user+system over the
  interval) and RSS.

Then the wall: ``WALL`` sessions on one wall stream (each tile at most 1 frame/s): the console's CPU and
RSS, upstream connections, frames per tile per second. Every process runs on the same machine, so the
clocks agree. The console's viewers read in ``READER_PROCESSES`` child processes, so that one process's
event-loop delay does not count as latency the console added.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import multiprocessing
import os
import statistics
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import websockets
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

from tests.bench import harness
from tests.sandbox_fixtures import new_tenant, start_sandbox, stop_sandbox

SECONDS = 5.0
WARMUP = 1.0
ROUNDS = 3
VIEWERS = 20
WALL = 12
READER_PROCESSES = 4
LINGER = 3.0  # the console's default SCREEN_LINGER_SECONDS
VIEWPORT = {"width": 1280, "height": 720}
WALL_VIEWPORT = {"width": 800, "height": 500}
WALL_PATIENCE = 30.0  # seconds the wall is given for every tile's first frame
WALL_BUDGET = 5.0  # every running session's tile shows a frame within this many seconds (issue 23)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
# In the wall page: when each tile's image first has a decoded picture, in ms since navigation began.
TILE_PICTURES = """
window.tilePictures = {};
const look = () => {
    for (const image of document.querySelectorAll('[data-tile] [data-tile-image]')) {
        const tile = image.closest('[data-tile]').dataset.tile;
        if (!(tile in window.tilePictures) && image.complete && image.naturalWidth > 0) {
            window.tilePictures[tile] = performance.now();
        }
    }
    requestAnimationFrame(look);
};
requestAnimationFrame(look);
"""
START_URL = "https://lab.example.com/?animate=1"


class FrameReader:
    """One SSE viewer of the console's screen stream over a raw socket: frame arrivals with their header."""

    def __init__(self, url: str, cookie: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port
        self.target = parts.path + (f"?{parts.query}" if parts.query else "")
        self.cookie = cookie
        self.frames: list[tuple[float, dict]] = []
        self.first = asyncio.Event()
        self.buffer = b""
        self.task: asyncio.Task | None = None
        self.writer = None

    async def open(self) -> None:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        self.writer = writer
        head = [f"GET {self.target} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Cookie: {self.cookie}"]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        status = await reader.readuntil(b"\r\n\r\n")
        if b" 200 " not in status.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"{self.target}: {status[:80]!r}")
        self.task = asyncio.create_task(self._read(reader))

    async def _read(self, reader) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
                if size == 0:
                    return
                self._feed((await reader.readexactly(size + 2))[:-2])

    def _feed(self, data: bytes) -> None:
        now = time.time() * 1000
        self.buffer += data
        *events, self.buffer = self.buffer.split(b"\n\n")
        for event in events:
            if event.startswith(b"event: frame"):
                start = event.index(b"data: ") + 6
                meta = json.loads(event[start : event.index(b"\n", start)])
                self.frames.append((now, meta))
                self.first.set()

    async def close(self) -> None:
        if self.task:
            self.task.cancel()
        if self.writer:
            self.writer.close()


async def direct_frames(cdp_ws_url: str, seconds: float) -> list[tuple[float, float]]:
    """(arrival ms, capture ms) of each frame one CDP reader gets in ``seconds`` (after a warm-up)."""
    frames = []
    async with websockets.connect(cdp_ws_url, max_size=None, open_timeout=30) as socket:
        ids = iter(range(1, 1_000_000))

        async def call(method, params=None, session=None):
            number = next(ids)
            message = {"id": number, "method": method, "params": params or {}}
            if session:
                message["sessionId"] = session
            await socket.send(json.dumps(message))
            while True:
                reply = json.loads(await socket.recv())
                if reply.get("id") == number:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result") or {}

        targets = await call("Target.getTargets")
        page = next(t for t in targets["targetInfos"] if t["type"] == "page")
        session = (await call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}))[
            "sessionId"
        ]
        params = {
            "format": "jpeg",
            "quality": 70,
            "maxWidth": VIEWPORT["width"],
            "maxHeight": VIEWPORT["height"],
        }
        await call("Page.startScreencast", params, session)
        loop = asyncio.get_running_loop()
        start, end = loop.time() + WARMUP, loop.time() + WARMUP + seconds
        while loop.time() < end:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.01, end - loop.time())):
                    message = json.loads(await socket.recv())
                    if message.get("method") == "Page.screencastFrame":
                        frame = message["params"]
                        ack = {"sessionId": frame["sessionId"]}
                        await socket.send(
                            json.dumps(
                                {
                                    "id": next(ids),
                                    "method": "Page.screencastFrameAck",
                                    "params": ack,
                                    "sessionId": session,
                                }
                            )
                        )
                        if loop.time() >= start:
                            base64.b64decode(frame["data"][:8])  # a reader would decode: the cost is the same
                            frames.append((time.time() * 1000, frame["metadata"]["timestamp"] * 1000))
    return frames


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _read_in_child(url: str, cookie: str, count: int, queue, stop) -> None:
    """A child process: ``count`` viewers; says "ready" once each has a frame, then sends every viewer's
    frames (arrival ms, header) once told to stop."""

    async def main():
        readers = [FrameReader(url, cookie) for _ in range(count)]
        await asyncio.gather(*(r.open() for r in readers))
        await asyncio.wait_for(asyncio.gather(*(r.first.wait() for r in readers)), 60)
        queue.put("ready")
        await asyncio.to_thread(stop.wait, 120)
        await asyncio.gather(*(r.close() for r in readers))
        return [r.frames for r in readers]

    queue.put(asyncio.run(main()))


class Process:
    """CPU seconds and RSS of one process, from /proc."""

    def __init__(self, pid: int):
        self.pid = pid
        self.tick = os.sysconf("SC_CLK_TCK")

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.tick

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0


def console_pid(url: str) -> int:
    port = url.rsplit(":", 1)[1].encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
                if b"uvicorn" in b" ".join(cmd) and port in cmd:
                    return int(entry.name)
    raise RuntimeError("console process not found")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class ScreenBench:
    def __init__(self, console, tenant):
        self.console, self.tenant = console, tenant
        self.proc = Process(console_pid(console.url))

    def create(self, **extra) -> dict:
        body = {"headless": True, "viewport": VIEWPORT, "start_url": START_URL, "timeout_seconds": 3600}
        body["telemetry"] = {"enabled": True, "browser": {}}
        return self.tenant.call("POST", "/browsers", json={**body, **extra}, timeout=120).json()

    def connects(self, sid: str) -> int:
        params = {"limit": 100, "type": "cdp_connect"}
        response = self.tenant.call("GET", f"/browsers/{sid}/telemetry/events", params=params)
        response.raise_for_status()
        return sum(1 for item in response.json() if item["event"]["type"] == "cdp_connect")

    def stream_url(self, sid: str) -> str:
        return f"{self.console.url}/o/{self.console.org_slug}/browsers/{sid}/screen/stream/"

    async def through_console(self, sid: str, viewers: int) -> dict:
        await asyncio.sleep(LINGER + 1)  # the previous phase's upstream has closed
        before = await asyncio.to_thread(self.connects, sid)
        # The viewers read in child processes (READER_PROCESSES at most): their own event-loop delay must
        # not count as latency the console added.
        context = multiprocessing.get_context("spawn")
        queue, stop = context.Queue(), context.Event()
        groups = [n for n in _split(viewers, READER_PROCESSES) if n]
        children = [
            context.Process(
                target=_read_in_child,
                args=(self.stream_url(sid), self.console.cookie_header, n, queue, stop),
                daemon=True,
            )
            for n in groups
        ]
        for child in children:
            child.start()
        for _ in children:
            assert await asyncio.to_thread(queue.get, True, 90) == "ready"
        await asyncio.sleep(WARMUP)
        start_ms, cpu0, wall0 = time.time() * 1000, self.proc.cpu(), time.perf_counter()
        await asyncio.sleep(SECONDS)
        end_ms, cpu1, wall1 = time.time() * 1000, self.proc.cpu(), time.perf_counter()
        rss = self.proc.rss_mb()
        stop.set()
        received = []
        for _ in children:
            received += await asyncio.to_thread(queue.get, True, 90)
        for child in children:
            child.join(10)
        counted = [[(at, meta) for at, meta in frames if start_ms <= at < end_ms] for frames in received]
        added = [at - meta["t"] for frames in counted for at, meta in frames]
        total = [at - meta["c"] for frames in counted for at, meta in frames if "c" in meta]
        return {
            "fps": statistics.mean(len(f) / SECONDS for f in counted),
            "fps_min": min(len(f) / SECONDS for f in counted),
            "added": added,
            "total": total,
            "cpu": (cpu1 - cpu0) / (wall1 - wall0),
            "rss": rss,
            "connects": (await asyncio.to_thread(self.connects, sid)) - before,
        }

    async def idle(self) -> tuple[float, float]:
        await asyncio.sleep(LINGER + 1)
        cpu0, wall0 = self.proc.cpu(), time.perf_counter()
        await asyncio.sleep(SECONDS)
        return (self.proc.cpu() - cpu0) / (time.perf_counter() - wall0), self.proc.rss_mb()

    async def single(self) -> dict:
        session = await asyncio.to_thread(self.create)
        sid = session["session_id"]
        results: dict[str, list] = {"direct": [], "one": [], "many": []}
        idle = await self.idle()
        for _ in range(ROUNDS):
            frames = await direct_frames(session["cdp_ws_url"], SECONDS)
            results["direct"].append(
                {"fps": len(frames) / SECONDS, "total": [arrival - capture for arrival, capture in frames]}
            )
            results["one"].append(await self.through_console(sid, 1))
            results["many"].append(await self.through_console(sid, VIEWERS))
        await asyncio.to_thread(self.tenant.call, "DELETE", f"/browsers/{sid}")
        return {**results, "idle": idle}

    async def wall(self) -> dict:
        tag = os.urandom(4).hex()
        sessions, failed = [], 0
        for _ in range(WALL):  # one at a time: twelve Chromium starting at once swamp two cores
            extra = {"tags": {"bench": tag}, "viewport": WALL_VIEWPORT}
            try:
                sessions.append(await asyncio.to_thread(self.create, **extra))
            except httpx.HTTPError:
                failed += 1  # the machine could not start another browser in time: reported
        ids = [s["session_id"] for s in sessions]
        # The wall page in Chromium first, as an operator opens it: when each tile first shows a picture
        # (a still one or a frame), whatever the stream may make live.
        page_firsts = await asyncio.to_thread(self.page_firsts, f"tag=bench:{tag}", len(ids))
        idle = await self.idle()
        query = "&".join(f"id={i}" for i in ids)
        url = f"{self.console.url}/o/{self.console.org_slug}/browsers/wall/stream/?{query}"
        before = sum(await asyncio.gather(*(asyncio.to_thread(self.connects, i) for i in ids)))
        reader = FrameReader(url, self.console.cookie_header)
        opened_ms = time.time() * 1000
        await reader.open()
        # Until every tile has shown a frame (each session moves to a Chromium process of its own on its
        # first CDP connection), or WALL_PATIENCE: a tile still dark then is reported as such.
        firsts: dict[str, float] = {}
        deadline = time.perf_counter() + WALL_PATIENCE
        while len(firsts) < len(ids) and time.perf_counter() < deadline:
            for at, meta in reader.frames:
                firsts.setdefault(meta["s"], (at - opened_ms) / 1000)
            await asyncio.sleep(0.05)
        start_ms, cpu0, wall0 = time.time() * 1000, self.proc.cpu(), time.perf_counter()
        await asyncio.sleep(SECONDS * 2)
        end_ms, cpu1, wall1 = time.time() * 1000, self.proc.cpu(), time.perf_counter()
        rss = self.proc.rss_mb()
        await reader.close()
        counted = [meta["s"] for at, meta in reader.frames if start_ms <= at < end_ms]
        connects = sum(await asyncio.gather(*(asyncio.to_thread(self.connects, i) for i in ids))) - before
        for sid in ids:
            await asyncio.to_thread(self.tenant.call, "DELETE", f"/browsers/{sid}")
        return {
            "sessions": len(ids),
            "failed": failed,
            "idle": idle,
            "cpu": (cpu1 - cpu0) / (wall1 - wall0),
            "rss": rss,
            "tiles_live": len(set(counted)),
            "per_tile_fps": len(counted) / max(1, len(ids)) / (SECONDS * 2),
            "connects": connects,
            "first_frames": sorted(firsts.values()),
            "page_firsts": page_firsts,
        }

    def page_firsts(self, query: str, count: int) -> list[float]:
        """Seconds from asking for the wall page to each tile's first picture (img decoded, any source),
        within WALL_PATIENCE; a tile still without one is left out."""
        url = f"{self.console.url}/o/{self.console.org_slug}/browsers/wall/?{query}"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            try:
                context = browser.new_context(viewport={"width": 1440, "height": 2000})
                context.add_cookies(
                    [{"name": "sessionid", "value": self.console.session_cookie, "url": self.console.url}]
                )
                page = context.new_page()
                page.add_init_script(TILE_PICTURES)
                page.goto(url, wait_until="commit")
                with contextlib.suppress(PlaywrightTimeout):
                    page.wait_for_function(
                        f"() => Object.keys(window.tilePictures || {{}}).length >= {count}",
                        timeout=WALL_PATIENCE * 1000,
                    )
                seen = page.evaluate("window.tilePictures || {}")
            finally:
                browser.close()
        return sorted(at / 1000 for at in seen.values())


def run() -> str:
    owner = "bench-screen-" + os.urandom(6).hex()
    load_before = os.getloadavg()
    url, process = start_sandbox(
        SANDBOX_ENGINE="chromium",
        SANDBOX_MAX_BROWSERS=str(WALL + 1),
        SANDBOX_BROWSER_IDLE_SECONDS="3600",
        SANDBOX_BROWSER_LINGER_SECONDS="3600",
        SANDBOX_BROWSER_OWNER=owner,
    )
    try:
        if httpx.get(url + "/", timeout=10).json()["engine"] != "chromium":
            raise SystemExit("the sandbox runs simulated browsers: no screen to measure")
        tenant = new_tenant(url)
        before = None
        if baseline := os.environ.get("SCREEN_BASELINE"):
            # The wall of the checkout named (an earlier commit's worktree) first, on the same sandbox.
            with harness.console(url, tenant.api_key, root=Path(baseline)) as console:
                before = asyncio.run(ScreenBench(console, tenant).wall())
        with harness.console(url, tenant.api_key) as console:
            bench = ScreenBench(console, tenant)
            single = asyncio.run(bench.single())
            wall = asyncio.run(bench.wall())
    finally:
        stop_sandbox(process)
    load = f"Load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after (2 cores).\n\n"
    text = load + report(single, wall)
    if before is not None:
        text += (
            f"\n- The same wall from the baseline checkout (SCREEN_BASELINE): its stream "
            f"{first_frames(before)}; its page "
            f"{first_frames({**before, 'first_frames': before['page_firsts']})}."
        )
    return text


def report(single: dict, wall: dict) -> str:
    direct_fps = statistics.median(r["fps"] for r in single["direct"])
    one_fps = statistics.median(r["fps"] for r in single["one"])
    many_fps = statistics.median(r["fps"] for r in single["many"])
    many_min = min(r["fps_min"] for r in single["many"])
    direct_lat = [v for r in single["direct"] for v in r["total"]]
    one_added = [v for r in single["one"] for v in r["added"]]
    many_added = [v for r in single["many"] for v in r["added"]]
    one_total = [v for r in single["one"] for v in r["total"]]
    many_total = [v for r in single["many"] for v in r["total"]]
    idle_cpu, idle_rss = single["idle"]
    one_cpu = statistics.median(r["cpu"] for r in single["one"])
    many_cpu = statistics.median(r["cpu"] for r in single["many"])
    one_rss = statistics.median(r["rss"] for r in single["one"])
    many_rss = statistics.median(r["rss"] for r in single["many"])
    connects = [r["connects"] for r in single["many"]]
    ratio = many_fps / direct_fps if direct_fps else 0.0
    p99_added = pct(many_added, 0.99)

    def ms(values):
        return f"{pct(values, 0.5):.1f} / {pct(values, 0.99):.1f}"

    def met(ok):
        return "**met**" if ok else "**not met**"

    per_session_cpu = (one_cpu - idle_cpu) * 100
    per_viewer_cpu = (many_cpu - one_cpu) / (VIEWERS - 1) * 100
    per_viewer_rss = (many_rss - one_rss) / (VIEWERS - 1)
    one_upstream = met(all(c == 1 for c in connects))
    lines = [
        f"{ROUNDS} interleaved rounds of {SECONDS:.0f} s, viewport {VIEWPORT['width']}x{VIEWPORT['height']}, "
        f"JPEG quality 70, the lab page repainting every animation frame.",
        "",
        "| | frames/s per viewer (median) | capture→arrival p50 / p99 (ms) "
        "| added by the console p50 / p99 (ms) |",
        "|---|---|---|---|",
        f"| straight from CDP, 1 reader | {direct_fps:.1f} | {ms(direct_lat)} | — |",
        f"| through the console, 1 viewer | {one_fps:.1f} | {ms(one_total)} | {ms(one_added)} |",
        f"| through the console, {VIEWERS} viewers | {many_fps:.1f} (slowest {many_min:.1f}) | "
        f"{ms(many_total)} | {ms(many_added)} |",
        "",
        f"- {VIEWERS} viewers get {ratio:.2f} of the direct frames/s (budget ≥ 0.9: {met(ratio >= 0.9)}); "
        f"added latency p99 {p99_added:.1f} ms (budget < 50 ms: {met(p99_added < 50)}).",
        f"- CDP connections the console opened for {VIEWERS} viewers of one session, per round: "
        f"{', '.join(map(str, connects))} (budget: one upstream per session: {one_upstream}).",
        f"- Console process (one uvicorn worker): idle {idle_cpu * 100:.1f} % CPU, {idle_rss:.0f} MB RSS; "
        f"1 viewer {one_cpu * 100:.1f} % CPU, {one_rss:.0f} MB; {VIEWERS} viewers "
        f"{many_cpu * 100:.1f} % CPU, {many_rss:.0f} MB. Per watched session ≈ {per_session_cpu:.1f} % "
        f"of a core and {one_rss - idle_rss:+.1f} MB; per extra viewer ≈ {per_viewer_cpu:.2f} % of a core "
        f"and {per_viewer_rss:+.2f} MB.",
        f"- The wall with {wall['sessions']} sessions ({WALL_VIEWPORT['width']}x{WALL_VIEWPORT['height']}, "
        f"one stream, at most 1 frame/s per tile; {wall['failed']} of {WALL} creates failed): "
        f"{wall['tiles_live']} tiles live, {wall['per_tile_fps']:.2f} frames/s per tile, "
        f"{wall['connects']} CDP connections opened; console {wall['cpu'] * 100:.1f} % CPU and "
        f"{wall['rss']:.0f} MB RSS (idle before: {wall['idle'][0] * 100:.1f} %, {wall['idle'][1]:.0f} MB).",
        f"- The wall's stream (every tile asked for; at most `WALL_LIVE_TILES` live): {first_frames(wall)}.",
        f"- The wall page in Chromium (1440x2000, every tile on screen; a still picture or a frame): "
        f"{first_frames({**wall, 'first_frames': wall['page_firsts']})}.",
    ]
    return "\n".join(lines)


def first_frames(wall: dict) -> str:
    """Seconds from opening a wall to each tile's first frame, and how many came within the budget."""
    shown = wall["first_frames"]
    within = sum(1 for t in shown if t <= WALL_BUDGET)
    dark = wall["sessions"] - len(shown)
    firsts = ", ".join(f"{t:.1f}" for t in shown) + (
        f" and {dark} dark after {WALL_PATIENCE:.0f} s" if dark else ""
    )
    ok = within == wall["sessions"] == WALL
    return (
        f"seconds from opening it to each tile's first frame {firsts}; {within} of {wall['sessions']} "
        f"tiles within {WALL_BUDGET:.0f} s (budget: all {WALL}: {'**met**' if ok else '**not met**'})"
    )
