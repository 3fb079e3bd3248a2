"""Event streams: reading one connection, and following across drops with Last-Event-ID."""

import pytest

from console.service import NotFound, StreamDropped
from console.service import sse as service_sse
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
