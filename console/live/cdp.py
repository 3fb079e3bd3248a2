"""Just enough of a CDP client for the screen relay (console/live/screen.py): a session's ``cdp_ws_url``
opened safely, numbered commands awaiting their replies, and a reader that hands each screencast frame to
whoever listens (``heard()`` for any message, ``arrive(data, metadata)`` for a frame, ``target(method,
params)`` for the browser's target events that keep the tab strip, once the relay asked for them).

``websockets`` (already a dependency, maintained, asyncio-native) speaks to the URL; the CDP messages are
plain JSON, so Playwright's ``connect_over_cdp`` (a browser-level driver process and its protocol on top)
would only add weight.

The URL (it carries the session's ``jwt``) never leaves this process: it is checked like the service's base
URL (``ws``/``wss`` only, the same public-address rule), the address actually connected to is checked again
before the handshake is written, no redirect is followed, and it is neither logged nor shown (nor is any
websockets error text, which may quote it).

What the upstream sends is not trusted, and its cost is bounded:

- a message is at most ``MAX_MESSAGE``; one larger than ``SMALL`` is never parsed whole: a frame's base64 is
  cut out where Chromium writes it (``"data":"`` in the first ``HEAD`` characters, up to the next quote)
  and only the rest is parsed; a large message that is not a frame is dropped unread;
- messages the client did not ask for (not a reply to one of its commands, not a frame of its page) and
  frames each have a budget (``Budget``: so many a second, by size); beyond it they are dropped, and a
  sustained excess ends the connection with ``Flooded`` instead of costing the process for as long as
  someone watches.

Never imports Django.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import socket
import time
import urllib.parse
from typing import Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from console.service import targets

OPEN_TIMEOUT = 10.0
COMMAND_TIMEOUT = 10.0
# The largest CDP message read: a screencast frame of the largest viewport (a few hundred KB of base64 JPEG)
# with room to spare; a bigger message closes the connection (1009) instead of filling memory.
MAX_MESSAGE = 8 * 1024 * 1024
SMALL = 64 * 1024  # a message parsed whole; a larger one must be a frame, parsed with its data cut out
HEAD = 1024  # where a frame's data must start (Chromium writes it first) to be cut out cheaply
DATA_KEY = re.compile(r'"data"\s*:\s*"')
# Budgets in tokens (``cost``: one a message and one per 64 KiB). Chromium sends a handful of events the
# client did not ask for over a whole session; frames come at most at the display's rate, a few hundred KB
# each (1080p at 60 a second is about 20 MB/s): 64 MiB/s, and 64 MiB at once, is far above either.
UNSOLICITED_BUDGET = {"rate": 50, "burst": 200, "flood": 2000}
FRAME_BUDGET = {"rate": 1024, "burst": 1024, "flood": 4096}
MAX_PENDING_ACKS = 64


class EndpointUnavailable(Exception):
    """The session has no usable CDP endpoint (missing, not allowed, refused, no page)."""


class Busy(Exception):
    """The service refused the CDP connection for now (429: no browser free, a rate limit): said in words,
    not retried in a loop (a retry is the viewer's to ask for)."""


class Closed(Exception):
    """The connection went away (dropped, closed, the page detached): one may connect again."""


class Flooded(Exception):
    """The upstream sent far more than its budget, for long enough: it is ended, not read on."""


class Listener(Protocol):
    def heard(self) -> None: ...

    def arrive(self, data: str, metadata: object) -> None: ...

    def target(self, method: str, params: dict) -> None: ...

    def targets_missed(self) -> None: ...


# The browser's target events (``Target.setDiscoverTargets``), and the shown page's session detaching, are
# handed to the listener (the screen's tab strip, console/live/screen.py); within the unsolicited budget.
TARGET_EVENTS = frozenset(
    {
        "Target.targetCreated",
        "Target.targetInfoChanged",
        "Target.targetDestroyed",
        "Target.detachedFromTarget",
    }
)


async def check_cdp_url(url: str | None, *, allow_private: bool) -> None:
    """Raise EndpointUnavailable unless the console may open ``url`` (the base URL rule, over ws/wss)."""
    if not url:
        raise EndpointUnavailable("the session has no cdp_ws_url")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("ws", "wss"):
        raise EndpointUnavailable("the session's cdp_ws_url is not a ws:// or wss:// URL")
    as_http = urllib.parse.urlunsplit(parts._replace(scheme="http" if parts.scheme == "ws" else "https"))
    try:
        await targets.acheck_url(as_http, allow_private=allow_private)
    except targets.ForbiddenTarget as exc:
        raise EndpointUnavailable(
            exc.message.replace("the service base URL", "the session's cdp_ws_url")
        ) from None


async def open_connection(url: str, *, allow_private: bool) -> ClientConnection:
    """The websocket to a checked ``url``: Busy on a 429, Closed on a 5xx (a browser still starting: try
    again), EndpointUnavailable on any other refusal."""
    # The TCP connection is opened (and its address checked) here, before a byte of the handshake is
    # written; websockets follows no redirect over a socket it was given.
    sock = await _open_socket(url, allow_private=allow_private)
    try:
        return await connect(
            url, sock=sock, max_size=MAX_MESSAGE, open_timeout=OPEN_TIMEOUT, compression=None
        )
    except InvalidStatus as exc:
        sock.close()
        status = exc.response.status_code
        said = _refusal_words(exc.response.body, url)
        if status == 429:
            raise Busy(f"busy{said}") from None
        if status >= 500:
            raise Closed(f"the CDP endpoint answered {status}{said}") from None
        raise EndpointUnavailable(f"the CDP endpoint refused the connection ({short(exc)}){said}") from None
    except (InvalidHandshake, InvalidURI, ValueError) as exc:
        # Never the exception's text: websockets quotes the URL (and so the jwt) in some of them.
        sock.close()
        raise EndpointUnavailable(f"the CDP endpoint refused the connection ({short(exc)})") from None
    except BaseException:
        sock.close()
        raise


async def _open_socket(url: str, *, allow_private: bool) -> socket.socket:
    """A TCP connection to ``url``'s host, to an address the console may reach (checked on the address
    connected to, so a name that resolves elsewhere a moment after ``check_cdp_url`` gets nothing)."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "wss" else 80)
    except ValueError:
        raise EndpointUnavailable("the session's cdp_ws_url has an invalid port") from None
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(OPEN_TIMEOUT):
        infos = await loop.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
        failed: OSError | None = None
        for family, kind, proto, _, address in infos:
            reason = targets.refusal(str(address[0]), allow_private=allow_private)
            if reason:
                raise EndpointUnavailable(f"the session's cdp_ws_url reached {reason}")
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


def _refusal_words(body: bytes | bytearray, url: str | None) -> str:
    """What a refused handshake's body says (the service's error ``code: message``, or its first line of
    text), short, for the viewer: ", <words>" or "". Never a secret of the URL it was refused for."""
    text = bytes(body[:4096]).decode("utf-8", "replace").strip()
    try:
        error = json.loads(text)
    except ValueError:
        error = None
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]  # {"error": {"code", "message"}} as well as {"code", "message"}
    if isinstance(error, dict):
        parts = [
            str(error.get(k)) for k in ("code", "message") if isinstance(error.get(k), str) and error.get(k)
        ]
        text = ": ".join(parts)
    else:
        text = text.splitlines()[0] if text else ""
    for _, value in urllib.parse.parse_qsl(urllib.parse.urlsplit(url or "").query):
        if len(value) >= 8:
            text = text.replace(value, "[redacted]")
    text = text[:300]
    return f" ({text})" if text else ""


def short(exc: Exception) -> str:
    # websockets' messages may quote the request line (and so the jwt): keep its class and status only.
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return f"HTTP {status}" if status else type(exc).__name__


class Budget:
    """A token bucket that runs into debt: ``take`` says whether a message of ``cost`` tokens is within
    ``rate`` tokens a second (after a ``burst``); what is beyond is dropped and still owed, and a debt of
    ``flood`` tokens (a sustained excess, not a burst) raises ``Flooded``."""

    def __init__(self, what: str, *, rate: float, burst: float, flood: float):
        self.what = what
        self.rate, self.burst, self.flood = rate, burst, flood
        self.level = burst
        self.at = time.monotonic()
        self.dropped = 0

    def take(self, cost: float) -> bool:
        now = time.monotonic()
        self.level = min(self.burst, self.level + (now - self.at) * self.rate)
        self.at = now
        self.level -= cost
        if self.level >= 0:
            return True
        self.dropped += 1
        if self.level < -self.flood:
            raise Flooded(f"the CDP endpoint flooded the relay with {self.what} ({self.dropped:,} dropped)")
        return False


def cost(raw: str | bytes) -> int:
    """A message's tokens: one, and one per 64 KiB (the reading, not the parsing, is most of the cost)."""
    return 1 + len(raw) // 65536


class Cdp:
    """Numbered commands awaiting their replies over one connection, frames of one page handed on."""

    def __init__(self, socket: ClientConnection):
        self.socket = socket
        self.ids = itertools.count(1)
        self.replies: dict[int, asyncio.Future] = {}
        self.acks: set[int] = set()  # acks whose reply has not come (a reply to one is not unsolicited)
        self.page: str | None = None
        self.unsolicited = Budget("messages it did not ask for", **UNSOLICITED_BUDGET)
        self.frames = Budget("frames", **FRAME_BUDGET)

    async def call(self, method: str, params: dict | None = None, *, session: str | None = None) -> dict:
        number = next(self.ids)
        message: dict = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        future = asyncio.get_running_loop().create_future()
        self.replies[number] = future
        try:
            await self._send(message)
            async with asyncio.timeout(COMMAND_TIMEOUT):
                reply = await future
        finally:
            self.replies.pop(number, None)
        if "error" in reply:
            raise EndpointUnavailable(f"{method} failed: {str(reply['error'].get('message', ''))[:200]}")
        return reply.get("result") or {}

    async def _send(self, message: dict) -> None:
        try:
            await self.socket.send(json.dumps(message))
        except ConnectionClosed as exc:
            raise Closed(short(exc)) from None

    async def targets(self) -> list:
        """The browser's targets as it lists them (``Target.getTargets``; checked by the caller)."""
        found = (await self.call("Target.getTargets")).get("targetInfos")
        return found if isinstance(found, list) else []

    async def attach(self, target_id: str) -> str:
        """Attach to the page ``target_id`` (``flatten``): the session id its commands and frames carry,
        which becomes the page whose frames are handed on (the previous one's are not, from now on)."""
        attached = await self.call("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        session = attached.get("sessionId")
        if not isinstance(session, str) or not session:
            raise EndpointUnavailable("could not attach to the session's page")
        self.page = session
        return session

    async def read(self, listener: Listener) -> None:
        """Read until the connection or the page ends (Closed, Flooded), answering the commands' waiters
        and acking each frame of the page at once (Chromium's pace never depends on a viewer)."""
        flood: Flooded | None = None
        try:
            await self._read(listener)
        except ConnectionClosed as exc:
            raise Closed(short(exc)) from None
        except Flooded as exc:
            flood = exc
            raise
        finally:
            # Whoever waits for a reply will not get one: fail them now rather than at their timeout (with
            # the flood, if it was one: that is no dropped connection to come back to).
            for future in self.replies.values():
                if not future.done():
                    future.set_exception(
                        Flooded(str(flood)) if flood else Closed("the CDP connection closed")
                    )

    async def _read(self, listener: Listener) -> None:
        async for raw in self.socket:
            listener.heard()
            message, data = split(raw)
            if message is None:  # not JSON, or large and no frame: dropped unparsed
                self.unsolicited.take(cost(raw))
                continue
            number = message.get("id")
            if isinstance(number, int) and (number in self.replies or number in self.acks):
                self.acks.discard(number)
                future = self.replies.get(number)
                if future is not None and not future.done():
                    future.set_result(message)
                continue
            params = message.get("params")
            params = params if isinstance(params, dict) else {}
            if (
                number is None
                and message.get("method") == "Page.screencastFrame"
                and self.page is not None
                and message.get("sessionId") == self.page
            ):
                # Ack first: Chromium sends the next frame when this one is acknowledged (even one over the
                # budget, or a legitimate Chromium would wait for ever).
                ack = next(self.ids)
                self.acks.add(ack)
                if len(self.acks) > MAX_PENDING_ACKS:  # an upstream that never answers them
                    self.acks.discard(min(self.acks))
                command = {
                    "id": ack,
                    "sessionId": self.page,
                    "method": "Page.screencastFrameAck",
                    "params": {"sessionId": params.get("sessionId")},
                }
                await self._send(command)
                if self.frames.take(cost(raw)):
                    listener.arrive(params.get("data") if data is None else data, params.get("metadata"))
            elif not self.unsolicited.take(cost(raw)):
                if message.get("method") in TARGET_EVENTS:
                    listener.targets_missed()  # the tab list may be wrong now: it is asked for again
            elif _ends_page(message, self.page):
                raise Closed(str(message.get("method")))
            elif number is None and message.get("method") in TARGET_EVENTS and "sessionId" not in message:
                if message["method"] == "Target.detachedFromTarget":
                    if params.get("sessionId") != self.page or self.page is None:
                        continue  # a page shown before (detached by the relay itself), or none of ours
                    self.page = None  # its tab closed: no frame of it any more, the listener picks another
                listener.target(message["method"], params)


def split(raw: str | bytes) -> tuple[dict | None, str | None]:
    """A CDP message without parsing a large one whole: (the message, its frame data if it was cut out).

    A frame's data is cut out where Chromium writes it (``"data":"`` early in the message, base64 up to the
    next quote) and the rest parsed; that the cut was the frame's own data is checked by the rest having
    ``params.data == ""`` there. Otherwise a message of at most ``SMALL`` is parsed whole; a larger one, or
    one that is not a JSON object, is (None, None)."""
    if isinstance(raw, bytes):  # CDP is text
        return None, None
    found = DATA_KEY.search(raw, 0, HEAD)
    if found:
        start = found.end()
        end = raw.find('"', start)
        if end > 0 and start + len(raw) - end <= SMALL:
            message = _loads(raw[:start] + raw[end:])
            params = message.get("params") if message is not None else None
            if isinstance(params, dict) and params.get("data") == "":
                return message, raw[start:end]
    return (_loads(raw), None) if len(raw) <= SMALL else (None, None)


def _loads(text: str) -> dict | None:
    try:
        message = json.loads(text)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _ends_page(message: dict, page: str | None) -> bool:
    """The page attached to crashed or the whole inspector went away (a page detached, its tab closed, is
    the listener's to follow: ``TARGET_EVENTS``)."""
    method = message.get("method")
    if method == "Inspector.detached":
        return True
    return method == "Inspector.targetCrashed" and page is not None and message.get("sessionId") == page
