"""Event streams: reading one connection, and following across drops with Last-Event-ID."""

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.service import NotFound, StreamDropped
from console.service import http as service_http
from console.service import sse as service_sse
from console.service.http import EventParser
from console.service.sse import events, follow

STREAM = "/_sandbox/test_stream"


@pytest.fixture
def connections(monkeypatch):
    """The Last-Event-ID of every connection follow() opens (a spy; the HTTP stays real)."""
    opened = []
    real = service_sse.events

    def spy(*args, **kwargs):
        opened.append(kwargs.get("last_event_id"))
        return real(*args, **kwargs)

    monkeypatch.setattr(service_sse, "events", spy)
    return opened


async def test_it_reads_every_event_then_ends(service):
    received = [e async for e in events(service, STREAM, params={"count": 5})]
    assert [e.id for e in received] == ["1", "2", "3", "4", "5"]
    assert [e.data for e in received] == [{"n": n} for n in range(1, 6)]
    assert all(e.event is None for e in received)


async def test_it_starts_after_the_last_event_id(service):
    received = [e.data["n"] async for e in events(service, STREAM, params={"count": 5}, last_event_id=3)]
    assert received == [4, 5]


async def test_it_raises_stream_dropped_when_the_connection_breaks(service, tenant):
    tenant.fault(method="GET", path=f"^{STREAM}$", drop_after_events=2, count=1)
    received = []
    with pytest.raises(StreamDropped):
        async for event in events(service, STREAM, params={"count": 5}):
            received.append(event.data["n"])
    assert received == [1, 2]


async def test_it_maps_an_error_at_open(service, tenant):
    tenant.fault(method="GET", path=f"^{STREAM}$", status=404, code="not_found", count=1)
    with pytest.raises(NotFound) as caught:
        async for _ in events(service, STREAM):
            pass
    assert caught.value.code == "not_found"


async def test_it_closes_when_the_consumer_stops(service, tenant):
    stream = events(service, STREAM, params={"count": 1000, "interval": 0.01})
    async for event in stream:
        if event.data["n"] == 2:
            break
    await stream.aclose()
    again = [e async for e in events(service, STREAM, params={"count": 2})]
    assert len(again) == 2


async def test_it_follows_across_a_drop_without_gap_or_duplicate(service, tenant, connections):
    tenant.fault(method="GET", path=f"^{STREAM}$", drop_after_events=3, count=1)
    received = [e.data["n"] async for e in follow(service, STREAM, params={"count": 8})]
    assert received == list(range(1, 9))
    assert connections == [None, "3"]


async def test_it_skips_events_it_has_already_seen(service, connections):
    received = [e.data["n"] async for e in follow(service, STREAM, params={"count": 4}, last_event_id=2)]
    assert received == [3, 4]


async def test_it_does_not_reconnect_after_a_clean_end_unless_asked(service, tenant, connections):
    received = [e.data["n"] async for e in follow(service, STREAM, params={"count": 3})]
    assert received == [1, 2, 3]
    assert connections == [None]

    asked = []

    async def still_alive():
        asked.append(True)
        return len(asked) < 2

    received = [
        e.data["n"] async for e in follow(service, STREAM, params={"count": 3}, should_reconnect=still_alive)
    ]
    assert received == [1, 2, 3]
    assert len(asked) == 2
    assert connections == [None, None, "3"]


# The parser (console.service.http.EventParser) against httpx-sse, the library the console read streams
# with before: the same events from the same bytes, however the reads cut them.

PIECES = [
    b"\n",
    b"\r",
    b"\r\n",
    b"data",
    b"data:",
    b"data: x",
    b"data:  y",
    b"id: 7",
    b"id:",
    b"id: a\x00b",
    b"event: e",
    b"event: message",
    b": comment",
    b"retry: 5",
    b"retry: x",
    b"\xc3\xa9",
    b"\xe2\x82",
    b"\xff",
    b":",
    b" ",
    b"x",
    b"\n\n",
    b"\r\n\r\n",
]


def reference_frames(reads: list[bytes]) -> list[tuple]:
    import codecs

    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    decoder, lines, text = SSEDecoder(), SSELineDecoder(), codecs.getincrementaldecoder("utf-8")("replace")
    found = []

    def take(new_lines):
        for line in new_lines:
            event = decoder.decode(line.rstrip("\n"))
            if event is not None and event.data != "":  # an event without data is nothing to deliver
                found.append((event.event, event.data, event.id, event.retry))

    for read in reads:
        if decoded := text.decode(read):
            take(lines.decode(decoded))
    if decoded := text.decode(b"", final=True):
        take(lines.decode(decoded))
    take(lines.flush())
    return found


def parsed_frames(reads: list[bytes]) -> list[tuple]:
    parser = EventParser()
    frames = [frame for read in reads for frame in parser.feed(read)]
    return [(f.event or "message", f.data, f.id, f.retry) for f in frames]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.lists(st.integers(0, 200), max_size=6))
def test_the_parser_reads_what_httpx_sse_read_however_the_bytes_are_cut(pieces, cuts):
    body = b"".join(pieces)
    points = sorted({min(c, len(body)) for c in cuts})
    reads = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True) if b > a]
    assert parsed_frames(reads) == reference_frames(reads)


def test_the_parser_returns_every_event_a_read_completes_and_holds_the_rest():
    parser = EventParser()
    assert parser.feed(b'id: 1\ndata: {"n": 1}\n\nid: 2\ndata: {"n"') == [
        service_http.SSEFrame("", '{"n": 1}', "1")
    ]
    assert parser.feed(b": 2}\n") == []
    assert parser.feed(b"\nevent: end\r\ndata: a\r\ndata: b\r\r") == [
        service_http.SSEFrame("", '{"n": 2}', "2"),
        service_http.SSEFrame("end", "a\nb", "2"),
    ]


async def test_a_batch_says_whether_more_of_the_stream_was_already_waiting_on_the_connection():
    """``sse(batches=True)``: the relay holds a burst's frames while more waits on the connection (issue 28),
    and publishes them when a read finds nothing more waiting, which the last read of a burst must say."""
    from tests.service.test_hostile_upstream import Server

    release = threading.Event()
    count = 80_000  # some 2 MiB, written at once

    def respond(handler, server) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        server.write(handler, b"".join(b'id: %d\ndata: {"n": %d}\n\n' % (n, n) for n in range(1, count + 1)))
        release.wait(30)  # the connection stays open, quiet

    server = Server(respond)
    batches = []
    try:
        async with service_http.sse(server.service, "/stream", batches=True) as reads:
            async for batch in reads:
                batches.append(batch)
                if batch and batch[-1].id == str(count):
                    break
    finally:
        release.set()
        server.close()
    assert [int(frame.id) for batch in batches for frame in batch] == list(range(1, count + 1))
    assert any(batch.more for batch in batches)  # a burst: more was waiting after some reads
    assert not batches[-1].more  # and nothing after the last
