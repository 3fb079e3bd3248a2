"""The live screen relay: a session's CDP screencast read once per process and fanned out to viewers.

Why a hub of its own, beside ``console.live.hub``: telemetry must reach every viewer in order, so that hub
keeps a log of frames; a screen is the opposite: only the newest frame matters. A ``Screen`` keeps exactly
one frame (already encoded as an SSE event, shared by every viewer) and a counter. A viewer remembers the
number of the last frame it sent; when it is ready for more it takes whatever is newest, so a slow viewer
skips frames and memory does not grow with the number of viewers or their speed. A viewer can also ask for
a lower rate (the session wall's thumbnails take at most one frame a second from the same upstream).

The upstream: the relay speaks to the session's ``cdp_ws_url`` through console/live/cdp.py (a small CDP
client: the URL checked and never shown, messages read within bounds and budgets), attaches to the
session's page target (``Target.attachToTarget`` with ``flatten``), starts ``Page.startScreencast`` and has
each frame acked as soon as it arrives, so Chromium's pace never depends on the slowest viewer. The
frame's base64 JPEG is passed through to the browsers as it came (no re-encoding). The upstream closes
``linger`` seconds after the last viewer left.

A frame is kept as it came, newest wins, and checked only when a viewer takes it (``frame_problem``: plain
base64, so an SSE line cannot be ended from upstream; a JPEG, by its own header, of at most ``MAX_SIDE``
pixels a side): frames nobody takes cost their reading and nothing else. A bad frame is dropped and
counted; ``BAD_FRAMES`` in a row and the upstream is treated as broken.

Never imports Django.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import math
import re
import time
import weakref
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field

from console.live import cdp
from console.live.tabs import Tab, Tabs
from console.service.errors import ServiceError
from console.web import images
from console.web.text import visible

log = logging.getLogger("console.live.screen")

STATES = {
    "connecting": "Connecting…",
    "live": "Live",
    "reconnecting": "Reconnecting…",
    "stalled": "Stalled",
    "ended": "The session has ended",
    "unavailable": "No screen from this session's CDP endpoint",
    "refused": "Refused by the service",
    "paused": "Paused",
}
MAX_RECONNECTS = 5
FIRST_PAGE_SECONDS = 10.0  # how long a browser with no page yet is asked for one before "no page to show"
FIRST_PAGE_POLL = 0.25
REFRESH_AFTER = 1.0  # seconds after a tab changed to ask for the list again (a title Chromium did not say)
UNTITLED_REFRESHES = 15  # more asks, a REFRESH_AFTER apart, while a tab has no title (and nothing changes)
# Then slower, for a page that takes longer to load (a slow site, a busy machine): one ask every
# UNTITLED_SLOW_GAP s, up to UNTITLED_ASKS asks in all (about seven minutes), then the strip keeps the URL.
UNTITLED_SLOW_GAP = 10.0
UNTITLED_ASKS = 60
# A frame is passed to viewers as it came: base64 only, so nothing an upstream sends can end the SSE line.
BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
FORMAT = "jpeg"  # what the relay asks for, and the only thing it passes on
# The largest frame side: Chromium's screencast is at most the viewport, which the service keeps far below;
# a bigger image (a decompression bomb for every viewer's browser) is dropped.
MAX_SIDE = 4096
BAD_FRAMES = 10  # frames in a row failing the check before the upstream counts as broken
POSTER_TIMEOUT = 5.0  # seconds a still picture may take before the relay opens its CDP connection anyway
POSTER_BYTES = 8 * 1024 * 1024  # the largest still picture passed on (a 4096-pixel-square PNG fits)
# The JPEG markers that start a frame header (SOF0..SOF15 but DHT, JPG and DAC): they carry its size.
JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


@dataclass
class Target:
    """Where to read a session's screen: its CDP URL and viewport, or that it has ended."""

    cdp_ws_url: str | None
    width: int
    height: int
    ended: bool = False
    # Whether a still picture is worth asking for before the CDP connection opens (not for a browser the
    # service says sleeps: the picture would wake it only for the connection to move it at once).
    awake: bool = True


@dataclass
class Source:
    key: Hashable
    # Called at each (re)connection: the session's current record (a jwt may change between connections).
    locate: Callable[[], Awaitable[Target]]
    allow_private: bool = False
    quality: int = 70
    # A still picture of the screen now (PNG bytes, the service's screenshot), shown until the first frame:
    # a CDP connection can take seconds to open (a sandbox moves the session to a browser of its own).
    poster: Callable[[], Awaitable[bytes]] | None = None


def frame_problem(data: object, metadata: object) -> str:
    """Why a frame may not reach a viewer ("" if it may): plain base64 of a JPEG (its own header says so)
    of at most ``MAX_SIDE`` pixels a side, and a metadata size (if any) within the same bound."""
    if not isinstance(data, str) or len(data) % 4 or not BASE64.fullmatch(data):
        return "not base64"
    size = jpeg_size(data)
    if size is None:
        return f"not a {FORMAT.upper()} image"
    if not all(0 < side <= MAX_SIDE for side in size):
        return f"{size[0]}x{size[1]} pixels"
    if isinstance(metadata, dict):
        for key in ("deviceWidth", "deviceHeight"):
            side = metadata.get(key)
            if key in metadata and not (_number(side) and 0 <= side <= MAX_SIDE):
                return f"a metadata {key} of {str(side)[:20]}"
    return ""


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def jpeg_size(data: str) -> tuple[int, int] | None:
    """(width, height) from the frame header of a base64 JPEG, decoding only the few bytes it reads (the
    segments before the header are skipped by their lengths); None if it is no JPEG."""
    if not data.startswith("/9j/"):  # FF D8 FF: start of image, then a marker
        return None
    at = 2
    for _ in range(64):  # Chromium's frame header is the third or fourth segment
        head = _decoded(data, at, 4)
        if len(head) < 4 or head[0] != 0xFF:
            return None
        marker, length = head[1], int.from_bytes(head[2:4], "big")
        if marker in JPEG_SOF:
            header = _decoded(data, at + 4, 5)  # precision, height, width
            if len(header) < 5:
                return None
            return int.from_bytes(header[3:5], "big"), int.from_bytes(header[1:3], "big")
        if marker in (0xD9, 0xDA) or not 0xC0 <= marker <= 0xFE or length < 2:
            return None  # image data or its end before any frame header, or no segment at all
        at += 2 + length
    return None


def _decoded(data: str, start: int, length: int) -> bytes:
    """Bytes ``start`` to ``start + length`` of base64 ``data`` (already checked), decoding only them."""
    first, last = start // 3 * 4, -(-(start + length) // 3) * 4
    chunk = binascii.a2b_base64(data[first:last])
    offset = start - start // 3 * 3
    return chunk[offset : offset + length]


def frame_event(number: int, data: str, meta: dict) -> bytes:
    """One SSE event: a JSON line (screen, number, capture and send times; ``f: "png"`` for a still
    picture) then the base64 image line (a JPEG frame, or that PNG)."""
    head = json.dumps(meta, separators=(",", ":"))
    return f"event: frame\nid: {number}\ndata: {head}\ndata: {data}\n\n".encode()


def status_event(state: str, message: str = "", screen_id: str = "") -> bytes:
    # The message may quote the upstream (a CDP error): its control and bidi characters are made visible.
    label = STATES.get(state, state)
    body = json.dumps({"s": screen_id, "state": state, "label": label, "message": visible(message)})
    return f"event: status\ndata: {body}\n\n".encode()


def tabs_event(body: dict) -> bytes:
    """The tab strip (``{"s", "shown", "tabs": [{"id", "title", "url"}], "more"}``) as one SSE event: JSON,
    so no title can end the line; the page shows it as text."""
    return f"event: tabs\ndata: {json.dumps(body, separators=(',', ':'))}\n\n".encode()


class Viewer:
    """One screen as one connection sees it (a wall connection holds one per tile, sharing ``wake``)."""

    def __init__(self, screen: Screen, min_interval: float, wake: asyncio.Event, tabs: bool = False):
        self.screen = screen
        self.tabs = tabs  # it gets the tab strip (the screen pane; not the wall's tiles)
        self.tabs_sent = 0  # version of the strip last sent
        self.min_interval = min_interval
        self.sent = 0  # number of the last frame sent
        self.sent_at = float("-inf")
        self.skipped = 0  # frames this viewer never got because a newer one replaced them
        self.status_sent = ""
        self.wake = wake

    def pending(self) -> bytes | None:
        """What this viewer has not seen yet: the current status, then the newest frame (checked now, if
        no viewer took it yet)."""
        parts = []
        screen = self.screen
        frame = b""
        if self._waiting():
            now = time.monotonic()
            if now - self.sent_at >= self.min_interval:
                screen.settle()
                if screen.frame is not None and screen.frame_number > self.sent:
                    frame = screen.frame
                    if self.sent:
                        self.skipped += screen.frame_number - self.sent - 1
                    self.sent, self.sent_at = screen.frame_number, now
        if screen.status != self.status_sent:
            parts.append(screen.status_bytes)
            self.status_sent = screen.status
        if self.tabs and screen.tabs_version != self.tabs_sent:
            parts.append(screen.tabs_bytes)
            self.tabs_sent = screen.tabs_version
        parts.append(frame)
        return b"".join(parts) or None

    def _waiting(self) -> bool:
        screen = self.screen
        return screen.raw is not None or (screen.frame is not None and screen.frame_number > self.sent)

    def due_in(self) -> float | None:
        """Seconds until a waiting frame may be sent at this viewer's rate (None: nothing waits)."""
        if not self._waiting():
            return None
        return max(0.0, self.min_interval - (time.monotonic() - self.sent_at))


@dataclass
class Screen:
    hub: ScreenHub
    source: Source
    viewers: set[Viewer] = field(default_factory=set)
    frame: bytes | None = None  # the newest frame checked, encoded once for every viewer
    frame_number: int = 0
    # The newest frame as it came, not checked yet: (number, base64, metadata, when it arrived).
    raw: tuple[int, str, object, float] | None = None
    number: int = 0  # of the newest frame arrived
    status: str = ""
    status_bytes: bytes = b""
    ended: bool = False
    task: asyncio.Task | None = None
    linger: asyncio.TimerHandle | None = None
    frames_in: int = 0  # frames read from the upstream (a test and benchmark figure)
    frames_bad: int = 0  # frames dropped by the check
    bad_in_row: int = 0
    connections: int = 0  # upstream connections opened over the screen's life
    upstream: cdp.Cdp | None = None  # the current connection (its budgets' counts)
    heard_at: float = 0.0  # event-loop time of the upstream's last message
    stalled: bool = False  # silent, and a probe went unanswered: until it is heard again
    probes: int = 0  # probes sent (a test figure)
    posters: int = 0  # still pictures shown before the first frame (a test figure)
    # The tab strip: the browser's pages, which one the screencast shows, the strip as an SSE event (sent
    # to each tab-strip viewer once per version), and the move the pilot is to make next.
    tabs: Tabs = field(default_factory=Tabs)
    shown: str = ""
    tabs_bytes: bytes = b""
    tabs_version: int = 0
    tabs_body: dict = field(default_factory=dict)
    want: tuple[str, bool] | None = None  # (target id, bring it to front too)
    steer: asyncio.Event = field(default_factory=asyncio.Event)
    following: bool = False  # the first list is in: a page created now is a tab the page opened
    resync: bool = False  # a target event was dropped (over the budget): the list is asked for again
    refresh_at: float | None = None  # event-loop time to ask for the list again (a tab changed)
    untitled_refreshes: int = 0  # asks in a row for a list that did not change but has an untitled tab
    moves: int = 0  # screencasts moved to another tab (a test figure)
    activations: int = 0  # ``Target.activateTarget`` sent (a test figure)

    def __post_init__(self):
        self._set_status("connecting")

    @property
    def screen_id(self) -> str:
        """What viewers call this screen (frames of a wall's many screens share one stream): the first
        part of the key, the session id."""
        first = self.source.key[0] if isinstance(self.source.key, tuple) else self.source.key
        return str(first)

    # Viewers ---------------------------------------------------------------------------------------

    def add(self, min_interval: float = 0.0, wake: asyncio.Event | None = None, tabs: bool = False) -> Viewer:
        viewer = Viewer(self, min_interval, wake or asyncio.Event(), tabs)
        self.viewers.add(viewer)
        if self.linger is not None:
            self.linger.cancel()
            self.linger = None
        if not self.ended and (self.task is None or self.task.done()):
            self.task = asyncio.get_running_loop().create_task(self._run())
        return viewer

    def remove(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)
        if self.viewers:
            return
        if self.linger is not None:
            self.linger.cancel()
        self.linger = asyncio.get_running_loop().call_later(self.hub.linger_seconds, self._close)

    def _close(self) -> None:
        self.linger = None
        if self.viewers:
            return
        if self.task is not None and not self.task.done():
            log.info("screen %s: no viewer left, closing the upstream", self.source.key[0])
            self.task.cancel()
        if self.hub.screens.get(self.source.key) is self:
            del self.hub.screens[self.source.key]

    def _wake(self) -> None:
        for viewer in self.viewers:
            viewer.wake.set()

    def _set_status(self, state: str, message: str = "") -> None:
        self.status = f"{state}:{message}"
        self.status_bytes = status_event(state, message, self.screen_id)
        self._wake()

    def heard(self) -> None:
        """A message came from the upstream (a frame, a reply, anything)."""
        self.heard_at = asyncio.get_running_loop().time()
        if self.stalled:
            self.stalled = False
            self._set_status("live")

    async def _watch(self, client: cdp.Cdp) -> None:
        """A page that does not change sends no frames: silence alone says nothing. After
        ``hub.probe_after`` s of it the browser is asked something cheap (``Target.getTargets``); no
        answer within ``hub.probe_timeout`` s, and still nothing else from it: "stalled" (a frozen
        service or browser), until it is heard again."""
        loop = asyncio.get_running_loop()
        while True:
            due = self.heard_at + self.hub.probe_after
            if self.stalled or loop.time() < due:
                await asyncio.sleep(max(due - loop.time(), 0.0) or self.hub.probe_after)
                continue
            asked = loop.time()
            self.probes += 1
            try:
                async with asyncio.timeout(self.hub.probe_timeout):
                    await client.call("Target.getTargets")
            except TimeoutError:
                if self.heard_at < asked:
                    self.stalled = True
                    silent = f"{loop.time() - self.heard_at:.0f} s"
                    self._set_status("stalled", f"the browser's CDP endpoint has said nothing for {silent}")
            except Exception:  # (closed, flooded, an error reply): the reader sees the same and ends it
                return

    def arrive(self, data: str, metadata: object) -> None:
        """A frame from the upstream: kept as it came (replacing one nobody took), checked when taken."""
        self.number += 1
        self.frames_in += 1
        self.raw = (self.number, data, metadata, time.time())
        self._wake()

    def settle(self) -> None:
        """Check the newest frame that arrived, once for every viewer: it becomes the frame viewers get,
        or it is dropped (and ``BAD_FRAMES`` of them in a row end the upstream)."""
        if self.raw is None:
            return
        number, data, metadata, arrived = self.raw
        self.raw = None
        problem = frame_problem(data, metadata)
        if problem:
            self.frames_bad += 1
            self.bad_in_row += 1
            if self.bad_in_row >= BAD_FRAMES and not self.ended:
                log.info("screen %s: %d bad frames in a row (%s)", self.screen_id, self.bad_in_row, problem)
                self._end(
                    "unavailable",
                    f"the CDP endpoint sent {self.bad_in_row} frames in a row that are not {FORMAT.upper()} "
                    f"images of at most {MAX_SIDE}x{MAX_SIDE} pixels (the last: {problem})",
                )
                if self.task is not None and not self.task.done():
                    self.task.cancel()
            return
        self.bad_in_row = 0
        meta = {"s": self.screen_id, "n": number, "t": round(arrived * 1000, 1)}
        stamp = metadata.get("timestamp") if isinstance(metadata, dict) else None
        # A finite number only: json.dumps writes Infinity and NaN, which JSON.parse refuses (the page
        # dropped every frame of an upstream that sent them).
        if _number(stamp) and math.isfinite(stamp * 1000):
            meta["c"] = round(stamp * 1000, 1)
        self.frame, self.frame_number = frame_event(number, data, meta), number

    async def _take_poster(self) -> None:
        """The source's still picture as the first frame, if it comes within ``POSTER_TIMEOUT`` and before
        any frame: a PNG (by its header) of at most ``MAX_SIDE`` pixels a side and ``POSTER_BYTES``, else
        nothing (the screen just waits for its frames). Taken before the CDP connection opens: a sandbox
        moving the session to a browser of its own would make the screenshot wait for that move."""
        if self.source.poster is None or self.frame is not None or self.raw is not None:
            return
        try:
            async with asyncio.timeout(POSTER_TIMEOUT):
                data = await self.source.poster()
        except (ServiceError, TimeoutError, OSError) as exc:
            log.info("screen %s: no still picture (%s)", self.screen_id, type(exc).__name__)
            return
        size = images.png_size(data) if isinstance(data, bytes) and len(data) <= POSTER_BYTES else None
        if size is None or not all(0 < side <= MAX_SIDE for side in size):
            self.frames_bad += 1
            return
        if self.frame is not None or self.raw is not None:
            return
        self.number += 1
        self.posters += 1
        meta = {"s": self.screen_id, "n": self.number, "t": round(time.time() * 1000, 1), "f": "png"}
        encoded = base64.b64encode(data).decode("ascii")
        self.frame, self.frame_number = frame_event(self.number, encoded, meta), self.number
        self._wake()

    # Tabs ------------------------------------------------------------------------------------------

    def target(self, method: str, params: dict) -> None:
        """A target event of the browser (cdp.TARGET_EVENTS): the strip follows it, and the screencast
        follows the front tab: a tab the page opened (Chromium brings it to front), another one once the
        shown tab closed."""
        if method in ("Target.targetCreated", "Target.targetInfoChanged") and self.refresh_at is None:
            self.refresh_at = asyncio.get_running_loop().time() + REFRESH_AFTER
            self.steer.set()
        if method == "Target.targetCreated":
            tab = self.tabs.created(params.get("targetInfo"))
            # A tab a page opened (it has an opener: window.open, a link's target): Chromium brings it to
            # front. One a client made (an executor's, ``Target.createTarget``) is listed, not followed.
            if tab is not None and tab.opener and self.following:
                self._move(tab.target_id, front=False)
        elif method == "Target.targetInfoChanged":
            self.tabs.changed(params.get("targetInfo"))
        elif method == "Target.targetDestroyed":
            gone = self.tabs.destroyed(params.get("targetId"))
            if gone is not None and gone.target_id == self.shown:
                self._after(gone)
        elif method == "Target.detachedFromTarget" and self.shown:  # the shown page's session ended
            shown = self.tabs.tabs.get(self.shown)
            self._move(self.shown, front=False) if shown else self._after(Tab(self.shown, "", ""))
        self._publish()

    def targets_missed(self) -> None:
        self.resync = True
        self.steer.set()

    def _after(self, gone: Tab) -> None:
        following = self.tabs.after(gone)
        if following:
            self._move(following, front=True)  # what the screen shows is where input goes: the front tab

    def _move(self, target_id: str, *, front: bool) -> None:
        self.want = (target_id, front)
        self.steer.set()

    def _publish(self) -> None:
        """The strip to its viewers, when it changed."""
        body = {"s": self.screen_id, "shown": self.shown, "tabs": self.tabs.listed(), "more": self.tabs.full}
        if body == self.tabs_body:
            return
        self.tabs_body = body
        self.tabs_version += 1
        self.tabs_bytes = tabs_event(body)
        self._wake()

    async def bring(self, target_id: str) -> None:
        """The driver's choice: ``target_id`` (one of the strip's, checked by the caller) to front, then
        shown. Raises cdp.Closed when this process relays no live connection of the screen now."""
        client = self.upstream
        if client is None or self.ended or not self.following:
            raise cdp.Closed("the screen is not live in this console process")
        await client.call("Target.activateTarget", {"targetId": target_id})
        self.activations += 1
        self._move(target_id, front=False)

    async def _pilot(self, client: cdp.Cdp, target: Target) -> None:
        """Moves the screencast to the tab wanted (one move at a time, the newest wish wins), and asks for
        the list again when events were missed or ``REFRESH_AFTER`` s after a tab changed (Chromium does not
        say every title change: a new tab's title comes once loaded), until it settles: at most one
        ``Target.getTargets`` a ``REFRESH_AFTER``, whatever the upstream says."""
        loop = asyncio.get_running_loop()
        while True:
            delay = None if self.refresh_at is None else max(0.0, self.refresh_at - loop.time())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self.steer.wait()
            self.steer.clear()
            try:
                await self._steer(client, target, loop.time())
            except TimeoutError:  # an unanswered command: the watcher says "stalled"; the next wish tries
                continue
            except (cdp.Closed, cdp.Flooded):  # the reader sees the same and ends the connection
                return

    async def _steer(self, client: cdp.Cdp, target: Target, now: float) -> None:
        if self.refresh_at is not None and now >= self.refresh_at:
            self.refresh_at, self.resync = None, True
        if self.resync:
            self.resync = False
            before = self.tabs.listed()
            self.tabs.reset(await client.targets())
            listed = self.tabs.listed()
            if listed != before:
                self.untitled_refreshes = 0
            # Again while it changes, and while a tab has no title yet (a page still loading on a busy
            # machine: Chromium does not say when its title comes, and names a loading tab by a part of its
            # URL, "example.com/path" then "example.com"), at most UNTITLED_REFRESHES times.
            untitled = any(not tab["title"] or tab["title"] in tab["url"] for tab in listed)
            if listed != before or (untitled and self.untitled_refreshes < UNTITLED_ASKS):
                self.untitled_refreshes += listed == before
                slow = self.untitled_refreshes > UNTITLED_REFRESHES
                gap = UNTITLED_SLOW_GAP if slow else REFRESH_AFTER
                self.refresh_at = asyncio.get_running_loop().time() + gap
            if self.shown not in self.tabs.tabs and (self.want is None or self.want[0] not in self.tabs.tabs):
                self._after(Tab(self.shown, "", ""))
            self._publish()
        if self.want is None:
            return
        (wanted, front), self.want = self.want, None
        if wanted not in self.tabs.tabs or (wanted == self.shown and client.page is not None):
            return
        try:
            await self._show(client, target, wanted, front=front)
        except cdp.EndpointUnavailable:  # it closed meanwhile (its destruction moves on), or refused
            if client.page is None:
                self.resync = True
                self.steer.set()
        self._publish()

    async def _show(self, client: cdp.Cdp, target: Target, target_id: str, *, front: bool) -> None:
        """The screencast of ``target_id`` instead of the tab shown (whose session is let go)."""
        before = client.page
        if front:
            await client.call("Target.activateTarget", {"targetId": target_id})
            self.activations += 1
        page = await client.attach(target_id)
        self.shown = target_id
        await client.call(
            "Page.startScreencast",
            {
                "format": FORMAT,
                "quality": self.source.quality,
                "maxWidth": target.width,
                "maxHeight": target.height,
            },
            session=page,
        )
        if before is not None and before != page:
            self.moves += 1
            with contextlib.suppress(cdp.EndpointUnavailable):
                await client.call("Target.detachFromTarget", {"sessionId": before})

    def _end(self, state: str, message: str) -> None:
        self.ended = True
        self._set_status(state, message)

    # Upstream --------------------------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        first = True
        try:
            while True:
                self._set_status("connecting" if first else "reconnecting")
                try:
                    target = await self.source.locate()
                    if target.ended:
                        self._end("ended", "no more frames will arrive")
                        return
                    await cdp.check_cdp_url(target.cdp_ws_url, allow_private=self.source.allow_private)
                    if first and target.awake:
                        await self._take_poster()
                    self.connections += 1
                    await self._read(target)
                except cdp.Busy as exc:
                    self._end("refused", str(exc))
                    return
                except cdp.EndpointUnavailable as exc:
                    if first or self.frames_in == 0:
                        self._end("unavailable", str(exc))
                        return
                    dropped = str(exc)
                except (OSError, TimeoutError, ConnectionError) as exc:
                    dropped = type(exc).__name__
                except ServiceError as exc:
                    dropped = exc.message
                except cdp.Closed as exc:
                    dropped = str(exc)
                except cdp.Flooded as exc:
                    # Not a dropped connection: an upstream that floods would flood again.
                    log.info("screen %s: %s", self.source.key[0], exc)
                    self._end("unavailable", str(exc))
                    return
                else:
                    dropped = "closed"
                first = False
                # The upstream went away: the session ended, or the connection dropped (then come back).
                try:
                    if (await self.source.locate()).ended:
                        self._end("ended", "no more frames will arrive")
                        return
                except ServiceError:
                    pass
                failures += 1
                log.info("screen %s: upstream dropped (%s)", self.source.key[0], dropped)
                if failures > MAX_RECONNECTS:
                    self._end(
                        "unavailable",
                        "lost the session's CDP connection and could not get it back "
                        f"(the last time: {dropped})",
                    )
                    return
                self._set_status("reconnecting")
                await asyncio.sleep(min(0.25 * 2 ** (failures - 1), 3.0))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug must not leave viewers waiting forever
            log.exception("screen %s failed", self.source.key[0])
            self._end("unavailable", f"the screen relay failed ({type(exc).__name__})")

    async def _read(self, target: Target) -> None:
        upstream = await cdp.open_connection(target.cdp_ws_url, allow_private=self.source.allow_private)
        async with upstream:
            client = self.upstream = cdp.Cdp(upstream)
            reader = asyncio.get_running_loop().create_task(client.read(self))
            self.following, self.want, self.refresh_at = False, None, None
            try:
                # The tabs: their events from now on, then the list (a tab created in between is in both).
                await client.call("Target.setDiscoverTargets", {"discover": True})
                self.tabs.reset(await client.targets())
                # A browser just started or woken (its session moved to a process of its own, its page
                # restored) may list its page a moment after it takes connections: asked again a while.
                waited = 0.0
                while not self.tabs.tabs and waited < FIRST_PAGE_SECONDS:
                    await asyncio.sleep(FIRST_PAGE_POLL)
                    waited += FIRST_PAGE_POLL
                    self.tabs.reset(await client.targets())
                if not self.tabs.tabs:
                    raise cdp.EndpointUnavailable("the browser has no page to show")
                # The tab shown before a reconnection, else the first: the browser's own.
                shown = self.shown if self.shown in self.tabs.tabs else next(iter(self.tabs.tabs))
                self.shown = ""
                try:
                    await self._show(client, target, shown, front=False)
                except cdp.EndpointUnavailable as exc:
                    if client.page is not None:  # attached, and the screencast refused: said as it is
                        raise
                    # The page went between the list and the attach (a sandbox moving the session to a
                    # browser of its own closes it): a dropped connection, tried again, not a screen that
                    # cannot be shown.
                    raise cdp.Closed(f"the page went away ({exc})") from None
                self.following = True
                self._publish()
                self.heard()
                self._set_status("live")
                loop = asyncio.get_running_loop()
                helpers = [
                    loop.create_task(self._watch(client)),
                    loop.create_task(self._pilot(client, target)),
                ]
                try:
                    await reader
                finally:
                    for helper in helpers:
                        helper.cancel()
            except cdp.Flooded:
                upstream.transport.abort()  # no closing handshake for it to stall (close_timeout is 10 s)
                raise
            except asyncio.CancelledError:
                if self.ended:  # ended for its bad frames: the same
                    upstream.transport.abort()
                raise
            finally:
                reader.cancel()
                with contextlib.suppress(BaseException):
                    await reader


class ScreenHub:
    """Every screen relayed by this process, by key (org, project, session id)."""

    def __init__(self, *, linger_seconds: float = 3.0, probe_after: float = 5.0, probe_timeout: float = 2.5):
        self.screens: dict[Hashable, Screen] = {}
        self.linger_seconds = linger_seconds
        # Silent this long: ask the browser something; no answer within probe_timeout: "stalled".
        self.probe_after = probe_after
        self.probe_timeout = probe_timeout

    def subscribe(
        self,
        source: Source,
        *,
        min_interval: float = 0.0,
        wake: asyncio.Event | None = None,
        tabs: bool = False,
    ) -> Viewer:
        screen = self.screens.get(source.key)
        if screen is not None and screen.ended:
            # Ended, unavailable or refused earlier: a new viewer (a page opened, a tile's Retry) looks again;
            # the viewers of the old one keep what it said, and leave it.
            screen = None
        if screen is None:
            screen = Screen(self, source)
            self.screens[source.key] = screen
        else:
            screen.source = source
        return screen.add(min_interval, wake, tabs)

    def upstreams(self) -> int:
        return sum(1 for s in self.screens.values() if s.task is not None and not s.task.done())

    def viewers(self) -> int:
        return sum(len(s.viewers) for s in self.screens.values())


class Allowance:
    """Which sessions' screens the walls of this process keep live: at most ``per_viewer`` distinct sessions
    for one viewer (a user in an org, all their walls together) and ``per_org`` for one org. Each live
    tile holds a CDP connection, which keeps the session's browser awake (and, at the service, a browser
    slot): a wall's connection claims its tiles in its order, and what is beyond either bound is paused,
    not connected. Per process: each console replica keeps its own count."""

    def __init__(self):
        # connection (a ``Ticket``): (org, viewer, wall, ids). Weakly held: a stream that never ran (its
        # client gone before the first byte), and so never released its claim, frees it once collected.
        self.claims: weakref.WeakKeyDictionary[Ticket, tuple[Hashable, Hashable, str, list[str]]] = (
            weakref.WeakKeyDictionary()
        )

    def _held(self, org: Hashable, viewer: Hashable | None = None) -> set[str]:
        return {
            sid
            for owner, who, _, ids in self.claims.values()
            if owner == org and (viewer is None or who == viewer)
            for sid in ids
        }

    def claim(
        self,
        connection: Ticket,
        org: Hashable,
        viewer: Hashable,
        ids: list[str],
        *,
        per_viewer: int,
        per_org: int,
        wall: str = "",
    ) -> tuple[list[str], dict[str, str]]:
        """(the ids that may be live, {the paused ones: why, in words}). ``wall`` names the page: its new
        connection (the tiles on screen changed) replaces its previous one at once, which its browser has
        closed but whose end the server may not have seen yet."""
        if wall:
            for ticket, (owner, who, page, _) in list(self.claims.items()):
                if (owner, who, page) == (org, viewer, wall):
                    del self.claims[ticket]
        mine, ours = self._held(org, viewer), self._held(org)
        granted: list[str] = []
        paused: dict[str, str] = {}
        for sid in ids:
            if sid not in mine and len(mine) >= per_viewer:
                paused[sid] = f"at most {per_viewer} live tiles per viewer at once: the others wait"
            elif sid not in ours and len(ours) >= per_org:
                paused[sid] = f"this organization's walls already show {per_org} live tiles, their bound"
            else:
                granted.append(sid)
                mine.add(sid)
                ours.add(sid)
        self.claims[connection] = (org, viewer, wall, granted)
        return granted, paused

    def release(self, connection: Ticket) -> None:
        self.claims.pop(connection, None)


class Ticket:
    """One wall connection's claim on the ``Allowance`` (held by its stream; weakly by the allowance)."""

    __slots__ = ("__weakref__",)


async def next_chunk(viewers: list[Viewer], wake: asyncio.Event, keepalive: float) -> bytes | None:
    """What one connection (one viewer, or a wall's many) should write next; None after ``keepalive``
    seconds with nothing to send. Viewers of one connection share ``wake``."""
    deadline = asyncio.get_running_loop().time() + keepalive
    while True:
        wake.clear()
        parts = [chunk for viewer in viewers if (chunk := viewer.pending()) is not None]
        if parts:
            return b"".join(parts)
        waits = [d for viewer in viewers if (d := viewer.due_in()) is not None]
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return None
        timeout = min([remaining, *waits])
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await wake.wait()


async def stream(viewers: list[Viewer], wake: asyncio.Event, keepalive: float, *, before: bytes = b""):
    """The bytes of one connection: ``before`` (events the view adds), frames and statuses, a keepalive
    event after ``keepalive`` seconds of silence; ends once every screen has ended and said so. Leaving
    unsubscribes its viewers."""
    try:
        yield b"retry: 2000\n: connected\n\n" + before
        while True:
            chunk = await next_chunk(viewers, wake, keepalive)
            if chunk is None:  # never "live" for a screen whose upstream went silent and does not answer
                stalled = any(v.screen.stalled for v in viewers)
                chunk = b"event: keepalive\ndata: %s\n\n" % (b"stalled" if stalled else b"live")
            yield chunk
            if all(v.screen.ended and v.status_sent == v.screen.status for v in viewers):
                return
    finally:
        for viewer in viewers:
            with contextlib.suppress(RuntimeError):
                viewer.screen.remove(viewer)
