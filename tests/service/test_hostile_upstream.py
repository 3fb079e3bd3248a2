"""What a hostile service (an org pointed at an attacker's base URL) can make the console read.

``request`` bounds a 2xx answer (``MAX_BODY``) and ``sse`` an event (``MAX_EVENT``); these tests hold the
same for what those bounds missed: the body of an error answer, and an event stream compressed on the wire
(the event bound counted compressed bytes, so a gzip answer grew events a thousand times past it).
"""

from __future__ import annotations

import http.server
import threading
import time
import zlib

import pytest

from console.service import Service, errors
from console.service import http as service_http

MiB = 1024 * 1024


class Server:
    """A loopback service answering every GET with ``respond(handler)``; ``sent`` counts body bytes it
    managed to write before the client went away."""

    def __init__(self, respond):
        self.sent = 0
        self.done = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self):
                try:
                    respond(self, outer)
                except OSError:
                    pass  # the client hung up: what it should do
                finally:
                    outer.done.set()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.service = Service(
            base_url=f"http://127.0.0.1:{self.server.server_address[1]}", api_key="k", allow_private=True
        )

    def write(self, handler, data: bytes) -> None:
        handler.wfile.write(data)
        handler.wfile.flush()
        self.sent += len(data)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(respond) -> Server:
        server = Server(respond)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def huge_error(handler, server: Server) -> None:
    """A 500 whose body goes on for 256 MiB (a body of its own, not JSON)."""
    handler.send_response(500)
    handler.send_header("Content-Type", "text/plain")
    handler.end_headers()
    chunk = b"x" * MiB
    for _ in range(256):
        server.write(handler, chunk)


async def test_it_reads_no_more_of_an_error_answer_than_it_shows(serve):
    server = serve(huge_error)
    with pytest.raises(errors.ServiceError) as caught:
        await service_http.request(server.service, "GET", "/org/projects", retry=False)
    assert caught.value.status == 500
    assert "HTTP 500" in caught.value.message and "x" * (service_http.ERROR_BODY_PREVIEW + 1) not in (
        caught.value.message
    )
    assert server.done.wait(30)
    # Socket buffers hold a few MiB: a console that read the whole answer took all 256.
    assert server.sent < 64 * MiB, f"the console read {server.sent // MiB} MiB of an error answer"


def endless_compressed_event(handler, server: Server) -> None:
    """An event stream, gzip on the wire, whose second event never ends: 64 MiB of ``data:`` lines that
    compress to about 64 KiB."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Content-Encoding", "gzip")
    handler.end_headers()
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # a gzip member
    server.write(handler, packer.compress(b"event: message\ndata: {}\n\n"))
    line = b"data: " + b"x" * 1000 + b"\n"
    for _ in range(64):
        server.write(handler, packer.compress(line * 1024) + packer.flush(zlib.Z_SYNC_FLUSH))
    server.write(handler, packer.flush())


async def test_it_bounds_an_event_by_what_it_decompresses(serve, monkeypatch):
    monkeypatch.setattr(service_http, "MAX_EVENT", 1 * MiB)
    server = serve(endless_compressed_event)
    got = []
    with pytest.raises((errors.StreamDropped, errors.Unavailable)) as caught:
        async with service_http.sse(server.service, "/stream") as frames:
            async for frame in frames:
                got.append(frame.data)
    assert "larger than" in caught.value.message or "compressed" in caught.value.message
    assert got in ([], ["{}"])


def drip(head: bytes):
    """A service that sends ``head`` (the status line and headers, or part of them) and then one byte of
    what follows every 0.1 s for 30 s: each read gets a byte well within any read timeout."""

    def respond(handler, server: Server) -> None:
        handler.wfile.write(head)
        handler.wfile.flush()
        for _ in range(300):
            server.write(handler, b" ")
            time.sleep(0.1)

    return respond


ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n["
HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: "


@pytest.mark.parametrize("head", [ANSWER, HEADERS], ids=["body", "headers"])
async def test_it_gives_up_on_an_answer_that_drips_in(serve, monkeypatch, head):
    """One byte at a time, each in time: the whole answer still has a deadline (``MAX_ANSWER_SECONDS``)."""
    monkeypatch.setattr(service_http, "MAX_ANSWER_SECONDS", 1.0, raising=False)
    server = serve(drip(head))
    with pytest.raises(errors.NoAnswer) as caught:
        await service_http.request(server.service, "GET", "/org/projects", retry=False)
    assert "1 s" in caught.value.message
    assert server.sent < 150, "the console read on for more than half the answer's 30 s"


# A list answer costs about 25 times its size once parsed: 63 MiB of ``[{},{},…]`` (under MAX_BODY) took an
# audited console from 146 to 1,724 MiB for one page load and held its event loop for seconds. Lists and
# other JSON answers now have bounds of their own (docs/security.md, section 5, with the figures).


def empty_objects(size: int, *, declared: bool = False):
    """A 200 answer of ``size`` bytes of ``[{},{},…]``, with or without a Content-Length."""

    def respond(handler, server: Server) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("X-Has-More", "false")
        if declared:
            handler.send_header("Content-Length", str(size))
        handler.end_headers()
        chunk = b"{}," * (MiB // 3)
        server.write(handler, b"[")
        while server.sent + len(chunk) < size - 3:
            server.write(handler, chunk)
        server.write(handler, b"{}" + b" " * (size - server.sent - 3) + b"]")

    return respond


def peak_of(call) -> int:
    """The most memory Python allocated while ``call()`` (a coroutine) ran, in bytes."""
    import tracemalloc

    async def measured():
        tracemalloc.start()
        try:
            with pytest.raises(errors.BadResponse) as caught:
                await call()
            return tracemalloc.get_traced_memory()[1], caught.value
        finally:
            tracemalloc.stop()

    return measured()


@pytest.mark.parametrize("declared", [False, True], ids=["streamed", "declared"])
async def test_it_reads_no_more_of_a_list_than_a_page_can_afford(serve, declared):
    from console.service import browsers

    server = serve(empty_objects(63 * MiB, declared=declared))
    peak, error = await peak_of(lambda: browsers.list_sessions(server.service, limit=100))
    assert "larger than the console reads" in error.message and "4 MiB" in error.message
    assert server.done.wait(30)
    # Socket buffers hold a few MiB beyond the 4 the console reads; it used to read all 63 and parse them.
    assert server.sent < 16 * MiB, f"the console read {server.sent // MiB} MiB of a list"
    assert peak < 24 * MiB, f"reading the list took {peak // MiB} MiB"


async def test_it_stops_reading_a_list_at_one_item_more_than_asked(serve):
    from console.service import browsers

    server = serve(empty_objects(3 * MiB))  # within the byte bound: a million empty objects
    peak, error = await peak_of(lambda: browsers.list_sessions(server.service, limit=20))
    assert "a list of more than 20 items" in error.message
    # The body and its text (6 MiB); parsing all of it took more than 60 MiB.
    assert peak < 16 * MiB, f"reading the list took {peak // MiB} MiB"


@pytest.mark.parametrize(
    ("inside", "refusal"),
    [
        (b"[" + b"{}," * 300_000 + b"{}]", "more than 200000 JSON objects"),
        (b"[" * 100 + b"]" * 100, "nested deeper than 64 levels"),
    ],
    ids=["objects", "depth"],
)
async def test_it_refuses_one_record_of_too_many_objects_or_levels(serve, inside, refusal):
    from console.service import browsers

    body = b'{"session_id": "s", "chrome_policy": {"a": ' + inside + b"}}"

    def respond(handler, server: Server) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()
        server.write(handler, body)

    server = serve(respond)
    with pytest.raises(errors.BadResponse, match=refusal):
        await browsers.get_session(server.service, "s")


async def test_it_refuses_a_url_httpx_cannot_send_before_sending_anything(serve):
    # A value of 100 000 characters in a query (a pool's name looked up by name) made httpx raise InvalidURL
    # from deep in a page: a 500. Records now bound names, and the client refuses such a URL itself.
    server = serve(lambda handler, server: handler.send_response(200))
    with pytest.raises(errors.Invalid) as caught:
        await service_http.request(server.service, "GET", "/browsers", params={"query": "p" * 100_000})
    assert caught.value.code == "invalid_url" and "p" * 100 not in caught.value.message
    assert not server.done.is_set()  # nothing reached the service
