"""The generator's work per read is bounded (``telemetry.py``, "Spans"): after a long clock move a read
built up to 10 000 events (1.5 to 3 s of the event loop every tenant shares, under load), and a listing
that noticed many sessions timed out built each one's in turn. Now a long catch-up gives its events their
seq and time at once and builds their content a chunk at a time, when a read reaches them; what a reader
sees is the same events in the same order, whenever and however often they are read."""

from __future__ import annotations

import httpx

from console.sandbox.app import assemble
from console.sandbox.core.state import Registry, rfc3339
from console.sandbox.resources import telemetry
from tests.sandbox.test_store import created, sandbox
from tests.sandbox.test_telemetry import ALL_ON, LONG, page, seqs, session
from tests.sandbox_fixtures import SandboxTenant, new_tenant, stop_sandbox

# These tests use the sandbox's objects in-process (a registry, the store): wired as the app wires them.
assemble()


YEAR = 365 * 86400


def built(log) -> int:
    return sum(1 for e in log.events if e._chunk is None)


def simulated(tenant, **record):
    """A simulated session's record with every category captured, its generation starting now."""
    record = {
        "session_id": f"bs_{len(tenant.table('browsers'))}",
        "created_at": rfc3339(tenant.now()),
        "timeout_seconds": LONG,
        "_categories": set(telemetry.ALL_CATEGORIES),
        **record,
    }
    tenant.table("browsers")[record["session_id"]] = record
    telemetry.start(tenant, record)
    return record


def test_it_builds_only_the_chunk_a_read_reaches_after_a_clock_move_of_a_year():
    tenant = Registry().create()
    tenant.settings["telemetry_rate_per_second"] = 1000
    record = simulated(tenant)
    tenant.advance(YEAR)
    telemetry.catch_up(tenant, record)
    log = telemetry.log_of(record)
    assert len(log.events) == telemetry.MAX_GENERATE  # what one catch-up keeps, as before
    assert built(log) == 0
    newest = log.events[-1].body  # a read of the newest event builds its chunk only
    assert built(log) <= telemetry.CHUNK
    assert newest["seq"] == log.next_seq - 1 and newest["event"]["category"] in telemetry.ALL_CATEGORIES


def test_it_builds_the_same_events_whenever_they_are_read_and_after_a_restart():
    tenant = Registry().create()
    record = simulated(tenant)
    tenant.advance(3 * 3600)  # 21 600 due at 2 a second: the newest 10 000, in a span
    telemetry.catch_up(tenant, record)
    log = telemetry.log_of(record)
    assert log.spans and built(log) == 0
    bodies = [e.body for e in reversed(log.events)]  # built newest first
    assert [b["seq"] for b in bodies] == sorted((b["seq"] for b in bodies), reverse=True)
    times = [b["event"]["ts"] for b in reversed(bodies)]
    assert times == sorted(times)
    # The state file keeps the span, not its events: rebuilt from it, they are the same.
    again = dict(record, _telemetry=telemetry.Log(cursor_base=log.cursor_base, rng=log.rng))
    again["_telemetry"].spans = [dict(span) for span in log.spans]
    telemetry.restore_spans(again)
    assert [e.body for e in reversed(again["_telemetry"].events)] == bodies


def test_it_generates_nothing_while_a_listing_notices_sessions_that_timed_out():
    from console.sandbox.resources.sessions import ended_at

    tenant = Registry().create()
    records = [simulated(tenant, timeout_seconds=60) for _ in range(20)]
    tenant.advance(7200)
    assert all(ended_at(tenant, r) is not None for r in records)
    assert all(telemetry.log_of(r).events == [] for r in records)  # until a read of that session
    telemetry.catch_up(tenant, records[0])
    events = telemetry.log_of(records[0]).events
    assert 0 < len(events) <= 60 * 2 + 1
    assert events[-1].ts <= telemetry._micros(records[0]["_ended_at"])  # nothing after the end


def test_it_pages_a_span_in_order_through_its_chunks(tenant):
    sid = session(tenant, telemetry=ALL_ON)
    tenant.advance(3 * 3600)
    first = page(tenant, sid, since="4h", limit=100)
    second = page(tenant, sid, offset=first.headers["X-Next-Offset"], limit=100)
    third = page(tenant, sid, offset=second.headers["X-Next-Offset"], limit=100)
    read = first.json() + second.json() + third.json()
    numbers = [e["seq"] for e in read]
    assert numbers == list(range(numbers[0], numbers[0] + 300))  # contiguous across chunks
    times = [e["event"]["ts"] for e in read]
    assert times == sorted(times)
    assert {e["event"]["category"] for e in read} >= {"page", "network"}
    # The same when read again. The tenant's clock runs on meanwhile (a loaded machine takes seconds), so
    # the window may have moved past the oldest few: the events both reads hold are the same.
    again = page(tenant, sid, since="4h", limit=100).json()
    common = {e["seq"] for e in first.json()} & {e["seq"] for e in again}
    assert len(common) >= 50
    assert [e for e in again if e["seq"] in common] == [e for e in first.json() if e["seq"] in common]
    newest = page(tenant, sid, order="desc", limit=5).json()
    assert [e["seq"] for e in newest] == sorted((e["seq"] for e in newest), reverse=True)
    only = page(tenant, sid, since="4h", limit=100, category="network").json()
    assert only and {e["event"]["category"] for e in only} == {"network"}
    assert set(seqs(page(tenant, sid, since="4h", limit=100, category="network"))) <= set(numbers)


def test_it_keeps_a_span_across_a_restart(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    url, process = sandbox(state)
    try:
        tenant = new_tenant(url)
        body = {"headless": True, "timeout_seconds": LONG, "telemetry": ALL_ON}
        sid = created(tenant.call("POST", "/browsers", json=body))["session_id"]
        tenant.advance(3 * 3600)
        oldest = page(tenant, sid, since="4h", limit=100)
        before = oldest.json() + page(tenant, sid, offset=oldest.headers["X-Next-Offset"], limit=100).json()
    finally:
        stop_sandbox(process)
    url, process = sandbox(state)
    try:
        again = SandboxTenant(url=url, api_key=tenant.api_key)
        oldest = page(again, sid, since="5h", limit=100)
        after = oldest.json() + page(again, sid, offset=oldest.headers["X-Next-Offset"], limit=100).json()
        # The seconds the restart took generated a few more, so the oldest few may have gone.
        common = {e["seq"] for e in before} & {e["seq"] for e in after}
        assert len(common) >= 150
        assert [e for e in after if e["seq"] in common] == [e for e in before if e["seq"] in common]
    finally:
        stop_sandbox(process)


def test_it_streams_a_span_from_the_oldest_kept_event(tenant):
    tenant.control("POST", "settings", {"telemetry_retention": 500})
    sid = session(tenant, telemetry=ALL_ON)
    tenant.advance(3600)
    page(tenant, sid, since="2h", limit=1)  # the hour's events are made (seq and time)
    # and no more after them: the clock runs on, and new events would push the oldest kept one out.
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    kept = page(tenant, sid, since="2h", limit=1).json()[0]["seq"]
    got = []
    with httpx.stream(
        "GET",
        f"{tenant.url}/browsers/{sid}/telemetry/stream",
        params={"replay": "all"},
        headers={"Authorization": f"Bearer {tenant.api_key}"},
        timeout=20,
    ) as stream:
        for line in stream.iter_lines():
            if line.startswith("id: "):
                got.append(int(line[4:]))
                if len(got) == 500:
                    break
    assert got == list(range(kept, kept + 500))
