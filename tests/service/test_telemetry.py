"""console.service.telemetry against the sandbox (notes §6)."""

import asyncio

import pytest

from console.service import BadRequest, browsers, telemetry

LONG = 259_200
ON = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}


@pytest.fixture
def quiet(tenant):
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    return tenant


async def new_session(service):
    return (await browsers.create_session(service, timeout_seconds=LONG, telemetry=ON)).session_id


def emit(tenant, sid, *types):
    body = {"session_id": sid, "events": [{"type": t} for t in types]}
    return tenant.control("POST", "telemetry/emit", body).json()["seqs"]


async def test_it_reads_typed_envelopes(service, quiet):
    sid = await new_session(service)
    emit(quiet, sid, "console_error", "page_load")
    page = await telemetry.list_events(service, sid)
    assert [e.kind for e in page] == ["console_error", "page_load"]
    first = page.items[0]
    assert first.category == "console" and isinstance(first.seq, int)
    assert first.event.time.tzinfo is not None
    assert first.event.fields["stack_trace"]["callFrames"]


async def test_it_pages_back_with_the_cursor_and_comma_joined_categories(service, quiet):
    sid = await new_session(service)
    seqs = emit(quiet, sid, *(["console_log", "network_request", "page_load"] * 5))
    newest = await telemetry.list_events(service, sid, order="desc", limit=6)
    assert [e.seq for e in newest] == seqs[::-1][:6]
    assert newest.has_more and newest.next_offset not in seqs
    older = await telemetry.list_events(service, sid, order="desc", limit=6, offset=newest.next_offset)
    assert [e.seq for e in older] == seqs[::-1][6:12]
    filtered = await telemetry.list_events(service, sid, categories=["console", "page"], limit=100)
    assert {e.category for e in filtered} == {"console", "page"} and len(filtered) == 10


async def test_it_maps_desc_with_since_to_a_bad_request(service, quiet):
    sid = await new_session(service)
    with pytest.raises(BadRequest) as caught:
        await telemetry.list_events(service, sid, order="desc", since="5m")
    assert "since" in caught.value.field_errors


async def test_it_streams_envelopes_and_resumes(service, quiet):
    sid = await new_session(service)
    seqs = emit(quiet, sid, "console_log", "page_load", "network_idle")
    received = []
    async for envelope in telemetry.stream(service, sid, replay=True):
        received.append(envelope.seq)
        if len(received) == 3:
            break
    assert received == seqs
    resumed = telemetry.stream(service, sid, last_event_id=seqs[0])
    later = [await asyncio.wait_for(anext(resumed), 5) for _ in range(2)]
    await resumed.aclose()
    assert [e.seq for e in later] == seqs[1:]


async def test_it_filters_by_type_on_the_service(service, tenant):
    session = tenant.call("POST", "/browsers", json={"telemetry": {"enabled": True}}).json()
    sid = session["session_id"]
    kinds = [{"type": t} for t in ("console_log", "console_error", "page_load")]
    tenant.control("POST", "telemetry/emit", {"session_id": sid, "events": kinds})
    page = await telemetry.list_events(service, sid, limit=100, types=["console_error", "page_load"])
    assert {e.kind for e in page.items} == {"console_error", "page_load"}
