"""The live relay hub against the sandbox's numbered test stream, over real HTTP."""

import asyncio

import pytest

from console.live import Channel, Frame, service_stream
from console.live.hub import Hub, viewer_stream


def parse(chunks: list[bytes]) -> list[dict]:
    """SSE frames (without comments) from the raw bytes a viewer received."""
    frames = []
    for block in b"".join(chunks).decode().split("\n\n"):
        frame = {}
        for line in block.splitlines():
            if line.startswith(":") or not line:
                continue
            name, _, value = line.partition(": ")
            frame[name] = frame[name] + "\n" + value if name in frame else value
        if frame.get("data") is not None or frame.get("event"):
            frames.append(frame)
    return frames


def message_ids(frames):
    return [int(f["id"]) for f in frames if f.get("event") is None and "id" in f]


def numbered_channel(service, *, count, interval=0.005, resumable=True, key=None, **extra):
    opened = []
    source = service_stream(service, "/_sandbox/test_stream", params={"count": count, "interval": interval})

    def open_upstream(last_event_id):
        opened.append(last_event_id)
        return source(last_event_id)

    channel = Channel(
        key=key or ("test", id(opened)),
        open=open_upstream,
        render=lambda event: Frame(html=f"<li>n={event.data['n']}</li>", id=event.id),
        resumable=resumable,
        **extra,
    )
    return channel, opened


async def read_all(broadcast, viewer, keepalive=5.0):
    chunks = []
    async for chunk in viewer_stream(broadcast, viewer, keepalive):
        chunks.append(chunk)
    return parse(chunks)


async def test_it_fans_one_upstream_out_to_every_viewer(service):
    hub = Hub()
    channel, opened = numbered_channel(service, count=40)
    viewers = [hub.subscribe(channel) for _ in range(25)]
    results = await asyncio.gather(*(read_all(b, v) for b, v in viewers))
    assert len(opened) == 1
    for frames in results:
        assert message_ids(frames) == list(range(1, 41))
        assert frames[-1]["event"] == "ended"
        assert any(f.get("event") == "status" and "live" in f["data"] for f in frames)


async def test_it_resumes_the_upstream_after_a_drop_with_no_gap_and_no_duplicate(service, tenant):
    tenant.fault(method="GET", path="test_stream", drop_after_events=3, count=2)
    hub = Hub()
    channel, opened = numbered_channel(service, count=12)
    broadcast, viewer = hub.subscribe(channel)
    frames = await read_all(broadcast, viewer)
    assert message_ids(frames) == list(range(1, 13))
    assert opened == [None, "3", "6"]
    assert any("reconnecting" in f.get("data", "") for f in frames if f.get("event") == "status")


async def test_it_replays_what_a_reconnecting_browser_missed(service):
    hub = Hub()
    channel, opened = numbered_channel(service, count=10)
    broadcast, first = hub.subscribe(channel)
    await read_all(broadcast, first)
    # The browser comes back having seen up to 4: it gets 5..10 from the buffer, then the end.
    broadcast, again = hub.subscribe(channel, last_event_id="4")
    frames = await read_all(broadcast, again)
    assert message_ids(frames) == list(range(5, 11))
    assert len(opened) == 1


async def test_it_isolates_a_viewer_that_stops_reading(service, tenant):
    # A log of 2 x 20 frames, 60 events 10 ms apart: the sleeper falls behind for certain, while the
    # reader would have to be kept from running for 200 ms to (at 2 ms apart and 2 x 8, a loaded CI machine
    # kept it from running long enough to lose five events).
    hub = Hub(max_pending=20)
    channel, _ = numbered_channel(service, count=60, interval=0.01)
    broadcast, reader = hub.subscribe(channel)
    _, sleeper = hub.subscribe(channel)
    frames = await read_all(broadcast, reader)
    assert message_ids(frames) == list(range(1, 61))
    # The sleeper never read while the others did: the hub kept only a bounded log, not every frame...
    assert broadcast.log.frames <= 2 * 20
    # ...and when it reads again it is told it lagged, then gets what is still kept.
    late = parse([await sleeper.next_chunk(keepalive=1)])
    assert sleeper.lagged > 0
    events = [f.get("event") for f in late]
    assert "resync" in events
    assert any('data-state="lagged"' in f["data"] for f in late if f.get("event") == "status")
    assert message_ids(late)[-1] == 60


async def test_it_bounds_the_bytes_it_keeps_for_viewers_as_well_as_the_frames(service):
    """The log and the replay buffer were bounded by frames only (10 000 and 2 000): a process printing
    ``yes '<'`` renders 64 KiB of output as some 360 KiB of frame, and a hostile service's events may be
    16 MiB each, so a viewer that does not read (or a stream's history kept for later viewers) held
    gigabytes in the console. Bounded by bytes too: the sleeper is told it lagged, as with many frames."""
    hub = Hub()
    megabyte = "x" * (1024 * 1024)
    channel = Channel(
        key=("big frames",),
        open=service_stream(service, "/_sandbox/test_stream", params={"count": 400, "interval": 0}),
        render=lambda event: Frame(html=f"<pre>{event.data['n']} {megabyte}</pre>", id=event.id),
        replay_to_new_viewers=True,
    )
    broadcast, reader = hub.subscribe(channel)
    _, sleeper = hub.subscribe(channel)
    frames = await read_all(broadcast, reader)
    assert message_ids(frames)[-1] == 400 and frames[-1]["event"] == "ended"
    kept = {id(chunk): len(chunk) for chunk in broadcast.log.entries}
    kept.update({id(chunk): len(chunk) for _, chunk in broadcast.buffer})
    assert sum(kept.values()) < 200 * 1024 * 1024, f"{sum(kept.values()) // 2**20} MiB kept"
    assert sum(kept.values()) <= 2 * hub.max_pending_bytes + hub.buffer_bytes
    late = parse([await sleeper.next_chunk(keepalive=1)])
    assert sleeper.lagged > 0 and "resync" in [f.get("event") for f in late]
    # A page opened now gets the newest of the history, within the buffer's bytes.
    _, newcomer = hub.subscribe(channel)
    assert sum(map(len, newcomer.private)) <= hub.buffer_bytes + 4096


async def test_it_closes_the_upstream_when_the_last_viewer_leaves(service):
    hub = Hub()
    channel, _ = numbered_channel(service, count=100000, interval=0.01)
    broadcast, viewer = hub.subscribe(channel)
    stream = viewer_stream(broadcast, viewer, 5.0)
    received = b""
    while b"id: 3\n" not in received:
        received += await anext(stream)
    assert hub.upstreams() == 1
    await stream.aclose()
    async with asyncio.timeout(10):  # the upstream closes once the last viewer left (a state, polled)
        while hub.upstreams():  # noqa: ASYNC110 - a count of the hub's, with no event to wait on
            await asyncio.sleep(0.01)
    assert broadcast.task.cancelled() or broadcast.task.done()


async def test_it_ends_at_a_terminal_event(service):
    hub = Hub()
    channel, _ = numbered_channel(service, count=100, is_terminal=lambda event: event.data["n"] == 5)
    broadcast, viewer = hub.subscribe(channel)
    frames = await read_all(broadcast, viewer)
    assert message_ids(frames) == [1, 2, 3, 4, 5]
    assert frames[-1]["event"] == "ended"


async def test_it_reports_an_upstream_error_in_the_stream(service):
    hub = Hub()
    channel = Channel(
        key=("missing",),
        open=service_stream(service, "/browsers/nope/telemetry/stream"),
        render=lambda event: Frame(html="x"),
    )
    broadcast, viewer = hub.subscribe(channel)
    frames = await read_all(broadcast, viewer)
    statuses = [f["data"] for f in frames if f.get("event") == "status"]
    assert "error" in statuses[-1]
    assert frames[-1]["event"] == "ended"


async def test_it_sends_keepalive_events_while_quiet(service):
    hub = Hub()
    channel, _ = numbered_channel(service, count=2, interval=0.3)
    broadcast, viewer = hub.subscribe(channel)
    chunks = [chunk async for chunk in viewer_stream(broadcast, viewer, keepalive=0.05)]
    assert b"event: keepalive\ndata: live\n\n" in chunks  # an event: scripts never see comments
    assert message_ids(parse(chunks)) == [1, 2]


async def test_it_says_the_upstream_stalled_and_then_that_it_is_live_again(service, tenant):
    # The upstream sends a keepalive comment every 0.1 s of quiet and its first event after 3 s, but
    # freezes for 1.2 s right after connecting. Stalled = 0.4 s without a byte.
    tenant.control("POST", "settings", {"keepalive_seconds": 0.1})
    tenant.fault(method="GET", path="^/_sandbox/test_stream", stall_seconds=1.2, stall_after_chunks=1)
    hub = Hub(stall_after=0.4)
    channel, _ = numbered_channel(service, count=1, interval=3.0)
    broadcast, viewer = hub.subscribe(channel)
    seen = []
    stream = viewer_stream(broadcast, viewer, keepalive=0.1)
    async for chunk in stream:
        frames = parse([chunk])
        seen += [f["data"] for f in frames if f.get("event") == "keepalive"]
        seen += ["event"] if message_ids(frames) else []
        if "stalled" in seen and seen[-1] == "live":
            break
    await stream.aclose()
    first_stall = seen.index("stalled")
    assert "live" not in seen[first_stall:-1] and seen[-1] == "live"
    # Back to live on keepalive comments alone: the upstream's first event was not sent yet.
    assert "event" not in seen


@pytest.mark.parametrize("html", ["<p>one</p>", "<p>a</p>\n<p>b</p>"])
def test_it_encodes_multi_line_html_as_several_data_lines(html):
    from console.live.hub import encode

    encoded = encode(Frame(html=html, event="row", id=7), 7).decode()
    assert encoded.startswith("event: row\nid: 7\n")
    assert encoded.count("data: ") == html.count("\n") + 1
    assert encoded.endswith("\n\n")


async def test_it_starts_over_when_a_fresh_page_opens_an_ended_stream(service):
    hub = Hub()
    channel, opened = numbered_channel(service, count=3, key=("again",))
    broadcast, viewer = hub.subscribe(channel)
    assert message_ids(await read_all(broadcast, viewer)) == [1, 2, 3]
    # A reconnecting browser (Last-Event-ID) of the ended stream gets the end, not a new upstream...
    late_broadcast, late = hub.subscribe(channel, last_event_id="3")
    assert late.broadcast.ended
    late_frames = await read_all(late_broadcast, late)
    assert late_frames[-1]["event"] == "status" and 'data-state="ended"' in late_frames[-1]["data"]
    # ...while a page opened afresh (a new login, a re-run) gets a new upstream.
    fresh_broadcast, fresh = hub.subscribe(channel)
    assert fresh_broadcast is not broadcast
    assert message_ids(await read_all(fresh_broadcast, fresh)) == [1, 2, 3]
    assert len(opened) == 2
