"""The live screen relay: a session's CDP screencast read once per process and fanned out to viewers.

Why a hub of its own, beside ``console.live.hub``: telemetry must reach every viewer in order, so that hub
keeps a log of frames; a screen is the opposite: only the newest frame matters. A ``Screen`` keeps exactly
one frame (already encoded as an SSE event, shared by every viewer) and a counter. A viewer remembers the
number of the last frame it sent; when it is ready for more it takes whatever is newest, so a slow viewer
skips frames and memory does not grow with the number of viewers or their speed. A viewer can also ask for
a lower rate (the session wall's thumbnails take at most one frame a second from the same upstream).

The upstream: ``websockets`` (already a dependency, maintained, asyncio-native) speaks to the session's
``cdp_ws_url``; the CDP messages are plain JSON, so Playwright's ``connect_over_cdp`` (a browser-level
driver process and its protocol on top) would only add weight. The relay attaches to the session's page
target (``Target.attachToTarget`` with ``flatten``), starts ``Page.startScreencast`` and acks each frame as
soon as it arrives, so Chromium's pace never depends on the slowest viewer. The frame's base64 JPEG is
passed through to the browsers as it came (no decoding, no re-encoding).

The URL (it carries the session's ``jwt``) never leaves this process: it is checked like the service's
base URL (``ws``/``wss`` only, the same public-address rule), the address actually connected to is checked
again before the handshake is written, no redirect is followed, and it is neither logged nor shown (nor is
any websockets error text, which may quote it). What the upstream sends is bounded (``MAX_MESSAGE``) and a
frame is relayed only if it is plain base64 (an SSE line cannot be ended from upstream). The upstream
closes ``linger`` seconds after the last viewer left.

Never imports Django.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import math
import re
import socket
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field

from console.service import targets
from console.service.errors import ServiceError
from console.web.text import visible

log = logging.getLogger("console.live.screen")

STATES = {
    "connecting": "Connecting…",
    "live": "Live",
    "reconnecting": "Reconnecting…",
    "ended": "The session has ended",
    "unavailable": "No screen from this session's CDP endpoint",
}
OPEN_TIMEOUT = 10.0
COMMAND_TIMEOUT = 10.0
MAX_RECONNECTS = 5
# The largest CDP message the relay reads: a screencast frame of the largest viewport (a few hundred KB of
# base64 JPEG) with room to spare; a bigger message closes the connection (1009) instead of filling memory.
MAX_MESSAGE = 8 * 1024 * 1024
# A frame is passed to viewers as it came: base64 only, so nothing an upstream sends can end the SSE line.
BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


class ScreenUnavailable(Exception):
    """The session has no usable CDP endpoint (missing, not allowed, refused, no page): use the live view."""


@dataclass
class Target:
    """Where to read a session's screen: its CDP URL and viewport, or that it has ended."""

    cdp_ws_url: str | None
    width: int
    height: int
    ended: bool = False


@dataclass
class Source:
    key: Hashable
    # Called at each (re)connection: the session's current record (a jwt may change between connections).
    locate: Callable[[], Awaitable[Target]]
    allow_private: bool = False
    quality: int = 70


async def check_cdp_url(url: str | None, *, allow_private: bool) -> None:
    """Raise ScreenUnavailable unless the console may open ``url`` (the base URL rule, over ws/wss)."""
    if not url:
        raise ScreenUnavailable("the session has no cdp_ws_url")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("ws", "wss"):
        raise ScreenUnavailable("the session's cdp_ws_url is not a ws:// or wss:// URL")
    as_http = urllib.parse.urlunsplit(parts._replace(scheme="http" if parts.scheme == "ws" else "https"))
    try:
        await targets.acheck_url(as_http, allow_private=allow_private)
    except targets.ForbiddenTarget as exc:
        raise ScreenUnavailable(
            exc.message.replace("the service base URL", "the session's cdp_ws_url")
        ) from None


def frame_event(number: int, data: str, meta: dict) -> bytes:
    """One SSE event: a JSON line (number, size, capture and send times) then the base64 JPEG line."""
    head = json.dumps(meta, separators=(",", ":"))
    return f"event: frame\nid: {number}\ndata: {head}\ndata: {data}\n\n".encode()


def status_event(state: str, message: str = "", screen_id: str = "") -> bytes:
    # The message may quote the upstream (a CDP error): its control and bidi characters are made visible.
    label = STATES.get(state, state)
    body = json.dumps({"s": screen_id, "state": state, "label": label, "message": visible(message)})
    return f"event: status\ndata: {body}\n\n".encode()


class Viewer:
    """One screen as one connection sees it (a wall connection holds one per tile, sharing ``wake``)."""

    def __init__(self, screen: Screen, min_interval: float, wake: asyncio.Event):
        self.screen = screen
        self.min_interval = min_interval
        self.sent = 0  # number of the last frame sent
        self.sent_at = float("-inf")
        self.skipped = 0  # frames this viewer never got because a newer one replaced them
        self.status_sent = ""
        self.wake = wake

    def pending(self) -> bytes | None:
        """What this viewer has not seen yet: the current status, then the newest frame."""
        parts = []
        screen = self.screen
        if screen.status != self.status_sent:
            parts.append(screen.status_bytes)
            self.status_sent = screen.status
        if screen.frame is not None and screen.number > self.sent:
            now = time.monotonic()
            if now - self.sent_at >= self.min_interval:
                parts.append(screen.frame)
                if self.sent:
                    self.skipped += screen.number - self.sent - 1
                self.sent, self.sent_at = screen.number, now
        return b"".join(parts) or None

    def due_in(self) -> float | None:
        """Seconds until a waiting frame may be sent at this viewer's rate (None: nothing waits)."""
        if self.screen.frame is None or self.screen.number <= self.sent:
            return None
        return max(0.0, self.min_interval - (time.monotonic() - self.sent_at))


@dataclass
class Screen:
    hub: ScreenHub
    source: Source
    viewers: set[Viewer] = field(default_factory=set)
    frame: bytes | None = None  # the newest frame, encoded once for every viewer
    number: int = 0
    status: str = ""
    status_bytes: bytes = b""
    ended: bool = False
    task: asyncio.Task | None = None
    linger: asyncio.TimerHandle | None = None
    frames_in: int = 0  # frames read from the upstream (a test and benchmark figure)
    connections: int = 0  # upstream connections opened over the screen's life

    def __post_init__(self):
        self._set_status("connecting")

    @property
    def screen_id(self) -> str:
        """What viewers call this screen (frames of a wall's many screens share one stream): the first
        part of the key, the session id."""
        first = self.source.key[0] if isinstance(self.source.key, tuple) else self.source.key
        return str(first)

    # Viewers ---------------------------------------------------------------------------------------

    def add(self, min_interval: float = 0.0, wake: asyncio.Event | None = None) -> Viewer:
        viewer = Viewer(self, min_interval, wake or asyncio.Event())
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

    def publish(self, data: str, capture_ms: float | None) -> None:
        self.number += 1
        self.frames_in += 1
        meta = {"s": self.screen_id, "n": self.number, "t": round(time.time() * 1000, 1)}
        if capture_ms is not None:
            meta["c"] = round(capture_ms, 1)
        self.frame = frame_event(self.number, data, meta)
        self._wake()

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
                    await check_cdp_url(target.cdp_ws_url, allow_private=self.source.allow_private)
                    self.connections += 1
                    await self._read(target)
                except ScreenUnavailable as exc:
                    if first or self.frames_in == 0:
                        self._end("unavailable", str(exc))
                        return
                    dropped = str(exc)
                except (OSError, TimeoutError, ConnectionError) as exc:
                    dropped = type(exc).__name__
                except ServiceError as exc:
                    dropped = exc.message
                except _Closed as exc:
                    dropped = str(exc)
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
                    self._end("unavailable", "lost the session's CDP connection and could not get it back")
                    return
                self._set_status("reconnecting")
                await asyncio.sleep(min(0.25 * 2 ** (failures - 1), 3.0))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug must not leave viewers waiting forever
            log.exception("screen %s failed", self.source.key[0])
            self._end("unavailable", f"the screen relay failed ({type(exc).__name__})")

    async def _read(self, target: Target) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

        # The TCP connection is opened (and its address checked) here, before a byte of the handshake is
        # written; websockets follows no redirect over a socket it was given.
        sock = await _open_socket(target.cdp_ws_url, allow_private=self.source.allow_private)
        try:
            upstream = await connect(
                target.cdp_ws_url,
                sock=sock,
                max_size=MAX_MESSAGE,
                open_timeout=OPEN_TIMEOUT,
                compression=None,
            )
        except InvalidStatus as exc:
            sock.close()
            status = exc.response.status_code
            if status >= 500 or status == 429:
                # Busy (a browser still starting, a rate limit): try again like a dropped connection.
                raise _Closed(f"the CDP endpoint answered {status}") from None
            raise ScreenUnavailable(f"the CDP endpoint refused the connection ({_short(exc)})") from None
        except (InvalidHandshake, InvalidURI, ValueError) as exc:
            # Never the exception's text: websockets quotes the URL (and so the jwt) in some of them.
            sock.close()
            raise ScreenUnavailable(f"the CDP endpoint refused the connection ({_short(exc)})") from None
        except BaseException:
            sock.close()
            raise
        async with upstream:
            cdp = _Cdp(upstream)
            reader = asyncio.get_running_loop().create_task(cdp.read(self))
            try:
                page = await cdp.page_session()
                await cdp.call(
                    "Page.startScreencast",
                    {
                        "format": "jpeg",
                        "quality": self.source.quality,
                        "maxWidth": target.width,
                        "maxHeight": target.height,
                    },
                    session=page,
                )
                self._set_status("live")
                await reader
            except ConnectionClosed as exc:
                raise _Closed(_short(exc)) from None
            finally:
                reader.cancel()
                with contextlib.suppress(BaseException):
                    await reader


class _Closed(Exception):
    pass


async def _open_socket(url: str, *, allow_private: bool) -> socket.socket:
    """A TCP connection to ``url``'s host, to an address the relay may reach (checked on the address
    connected to, so a name that resolves elsewhere a moment after ``check_cdp_url`` gets nothing)."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "wss" else 80)
    except ValueError:
        raise ScreenUnavailable("the session's cdp_ws_url has an invalid port") from None
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(OPEN_TIMEOUT):
        infos = await loop.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
        failed: OSError | None = None
        for family, kind, proto, _, address in infos:
            reason = targets.refusal(str(address[0]), allow_private=allow_private)
            if reason:
                raise ScreenUnavailable(f"the session's cdp_ws_url reached {reason}")
            sock = socket.socket(family, kind, proto)
            sock.setblocking(False)
            try:
                await loop.sock_connect(sock, address)
            except OSError as exc:
                sock.close()
                failed = exc
                continue
            except BaseException:
                sock.close()
                raise
            return sock
    raise failed or OSError("the session's cdp_ws_url's host has no address")


def _short(exc: Exception) -> str:
    # websockets' messages may quote the request line (and so the jwt): keep its class and status only.
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return f"HTTP {status}" if status else type(exc).__name__


class _Cdp:
    """Just enough of a CDP client: numbered commands awaiting their replies, frames handed to the screen."""

    def __init__(self, socket):
        self.socket = socket
        self.ids = itertools.count(1)
        self.replies: dict[int, asyncio.Future] = {}
        self.page: str | None = None
        self.detached = False

    async def call(self, method: str, params: dict | None = None, *, session: str | None = None) -> dict:
        number = next(self.ids)
        message: dict = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        future = asyncio.get_running_loop().create_future()
        self.replies[number] = future
        await self.socket.send(json.dumps(message))
        try:
            async with asyncio.timeout(COMMAND_TIMEOUT):
                reply = await future
        finally:
            self.replies.pop(number, None)
        if "error" in reply:
            raise ScreenUnavailable(f"{method} failed: {str(reply['error'].get('message', ''))[:200]}")
        return reply.get("result") or {}

    async def page_session(self) -> str:
        found = await self.call("Target.getTargets")
        pages = [t for t in found.get("targetInfos", []) if t.get("type") == "page"]
        if not pages:
            raise ScreenUnavailable("the browser has no page to show")
        attached = await self.call(
            "Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True}
        )
        self.page = attached.get("sessionId")
        if not self.page:
            raise ScreenUnavailable("could not attach to the session's page")
        return self.page

    async def read(self, screen: Screen) -> None:
        try:
            await self._read(screen)
        finally:
            # Whoever waits for a reply will not get one: fail them now rather than at their timeout.
            for future in self.replies.values():
                if not future.done():
                    future.set_exception(_Closed("the CDP connection closed"))

    async def _read(self, screen: Screen) -> None:
        async for raw in self.socket:
            message = json.loads(raw)
            number = message.get("id")
            if number is not None:
                future = self.replies.get(number)
                if future is not None and not future.done():
                    future.set_result(message)
                continue
            method = message.get("method")
            if method == "Page.screencastFrame" and message.get("sessionId") == self.page:
                params = message.get("params") or {}
                # Ack first: Chromium sends the next frame when this one is acknowledged.
                ack = {
                    "id": next(self.ids),
                    "sessionId": self.page,
                    "method": "Page.screencastFrameAck",
                    "params": {"sessionId": params.get("sessionId")},
                }
                await self.socket.send(json.dumps(ack))
                data = params.get("data")
                if isinstance(data, str) and BASE64.fullmatch(data):
                    stamp = (params.get("metadata") or {}).get("timestamp")
                    # A finite number only: json.dumps writes Infinity and NaN, which JSON.parse refuses
                    # (the page dropped every frame of an upstream that sent them).
                    finite = isinstance(stamp, int | float) and not isinstance(stamp, bool)
                    finite = finite and math.isfinite(stamp * 1000)
                    screen.publish(data, stamp * 1000 if finite else None)
            elif _ends_page(message, self.page):
                raise _Closed(method)


def _ends_page(message: dict, page: str | None) -> bool:
    """The page we attached to went away (detached, crashed) or the whole inspector did."""
    method = message.get("method")
    if method == "Inspector.detached":
        return True
    if method == "Target.detachedFromTarget":
        return (message.get("params") or {}).get("sessionId") == page
    return method == "Inspector.targetCrashed" and message.get("sessionId") == page


class ScreenHub:
    """Every screen relayed by this process, by key (org, project, session id)."""

    def __init__(self, *, linger_seconds: float = 3.0):
        self.screens: dict[Hashable, Screen] = {}
        self.linger_seconds = linger_seconds

    def subscribe(
        self, source: Source, *, min_interval: float = 0.0, wake: asyncio.Event | None = None
    ) -> Viewer:
        screen = self.screens.get(source.key)
        if screen is not None and screen.ended and not screen.viewers:
            screen = None  # ended or unavailable earlier: look again
        if screen is None:
            screen = Screen(self, source)
            self.screens[source.key] = screen
        else:
            screen.source = source
        return screen.add(min_interval, wake)

    def upstreams(self) -> int:
        return sum(1 for s in self.screens.values() if s.task is not None and not s.task.done())

    def viewers(self) -> int:
        return sum(len(s.viewers) for s in self.screens.values())


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


async def stream(viewers: list[Viewer], wake: asyncio.Event, keepalive: float):
    """The bytes of one connection: frames and statuses, a keepalive event after ``keepalive`` seconds of
    silence; ends once every screen has ended and said so. Leaving unsubscribes its viewers."""
    try:
        yield b"retry: 2000\n: connected\n\n"
        while True:
            chunk = await next_chunk(viewers, wake, keepalive)
            yield chunk if chunk is not None else b"event: keepalive\ndata: live\n\n"
            if all(v.screen.ended and v.status_sent == v.screen.status for v in viewers):
                return
    finally:
        for viewer in viewers:
            with contextlib.suppress(RuntimeError):
                viewer.screen.remove(viewer)
