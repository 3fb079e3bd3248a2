"""The live screen relay (console/live/screen.py) against a CDP endpoint over a real loopback websocket.

The endpoint speaks the few CDP messages the relay uses (getTargets, attachToTarget, startScreencast, frame
acks) and sends frames when the test says so, so counts are exact; the real Chromium endpoint has its own
tests (tests/browser/test_screen.py and the benchmark).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gc
import json

import pytest
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

from console.live import cdp as cdp_client
from console.live import screen as relay
from console.service.errors import ServiceError


class FakeCdp:
    """A CDP websocket server with one page; ``frame()`` pushes a screencast frame to every client."""

    def __init__(self):
        self.connections = 0
        self.open = set()
        self.acks = 0
        self.casting = set()
        self.refuse = False
        self.busy = 0  # answer this many handshakes 503 (a browser still starting)
        self.deny: tuple[int, str] | None = None  # answer every handshake so (status, body)
        self.denied = 0
        self.fail = ""  # a method answered with a CDP error (its message)
        self.frozen = False  # read messages, answer none (a frozen service or browser)
        self.asked = []  # methods called, in order
        self.gone = 0  # answer this many attaches "No target with given id found" (the page just closed)

    async def handler(self, socket):
        self.connections += 1
        self.open.add(socket)
        try:
            async for raw in socket:
                message = json.loads(raw)
                method, number = message.get("method"), message.get("id")
                self.asked.append(method)
                if self.frozen:
                    continue
                if self.fail and method == "Page.startScreencast":
                    await self.error_reply(socket, number)
                    continue
                if self.gone and method == "Target.attachToTarget":
                    self.gone -= 1
                    error = {"code": -32602, "message": "No target with given id found"}
                    await socket.send(json.dumps({"id": number, "error": error}))
                    continue
                if method == "Target.getTargets":
                    reply = {"targetInfos": [{"targetId": "T1", "type": "page", "url": "about:blank"}]}
                elif method == "Target.attachToTarget":
                    reply = {"sessionId": "S1"}
                elif method == "Page.startScreencast":
                    self.casting.add(socket)
                    reply = {}
                elif method == "Page.screencastFrameAck":
                    self.acks += 1
                    reply = {}
                else:
                    reply = {}
                await socket.send(json.dumps({"id": number, "result": reply}))
        finally:
            self.open.discard(socket)
            self.casting.discard(socket)

    async def frame(self, payload: bytes, number: int) -> None:
        message = {
            "method": "Page.screencastFrame",
            "sessionId": "S1",
            "params": {
                "data": base64.b64encode(payload).decode(),
                "metadata": {"timestamp": 1_700_000_000.0 + number},
                "sessionId": number,
            },
        }
        for socket in list(self.casting):
            await socket.send(json.dumps(message))

    async def process_request(self, connection, request):
        if self.deny:
            self.denied += 1
            return connection.respond(*self.deny)
        if self.refuse:
            return connection.respond(403, "refused\n")
        if self.busy:
            self.busy -= 1
            return connection.respond(503, "busy\n")
        return None

    async def error_reply(self, socket, number: int) -> None:
        await socket.send(json.dumps({"id": number, "error": {"code": -32000, "message": self.fail}}))


@pytest.fixture
async def cdp():
    fake = FakeCdp()
    async with serve(fake.handler, "127.0.0.1", 0, process_request=fake.process_request) as server:
        port = server.sockets[0].getsockname()[1]
        fake.url = f"ws://127.0.0.1:{port}/devtools/browser/x?jwt=secret-jwt"
        yield fake


def source(url: str, *, key="s1", ended=None) -> relay.Source:
    async def locate():
        return relay.Target(url, 640, 480, ended=bool(ended and ended()))

    return relay.Source(key=(key, 1, None), locate=locate, allow_private=True)


def b64(payload: bytes) -> str:
    return base64.b64encode(payload).decode()


def jpeg(label: bytes, width: int = 640, height: int = 480) -> bytes:
    """The segments of a baseline JPEG the relay reads (start, JFIF, a quantisation table, the frame header
    with the size), ``label`` for the picture and the end: what the relay checks, not a picture to show."""
    jfif = b"\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    table = b"\xff\xdb\x00\x43\x00" + bytes(range(1, 65))
    size = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    header = b"\xff\xc0\x00\x11\x08" + size + b"\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return b"\xff\xd8" + jfif + table + header + b"\xff\xda\x00\x02" + label + b"\xff\xd9"


async def until(condition, seconds: float = 5.0) -> None:
    """Poll ``condition`` (state of the relay and of the endpoint) until it holds, at most ``seconds``."""
    async with asyncio.timeout(seconds):
        while not condition():  # noqa: ASYNC110 - conditions over plain attributes have no event to wait on
            await asyncio.sleep(0.01)


def events(chunk: bytes) -> list[dict]:
    found = []
    for block in chunk.decode().split("\n\n"):
        event = {}
        for line in block.splitlines():
            name, _, value = line.partition(": ")
            event.setdefault(name, []).append(value)
        if "event" in event:
            found.append(event)
    return found


async def test_it_opens_one_upstream_for_many_viewers_and_gives_each_the_frames(cdp):
    hub = relay.ScreenHub(linger_seconds=0.05)
    wakes = [asyncio.Event() for _ in range(20)]
    viewers = [hub.subscribe(source(cdp.url), wake=w) for w in wakes]
    await until(lambda: cdp.casting)
    await cdp.frame(jpeg(b"first"), 1)
    await until(lambda: viewers[0].screen.frames_in == 1)
    for viewer, wake in zip(viewers, wakes, strict=True):
        chunk = await relay.next_chunk([viewer], wake, 1)
        frames = [e for e in events(chunk) if e["event"] == ["frame"]]
        assert base64.b64decode(frames[0]["data"][1]) == jpeg(b"first")
        assert json.loads(frames[0]["data"][0])["s"] == "s1"
    await until(lambda: cdp.acks == 1)  # the acknowledgement is on its way to the endpoint
    assert cdp.connections == 1 and hub.upstreams() == 1


async def test_it_gives_a_slow_viewer_the_newest_frame_and_skips_the_rest(cdp):
    hub = relay.ScreenHub(linger_seconds=0.05)
    wake = asyncio.Event()
    viewer = hub.subscribe(source(cdp.url), wake=wake)
    await until(lambda: cdp.casting)
    for number in range(1, 51):
        await cdp.frame(jpeg(f"frame {number}".encode()), number)
    await until(lambda: viewer.screen.frames_in == 50)
    chunk = await relay.next_chunk([viewer], wake, 1)
    frames = [e for e in events(chunk) if e["event"] == ["frame"]]
    assert len(frames) == 1 and base64.b64decode(frames[0]["data"][1]) == jpeg(b"frame 50")
    # Every frame acknowledged while the viewer reads nothing: Chromium never waits for a viewer.
    await until(lambda: cdp.acks == 50)
    assert len(viewer.screen.frame) < 400 and viewer.screen.raw is None  # one frame held, whatever came


async def test_it_limits_a_thumbnail_viewer_to_its_rate(cdp):
    hub = relay.ScreenHub(linger_seconds=0.05)
    fast, slow = asyncio.Event(), asyncio.Event()
    full = hub.subscribe(source(cdp.url), wake=fast)
    thumb = hub.subscribe(source(cdp.url), min_interval=3600, wake=slow)
    await until(lambda: cdp.casting)
    await cdp.frame(jpeg(b"one"), 1)
    await until(lambda: full.screen.frames_in == 1)
    assert b"event: frame" in await relay.next_chunk([thumb], slow, 1)
    await cdp.frame(jpeg(b"two"), 2)
    await until(lambda: full.screen.frames_in == 2)
    assert b"event: frame" in await relay.next_chunk([full], fast, 1)
    assert await relay.next_chunk([thumb], slow, 0.2) is None  # the next one is an hour away
    assert cdp.connections == 1


async def test_it_closes_the_upstream_after_the_last_viewer_left(cdp):
    hub = relay.ScreenHub(linger_seconds=0.05)
    first = hub.subscribe(source(cdp.url))
    second = hub.subscribe(source(cdp.url))
    await until(lambda: cdp.casting)
    first.screen.remove(first)
    assert first.screen.linger is None  # one viewer still watches: no close is even scheduled
    await cdp.frame(jpeg(b"still"), 1)  # and the upstream still serves it
    await until(lambda: second.screen.frames_in == 1)
    assert cdp.open and hub.upstreams() == 1
    second.screen.remove(second)
    await until(lambda: not cdp.open)
    assert hub.upstreams() == 0 and hub.screens == {}


async def test_it_keeps_the_upstream_for_a_viewer_back_within_the_linger(cdp):
    hub = relay.ScreenHub(linger_seconds=5)
    viewer = hub.subscribe(source(cdp.url))
    await until(lambda: cdp.casting)
    viewer.screen.remove(viewer)
    again = hub.subscribe(source(cdp.url))
    assert again.screen is viewer.screen and again.screen.linger is None  # the close is called off
    await cdp.frame(jpeg(b"back"), 1)  # served by the connection that was already open
    await until(lambda: again.screen.frames_in == 1)
    assert cdp.connections == 1
    again.screen.remove(again)
    again.screen._close()


@pytest.mark.parametrize(
    ("url", "why"),
    [
        (None, "has no cdp_ws_url"),
        ("http://127.0.0.1:9/devtools", "not a ws:// or wss:// URL"),
        ("ws://169.254.169.254/devtools?jwt=x", "link-local"),
        ("wss://user:pw@example.com/devtools", "user name or password"),
    ],
)
async def test_it_refuses_a_cdp_url_it_may_not_open(url, why):
    hub = relay.ScreenHub(linger_seconds=0.05)
    wake = asyncio.Event()
    viewer = hub.subscribe(source(url), wake=wake)
    await until(lambda: viewer.screen.ended)
    chunk = await relay.next_chunk([viewer], wake, 1)
    status = json.loads(events(chunk)[-1]["data"][0])
    assert status["state"] == "unavailable" and why in status["message"]
    assert viewer.screen.connections == 0


async def test_it_refuses_a_private_address_unless_allowed(cdp):
    refused = relay.Source(key=("p", 1, None), locate=source(cdp.url).locate, allow_private=False)
    viewer = relay.ScreenHub().subscribe(refused)
    await until(lambda: viewer.screen.ended)
    assert "loopback" in viewer.screen.status and cdp.connections == 0


async def test_it_says_unavailable_when_the_endpoint_refuses_without_showing_the_jwt(cdp):
    cdp.refuse = True
    wake = asyncio.Event()
    viewer = relay.ScreenHub().subscribe(source(cdp.url), wake=wake)
    await until(lambda: viewer.screen.ended)
    chunk = await relay.next_chunk([viewer], wake, 1)
    assert b"unavailable" in chunk and b"HTTP 403" in chunk and b"secret-jwt" not in chunk


async def test_it_tries_again_when_the_endpoint_is_busy_at_first(cdp):
    cdp.busy = 2
    wake = asyncio.Event()
    viewer = relay.ScreenHub().subscribe(source(cdp.url), wake=wake)
    await until(lambda: cdp.casting)
    await cdp.frame(jpeg(b"first"), 1)
    await until(lambda: viewer.screen.frames_in == 1)
    assert cdp.busy == 0 and not viewer.screen.ended


async def test_it_says_when_the_session_ended(cdp):
    over = []
    wake = asyncio.Event()
    viewer = relay.ScreenHub().subscribe(source(cdp.url, ended=lambda: bool(over)), wake=wake)
    await until(lambda: cdp.casting)
    over.append(True)
    for socket in list(cdp.open):
        await socket.close()
    await until(lambda: viewer.screen.ended)
    chunk = await relay.next_chunk([viewer], wake, 1)
    assert json.loads(events(chunk)[-1]["data"][0])["state"] == "ended"


async def test_it_reconnects_when_the_connection_drops_while_the_session_runs(cdp):
    viewer = relay.ScreenHub().subscribe(source(cdp.url))
    await until(lambda: cdp.casting)
    await cdp.frame(jpeg(b"before"), 1)
    await until(lambda: viewer.screen.frames_in == 1)
    for socket in list(cdp.open):
        await socket.close()
    await until(lambda: cdp.connections == 2 and cdp.casting)
    await cdp.frame(jpeg(b"after"), 2)
    await until(lambda: viewer.screen.frames_in == 2)
    assert not viewer.screen.ended
    viewer.screen.task.cancel()


# An attacker's upstream (docs/security.md, "The live screen relay") ---------------------------------


async def test_it_drops_a_frame_that_is_not_base64_so_no_event_can_be_injected(cdp):
    wake = asyncio.Event()
    viewer = relay.ScreenHub(linger_seconds=0.05).subscribe(source(cdp.url, key="mine"), wake=wake)
    await until(lambda: cdp.casting)
    forged = json.dumps({"s": "other", "state": "live", "label": "x", "message": "forged"})
    message = {
        "method": "Page.screencastFrame",
        "sessionId": "S1",
        "params": {"data": f"AAAA\n\nevent: status\ndata: {forged}", "sessionId": 1},
    }
    for socket in list(cdp.casting):
        await socket.send(json.dumps(message))
    await until(lambda: cdp.acks == 1)  # read and acknowledged
    chunk = await relay.next_chunk([viewer], wake, 0.2) or b""
    assert b"forged" not in chunk and b"event: frame" not in chunk
    assert viewer.screen.frames_bad == 1
    await cdp.frame(jpeg(b"good"), 2)
    await until(lambda: viewer.screen.frames_in == 2)
    frames = [e for e in events(await relay.next_chunk([viewer], wake, 1)) if e["event"] == ["frame"]]
    assert [base64.b64decode(f["data"][1]) for f in frames] == [jpeg(b"good")]
    viewer.screen.task.cancel()


async def test_it_refuses_an_upstream_message_larger_than_a_frame_can_be(cdp):
    viewer = relay.ScreenHub().subscribe(source(cdp.url))
    await until(lambda: cdp.casting)
    socket = next(iter(cdp.casting))
    await socket.send("x" * (cdp_client.MAX_MESSAGE + 1))
    await until(lambda: socket.close_code is not None)
    assert socket.close_code == 1009  # message too big: the relay closed rather than hold it
    assert viewer.screen.frames_in == 0
    viewer.screen.task.cancel()


async def test_it_follows_no_redirect_from_the_cdp_endpoint(cdp):
    inner = FakeCdp()
    async with serve(inner.handler, "127.0.0.1", 0) as elsewhere:
        port = elsewhere.sockets[0].getsockname()[1]

        async def redirect(connection, request):
            response = connection.respond(302, "moved\n")
            response.headers["Location"] = f"ws://127.0.0.1:{port}/devtools/browser/y"
            return response

        async with serve(cdp.handler, "127.0.0.1", 0, process_request=redirect) as mover:
            url = f"ws://127.0.0.1:{mover.sockets[0].getsockname()[1]}/devtools/browser/x?jwt=secret-jwt"
            wake = asyncio.Event()
            viewer = relay.ScreenHub().subscribe(source(url), wake=wake)
            await until(lambda: viewer.screen.ended)
    assert inner.connections == 0
    chunk = await relay.next_chunk([viewer], wake, 1)
    assert b"unavailable" in chunk and b"secret-jwt" not in chunk


async def test_it_never_logs_the_jwt_of_a_url_the_websocket_client_rejects(cdp, caplog):
    caplog.set_level("DEBUG")
    url = cdp.url + "#fragment"  # the checks pass, websockets refuses it (quoting the URL)
    wake = asyncio.Event()
    viewer = relay.ScreenHub().subscribe(source(url), wake=wake)
    await until(lambda: viewer.screen.ended)
    chunk = await relay.next_chunk([viewer], wake, 1)
    assert b"unavailable" in chunk and b"secret-jwt" not in chunk
    assert "secret-jwt" not in caplog.text
    assert cdp.connections == 0


async def test_it_connects_again_when_the_page_went_between_the_list_and_the_attach(cdp):
    """A sandbox moving the session to a browser of its own closes its page: the first connection's attach
    found no target, and the tile said "No screen from this session's CDP endpoint" for good."""
    cdp.gone = 1
    hub = relay.ScreenHub(linger_seconds=0.05)
    wake = asyncio.Event()
    viewer = hub.subscribe(source(cdp.url), wake=wake)
    await until(lambda: cdp.casting)
    await cdp.frame(jpeg(b"after"), 1)
    await until(lambda: viewer.screen.frames_in == 1)
    assert not viewer.screen.ended and cdp.connections == 2


async def test_it_shows_an_upstream_error_message_with_its_control_characters_visible(cdp):
    cdp.fail = "no\u202escreen\x1b[2J here"
    wake = asyncio.Event()
    viewer = relay.ScreenHub().subscribe(source(cdp.url), wake=wake)
    await until(lambda: viewer.screen.ended)
    chunk = await relay.next_chunk([viewer], wake, 1)
    message = json.loads(events(chunk)[-1]["data"][0])["message"]
    assert "\u202e" not in message and "\x1b" not in message
    assert "[U+202E]" in message and "screen" in message


@pytest.mark.parametrize("stamp", [1e308, float("inf"), float("nan"), "soon", True])
async def test_it_sends_only_a_finite_capture_time_a_browser_can_parse(cdp, stamp):
    wake = asyncio.Event()
    viewer = relay.ScreenHub(linger_seconds=0.05).subscribe(source(cdp.url), wake=wake)
    await until(lambda: cdp.casting)
    message = {
        "method": "Page.screencastFrame",
        "sessionId": "S1",
        "params": {"data": b64(jpeg(b"x")), "metadata": {"timestamp": stamp}, "sessionId": 1},
    }
    for socket in list(cdp.casting):
        await socket.send(json.dumps(message))  # Python writes Infinity and NaN, as a hostile upstream may
    await until(lambda: viewer.screen.frames_in == 1)
    frames = [e for e in events(await relay.next_chunk([viewer], wake, 1)) if e["event"] == ["frame"]]
    meta = json.loads(frames[0]["data"][0], parse_constant=lambda name: pytest.fail(f"{name} in a frame"))
    assert "c" not in meta
    viewer.screen.task.cancel()


async def send(cdp, message) -> None:
    text = message if isinstance(message, str) else json.dumps(message)
    for socket in list(cdp.casting):
        await socket.send(text)


def raw_frame(data: str, number: int, metadata: dict | None = None) -> dict:
    params = {"data": data, "metadata": metadata or {"timestamp": 1.0}, "sessionId": number}
    return {"method": "Page.screencastFrame", "sessionId": "S1", "params": params}


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x02\x80\x00\x00\x01\xe0\x08\x02\x00\x00\x00"


@pytest.mark.parametrize(
    ("data", "metadata"),
    [
        (b64(PNG), None),  # an image, but not what the relay asked for
        (b64(b"<svg onload=alert(1)>"), None),
        (b64(jpeg(b"huge", 65535, 65535)), None),  # a decompression bomb for every viewer
        (b64(jpeg(b"wide", 4097, 10)), None),
        (b64(jpeg(b"no height", 640, 0)), None),
        (b64(b"\xff\xd8\xff\xe0\x00\x10JFIF"), None),  # a JPEG start, then nothing
        (b64(b"\xff\xd8\xff\xc4\xff\xff" + b"\x00" * 60), None),  # a segment longer than the image
        (b64(jpeg(b"x")), {"timestamp": 1.0, "deviceWidth": 1e9, "deviceHeight": 480}),
        (b64(jpeg(b"x")), {"timestamp": 1.0, "deviceWidth": "640", "deviceHeight": 480}),
        (b64(jpeg(b"x"))[:-1], None),  # not a whole number of base64 groups
    ],
)
async def test_it_gives_a_viewer_no_frame_that_is_not_a_jpeg_of_a_sane_size(cdp, data, metadata):
    wake = asyncio.Event()
    viewer = relay.ScreenHub(linger_seconds=0.05).subscribe(source(cdp.url), wake=wake)
    await until(lambda: cdp.casting)
    await send(cdp, raw_frame(data, 1, metadata))
    await until(lambda: viewer.screen.frames_in == 1 and cdp.acks == 1)  # read and acknowledged
    chunk = await relay.next_chunk([viewer], wake, 0.2) or b""
    assert b"event: frame" not in chunk and viewer.screen.frames_bad == 1
    await cdp.frame(jpeg(b"good", 1280, 720), 2)  # a good one still gets through
    await until(lambda: viewer.screen.frames_in == 2)
    frames = [e for e in events(await relay.next_chunk([viewer], wake, 1)) if e["event"] == ["frame"]]
    assert [base64.b64decode(f["data"][1]) for f in frames] == [jpeg(b"good", 1280, 720)]
    viewer.screen.task.cancel()


async def test_it_ends_an_upstream_that_sends_only_bad_frames_and_says_why(cdp):
    wake = asyncio.Event()
    viewer = relay.ScreenHub(linger_seconds=0.05).subscribe(source(cdp.url), wake=wake)
    await until(lambda: cdp.casting)
    seen = b""
    for number in range(1, relay.BAD_FRAMES + 1):
        await cdp.frame(b"GIF89a not a jpeg", number)
        await until(lambda n=number: viewer.screen.frames_in == n)
        seen += await relay.next_chunk([viewer], wake, 0.2) or b""  # each one taken, and checked
    assert viewer.screen.ended and b"event: frame" not in seen
    status = json.loads([e for e in events(seen) if e["event"] == ["status"]][-1]["data"][0])
    assert status["state"] == "unavailable"
    assert f"{relay.BAD_FRAMES} frames in a row that are not JPEG" in status["message"]
    await until(lambda: not cdp.open)  # the upstream is closed, not read on


async def test_it_checks_only_the_newest_frame_when_a_viewer_takes_one(cdp):
    wake = asyncio.Event()
    viewer = relay.ScreenHub(linger_seconds=0.05).subscribe(source(cdp.url), wake=wake)
    await until(lambda: cdp.casting)
    for number in range(1, 3 * relay.BAD_FRAMES):
        await cdp.frame(b"not a jpeg", number)  # nobody takes these: never checked, never counted
    await cdp.frame(jpeg(b"newest"), 3 * relay.BAD_FRAMES)
    await until(lambda: viewer.screen.frames_in == 3 * relay.BAD_FRAMES)
    frames = [e for e in events(await relay.next_chunk([viewer], wake, 1)) if e["event"] == ["frame"]]
    assert [base64.b64decode(f["data"][1]) for f in frames] == [jpeg(b"newest")]
    assert viewer.screen.frames_bad == 0 and not viewer.screen.ended
    viewer.screen.task.cancel()


async def test_it_holds_one_frame_whatever_an_upstream_floods_it_with(cdp):
    tracemalloc = pytest.importorskip("tracemalloc")
    wake = asyncio.Event()
    viewer = relay.ScreenHub(linger_seconds=0.05).subscribe(source(cdp.url), wake=wake)
    await until(lambda: cdp.casting)
    big = jpeg(b"\x00" * (1024 * 1024))  # 1 MiB, 1.4 MB of base64
    message = json.dumps(raw_frame(b64(big), 1))
    tracemalloc.start()
    try:
        await send(cdp, message)
        await until(lambda: viewer.screen.frames_in == 1)
        # What is held, not what the collector has yet to free.
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for number in range(2, 41):
            await send(cdp, message)
            await until(lambda n=number: viewer.screen.frames_in == n)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # 39 more frames read: one kept, the rest let go. The fake upstream runs in this process: under load
    # its socket's write buffer may still hold the last frame's bytes (a CI run measured 2.006 frames
    # more), so three frames' worth is the bound; keeping the frames read would be 39.
    assert after - before < 3 * len(message)
    assert viewer.screen.frames_bad == 0 and viewer.screen.frame is None  # none checked: nobody took one
    frames = [e for e in events(await relay.next_chunk([viewer], wake, 1)) if e["event"] == ["frame"]]
    assert base64.b64decode(frames[0]["data"][1]) == big
    viewer.screen.task.cancel()


async def test_it_drops_unasked_messages_beyond_the_budget_and_still_relays_frames(cdp, monkeypatch):
    # No refill while the burst is sent (50 a second would give back a few on a loaded machine).
    monkeypatch.setitem(cdp_client.UNSOLICITED_BUDGET, "rate", 0.001)
    wake = asyncio.Event()
    viewer = relay.ScreenHub(linger_seconds=0.05).subscribe(source(cdp.url), wake=wake)
    await until(lambda: cdp.casting)
    burst = cdp_client.UNSOLICITED_BUDGET["burst"]
    for number in range(burst + 300):  # beyond the budget, short of a flood
        await send(cdp, {"method": "Network.dataReceived", "params": {"n": number}})
    big = json.dumps({"method": "Tracing.dataCollected", "params": {"value": "x" * (1024 * 1024)}})
    await send(cdp, big)  # large and no frame: dropped unparsed
    await cdp.frame(jpeg(b"after the burst"), 1)
    await until(lambda: viewer.screen.frames_in == 1)
    frames = [e for e in events(await relay.next_chunk([viewer], wake, 1)) if e["event"] == ["frame"]]
    assert [base64.b64decode(f["data"][1]) for f in frames] == [jpeg(b"after the burst")]
    assert viewer.screen.upstream.unsolicited.dropped >= 300 and not viewer.screen.ended
    viewer.screen.task.cancel()


@pytest.mark.parametrize("size", [100, 1024 * 1024])
async def test_it_ends_an_upstream_that_floods_it_with_messages_it_did_not_ask_for(cdp, size):
    wake = asyncio.Event()
    viewer = relay.ScreenHub(linger_seconds=0.05).subscribe(source(cdp.url), wake=wake)
    await until(lambda: cdp.casting)
    socket = next(iter(cdp.casting))
    flood = json.dumps({"method": "Network.dataReceived", "params": {"value": "x" * size}})
    with contextlib.suppress(ConnectionClosed):
        for _ in range(100_000):  # far beyond the flood's limit, at any speed
            await socket.send(flood)
            if viewer.screen.ended:
                break
    await until(lambda: viewer.screen.ended and not cdp.open)
    said = [e for e in events(await relay.next_chunk([viewer], wake, 1)) if e["event"] == ["status"]]
    status = json.loads(said[-1]["data"][0])
    assert (
        status["state"] == "unavailable"
        and "flooded the relay with messages it did not ask" in status["message"]
    )
    assert viewer.screen.connections == 1  # no reconnection to a flooding endpoint


async def test_it_ends_an_upstream_that_sends_frames_far_beyond_their_budget(cdp, monkeypatch):
    monkeypatch.setitem(cdp_client.FRAME_BUDGET, "rate", 16)  # 1 MiB/s, so that the test floods it cheaply
    wake = asyncio.Event()
    viewer = relay.ScreenHub(linger_seconds=0.05).subscribe(source(cdp.url), wake=wake)
    await until(lambda: cdp.casting)
    socket = next(iter(cdp.casting))
    message = json.dumps(raw_frame(b64(jpeg(b"\x00" * 1024 * 1024)), 1))
    with contextlib.suppress(ConnectionClosed):
        for _ in range(100_000):
            await socket.send(message)
            if viewer.screen.ended:
                break
    await until(lambda: viewer.screen.ended and not cdp.open)
    said = [e for e in events(await relay.next_chunk([viewer], wake, 1)) if e["event"] == ["status"]]
    status = json.loads(said[-1]["data"][0])
    assert status["state"] == "unavailable" and "flooded the relay with frames" in status["message"]


async def test_it_says_a_screen_that_went_silent_and_does_not_answer_is_stalled_then_live(cdp):
    """A frozen service or browser sends no frames, but neither does a page that does not change: after a
    silence the relay asks the browser something cheap; unanswered, the screen is "stalled" (its status and
    the stream's keepalives say so) until the upstream is heard again."""
    hub = relay.ScreenHub(linger_seconds=0.05, probe_after=0.2, probe_timeout=0.2)
    wake = asyncio.Event()
    viewer = hub.subscribe(source(cdp.url), wake=wake)
    await until(lambda: viewer.screen.status.startswith("live:"))
    # Quiet but answering: probed, still live.
    await until(lambda: viewer.screen.probes >= 2)
    assert viewer.screen.status.startswith("live:") and not viewer.screen.stalled
    cdp.frozen = True
    await until(lambda: viewer.screen.stalled)
    chunk = await relay.next_chunk([viewer], wake, 1)
    status = [json.loads(e["data"][0]) for e in events(chunk) if e["event"] == ["status"]]
    assert status[-1]["state"] == "stalled" and status[-1]["label"] == "Stalled"
    stream = relay.stream([viewer], wake, 0.05)
    seen = b""
    while b"event: keepalive" not in seen:
        seen += await anext(stream)
    assert b"event: keepalive\ndata: stalled\n\n" in seen
    cdp.frozen = False
    await cdp.frame(jpeg(b"back"), 1)
    await until(lambda: not viewer.screen.stalled)
    assert viewer.screen.status.startswith("live:")
    await stream.aclose()


def png(width: int, height: int) -> bytes:
    """A PNG's signature and IHDR chunk (what the relay reads of a still picture), then a little more."""
    ihdr = b"IHDR" + width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x02\x00\x00\x00"
    return b"\x89PNG\r\n\x1a\n" + len(ihdr[4:]).to_bytes(4, "big") + ihdr + b"\x00" * 8


def posed(url: str, picture, *, awake: bool = True) -> relay.Source:
    """A source whose still picture is ``picture()`` (bytes, or an exception to raise)."""
    asked = []

    async def locate():
        return relay.Target(url, 640, 480, awake=awake)

    async def poster():
        asked.append(1)
        made = picture()
        if isinstance(made, Exception):
            raise made
        return made

    made = relay.Source(key=("p1", 1, None), locate=locate, allow_private=True, poster=poster)
    made.asked = asked
    return made


async def test_it_shows_a_still_picture_before_the_first_frame_then_the_frames(cdp):
    hub = relay.ScreenHub(linger_seconds=0.05)
    wake = asyncio.Event()
    viewer = hub.subscribe(posed(cdp.url, lambda: png(640, 480)), wake=wake)
    chunk = await relay.next_chunk([viewer], wake, 5)
    while b"event: frame" not in chunk:
        chunk = await relay.next_chunk([viewer], wake, 5)
    still = next(e for e in events(chunk) if e["event"] == ["frame"])
    assert json.loads(still["data"][0])["f"] == "png"
    assert base64.b64decode(still["data"][1]) == png(640, 480)
    # Taken before the CDP connection opened (a sandbox moves the session to a browser of its own then).
    await until(lambda: cdp.casting)
    await cdp.frame(jpeg(b"live"), 1)
    await until(lambda: viewer.screen.frames_in == 1)
    chunk = await relay.next_chunk([viewer], wake, 5)
    frame = next(e for e in events(chunk) if e["event"] == ["frame"])
    assert "f" not in json.loads(frame["data"][0])
    assert base64.b64decode(frame["data"][1]) == jpeg(b"live")
    assert viewer.screen.posters == 1 and viewer.skipped == 0


@pytest.mark.parametrize(
    "picture",
    [
        lambda: png(100_000, 100_000),  # a decompression bomb for every viewer's browser
        lambda: png(0, 480),
        lambda: jpeg(b"not a png"),
        lambda: b"",
        lambda: png(640, 480) + b"\x00" * relay.POSTER_BYTES,  # too large to pass on
    ],
)
async def test_it_passes_on_no_still_picture_that_is_not_a_png_of_a_sane_size(cdp, picture):
    hub = relay.ScreenHub(linger_seconds=0.05)
    wake = asyncio.Event()
    source = posed(cdp.url, picture)
    viewer = hub.subscribe(source, wake=wake)
    await until(lambda: cdp.casting)  # the connection opened anyway
    assert source.asked and viewer.screen.posters == 0 and viewer.screen.frame is None
    await cdp.frame(jpeg(b"live"), 1)
    await until(lambda: viewer.screen.frames_in == 1)
    chunk = await relay.next_chunk([viewer], wake, 5)
    while b"event: frame" not in chunk:
        chunk = await relay.next_chunk([viewer], wake, 5)
    assert base64.b64decode(next(e for e in events(chunk) if e["event"] == ["frame"])["data"][1]) == jpeg(
        b"live"
    )


async def test_a_still_picture_that_fails_does_not_keep_the_screen_from_its_frames(cdp):
    hub = relay.ScreenHub(linger_seconds=0.05)
    source = posed(cdp.url, lambda: ServiceError("the service is down"))
    viewer = hub.subscribe(source, wake=asyncio.Event())
    await until(lambda: cdp.casting)
    assert source.asked and viewer.screen.posters == 0


async def test_it_asks_no_still_picture_of_a_browser_the_service_says_sleeps(cdp):
    hub = relay.ScreenHub(linger_seconds=0.05)
    source = posed(cdp.url, lambda: png(640, 480), awake=False)
    viewer = hub.subscribe(source, wake=asyncio.Event())
    await until(lambda: cdp.casting)
    assert source.asked == [] and viewer.screen.posters == 0
