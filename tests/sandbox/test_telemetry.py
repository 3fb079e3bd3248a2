"""Sandbox conformance: telemetry pages and the telemetry stream (spec: Telemetry; notes §6)."""

import asyncio
import json
from contextlib import asynccontextmanager

import httpx
import pytest

LONG = 259_200
ALL_ON = {
    "enabled": True,
    "browser": {c: {"enabled": True} for c in ("console", "network", "page", "interaction")},
}


def error_shape(response):
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    return body


@pytest.fixture
def quiet(tenant):
    """A tenant whose generator is off: only injected events exist, so pages are deterministic."""
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0, "keepalive_seconds": 0.3})
    return tenant


def session(tenant, telemetry=ALL_ON, **body):
    response = tenant.call(
        "POST", "/browsers", json={"timeout_seconds": LONG, "telemetry": telemetry, **body}
    )
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def emit(tenant, sid, *events, count=None):
    body = {"session_id": sid}
    if count is not None:
        body["count"] = count
    else:
        body["events"] = [e if isinstance(e, dict) else {"type": e} for e in events]
    return tenant.control("POST", "telemetry/emit", body).json()["seqs"]


def page(tenant, sid, **params):
    response = tenant.call("GET", f"/browsers/{sid}/telemetry/events", params=params)
    assert response.status_code == 200, response.text
    return response


def seqs(response):
    return [e["seq"] for e in response.json()]


# Pages -------------------------------------------------------------------------------------------


def test_it_returns_envelopes_with_the_full_event_shape(quiet):
    sid = session(quiet)
    emit(quiet, sid, "console_error", "network_response", "page_navigation")
    events = page(quiet, sid).json()
    assert [e["event"]["type"] for e in events] == ["console_error", "network_response", "page_navigation"]
    error = events[0]
    assert isinstance(error["seq"], int)
    assert isinstance(error["event"]["ts"], int) and error["event"]["ts"] > 1_700_000_000_000_000  # µs
    assert error["event"]["category"] == "console"
    assert error["event"]["source"]["kind"] == "cdp"
    assert error["event"]["truncated"] is False
    data = error["event"]["data"]
    assert data["text"] and data["stack_trace"]["callFrames"][0]["functionName"]
    assert {"target_id", "frame_id", "loader_id", "url"} <= set(data)
    assert events[1]["event"]["data"]["status"] in (200, 204, 422, 503)


def test_it_pages_forwards_with_an_opaque_cursor(quiet):
    sid = session(quiet)
    emitted = emit(quiet, sid, count=45)
    first = page(quiet, sid)
    assert len(first.json()) == 20  # default limit
    assert first.headers["X-Has-More"] == "true"
    cursor = first.headers["X-Next-Offset"]
    assert int(cursor) >= 0 and int(cursor) not in emitted
    second = page(quiet, sid, offset=cursor)
    third = page(quiet, sid, offset=second.headers["X-Next-Offset"])
    assert third.headers["X-Has-More"] == "false" and "X-Next-Offset" not in third.headers
    assert seqs(first) + seqs(second) + seqs(third) == emitted


@pytest.mark.parametrize("limit", [0, 101, "many"])
def test_it_refuses_a_limit_outside_1_to_100(quiet, limit):
    sid = session(quiet)
    response = quiet.call("GET", f"/browsers/{sid}/telemetry/events", params={"limit": limit})
    assert response.status_code == 400
    assert error_shape(response)["details"][0]["code"] == "limit"


@pytest.mark.parametrize("offset", ["17", "not-a-cursor", "9" * 5000, "-5", "1e9", "\x00", "9" * 40])
def test_it_refuses_a_cursor_it_did_not_issue(quiet, offset):
    sid = session(quiet)
    response = quiet.call("GET", f"/browsers/{sid}/telemetry/events", params={"offset": offset})
    assert response.status_code == 400
    assert error_shape(response)["details"][0]["code"] == "offset"


def test_it_reads_the_last_five_minutes_by_default(quiet):
    sid = session(quiet)
    old = emit(quiet, sid, "console_log")
    quiet.advance(6 * 60)
    recent = emit(quiet, sid, "console_log")
    assert seqs(page(quiet, sid)) == recent
    assert seqs(page(quiet, sid, since="10m")) == old + recent
    assert seqs(page(quiet, sid, since="1h")) == old + recent
    assert seqs(page(quiet, sid, since="30s")) == recent


def test_it_takes_rfc3339_bounds_and_an_exclusive_until(quiet):
    sid = session(quiet)
    first = emit(quiet, sid, "page_load")
    quiet.advance(10)
    boundary = quiet.control("GET", "clock").json()["now"]
    second = emit(quiet, sid, "page_load")
    quiet.advance(10)
    third = emit(quiet, sid, "page_load")
    assert seqs(page(quiet, sid, since="1m", until=boundary)) == first
    assert seqs(page(quiet, sid, since=boundary)) == second + third
    assert seqs(page(quiet, sid, since="1m", until="5s")) == first + second
    bad = quiet.call("GET", f"/browsers/{sid}/telemetry/events", params={"since": "yesterday"})
    assert bad.status_code == 400
    assert error_shape(bad)["details"][0]["code"] == "since"


def test_it_ignores_since_once_a_cursor_is_given_but_keeps_until(quiet):
    sid = session(quiet)
    emitted = emit(quiet, sid, count=6)
    quiet.advance(30)
    later = emit(quiet, sid, count=2)
    first = page(quiet, sid, limit=2, since="10m")
    cursor = first.headers["X-Next-Offset"]
    rest = page(quiet, sid, offset=cursor, since="1s", limit=100)
    assert seqs(first) + seqs(rest) == emitted + later
    bounded = page(quiet, sid, offset=cursor, until="10s", limit=100)
    assert seqs(bounded) == emitted[2:]


def test_it_filters_categories_within_a_page(quiet):
    sid = session(quiet)
    kinds = ["network_request"] * 5 + ["console_log", "page_load", "console_error"]
    emitted = emit(quiet, sid, *kinds)
    first = page(quiet, sid, category="console", limit=5)
    assert first.json() == [] and first.headers["X-Has-More"] == "true"
    second = page(quiet, sid, category="console", limit=5, offset=first.headers["X-Next-Offset"])
    assert seqs(second) == [emitted[5], emitted[7]]
    joined = page(quiet, sid, category="console,page", limit=100)
    assert seqs(joined) == emitted[5:]
    repeated = quiet.call("GET", f"/browsers/{sid}/telemetry/events?category=console&category=page&limit=100")
    assert seqs(repeated) == emitted[5:]
    assert page(quiet, sid, category="nonsense").json() == []


def test_it_filters_types_within_a_page_and_with_categories(quiet):
    sid = session(quiet)
    crashed = {"type": "page_crashed", "category": "page"}  # SDK 0.131 adds the type
    kinds = ["network_request"] * 3 + ["console_log", "page_load", "console_error", crashed]
    emitted = emit(quiet, sid, *kinds)
    assert seqs(page(quiet, sid, type="console_error", limit=100)) == [emitted[5]]
    assert seqs(page(quiet, sid, type="console_log,page_load", limit=100)) == emitted[3:5]
    repeated = quiet.call(
        "GET", f"/browsers/{sid}/telemetry/events?type=console_log&type=page_crashed&limit=100"
    )
    assert seqs(repeated) == [emitted[3], emitted[6]]
    # With a category as well, an event must match both.
    assert seqs(page(quiet, sid, type="console_log,page_load", category="page", limit=100)) == [emitted[4]]
    thin = page(quiet, sid, type="console_log", limit=3)
    assert thin.json() == [] and thin.headers["X-Has-More"] == "true"


def test_it_reads_newest_first_with_desc(quiet):
    sid = session(quiet)
    emitted = emit(quiet, sid, count=25)
    first = page(quiet, sid, order="desc", limit=10)
    assert seqs(first) == emitted[::-1][:10]
    second = page(quiet, sid, order="desc", limit=10, offset=first.headers["X-Next-Offset"])
    assert seqs(second) == emitted[::-1][10:20]
    third = page(quiet, sid, order="desc", limit=10, offset=second.headers["X-Next-Offset"])
    assert seqs(third) == emitted[::-1][20:]
    assert third.headers["X-Has-More"] == "false"


def test_it_ends_a_desc_page_at_until(quiet):
    sid = session(quiet)
    older = emit(quiet, sid, count=3)
    quiet.advance(20)
    emit(quiet, sid, count=3)
    assert seqs(page(quiet, sid, order="desc", until="10s")) == older[::-1]


def test_it_refuses_desc_with_since(quiet):
    sid = session(quiet)
    response = quiet.call("GET", f"/browsers/{sid}/telemetry/events", params={"order": "desc", "since": "5m"})
    assert response.status_code == 400
    assert error_shape(response)["details"][0]["code"] == "since"
    wrong = quiet.call("GET", f"/browsers/{sid}/telemetry/events", params={"order": "sideways"})
    assert wrong.status_code == 400
    assert error_shape(wrong)["details"][0]["code"] == "order"


def test_it_returns_an_empty_list_when_telemetry_is_off(quiet):
    sid = session(quiet, telemetry=None)
    response = page(quiet, sid)
    assert response.json() == [] and response.headers["X-Has-More"] == "false"
    refused = quiet.call("POST", "/_sandbox/telemetry/emit", json={"session_id": sid, "count": 1})
    assert refused.status_code == 409


def test_it_answers_404_for_an_unknown_session(quiet):
    assert quiet.call("GET", "/browsers/nope/telemetry/events").status_code == 404
    assert quiet.call("GET", "/browsers/nope/telemetry/stream").status_code == 404


def test_it_keeps_the_archive_of_a_deleted_session(quiet):
    sid = session(quiet)
    emitted = emit(quiet, sid, count=3)
    quiet.call("DELETE", f"/browsers/{sid}")
    assert seqs(page(quiet, sid)) == emitted


def test_it_fills_data_for_injected_types_and_needs_a_category_for_unknown_ones(quiet):
    sid = session(quiet)
    emit(quiet, sid, {"type": "custom_marker", "category": "control", "data": {"note": "deploy 42"}})
    event = page(quiet, sid).json()[0]["event"]
    assert (event["type"], event["category"], event["data"]) == (
        "custom_marker",
        "control",
        {"note": "deploy 42"},
    )
    refused = quiet.call(
        "POST", "/_sandbox/telemetry/emit", json={"session_id": sid, "events": [{"type": "custom_marker"}]}
    )
    assert refused.status_code == 400


def test_it_generates_events_at_the_tenant_rate_for_captured_categories_only(tenant):
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 4})
    sid = session(tenant, telemetry={"enabled": True, "browser": {"page": {"enabled": True}}})
    tenant.advance(30)
    response = page(tenant, sid, limit=100)
    events = response.json()
    assert len(events) == 100 and response.headers["X-Has-More"] == "true"  # 120 were due
    rest = page(tenant, sid, limit=100, offset=response.headers["X-Next-Offset"]).json()
    assert len(rest) >= 20  # 30 s at 4/s (plus the real seconds the test takes)
    categories = {e["event"]["category"] for e in events + rest}
    assert "page" in categories
    # Operational categories are on by default; monitor flows with any CDP category.
    assert categories <= {"page", "control", "connection", "system", "captcha", "monitor"}


def test_it_generates_nothing_at_rate_zero(quiet):
    sid = session(quiet)
    quiet.advance(120)
    assert page(quiet, sid, since="10m").json() == []


def test_it_keeps_a_bounded_archive(quiet):
    quiet.control("POST", "settings", {"telemetry_retention": 50})
    sid = session(quiet)
    quiet.control("POST", "telemetry/burst", {"session_id": sid, "count": 120})
    events = page(quiet, sid, limit=100).json()
    assert events[0]["seq"] == 71 and len(events) == 50


# The stream --------------------------------------------------------------------------------------


class Stream:
    """Reads SSE frames as dicts {id, event, data, comment} from an open httpx response."""

    def __init__(self, response):
        self.response = response
        self.lines = response.aiter_lines()

    async def frame(self, timeout=5.0) -> dict | None:
        return await asyncio.wait_for(self._frame(), timeout)

    async def _frame(self):
        frame: dict = {}
        async for line in self.lines:
            if line == "":
                if frame:
                    return frame
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "":
                frame["comment"] = value
            elif field == "data":
                frame["data"] = json.loads(value)
            else:
                frame[field] = value
        return None  # the server ended the stream

    async def events(self, n: int) -> list[dict]:
        found = []
        while len(found) < n:
            frame = await self.frame()
            assert frame is not None, f"stream ended after {len(found)} events"
            if "data" in frame:
                found.append(frame)
        return found


@asynccontextmanager
async def stream(tenant, sid, headers=None, params=None):
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(10.0)) as client,
        client.stream(
            "GET",
            f"{tenant.url}/browsers/{sid}/telemetry/stream",
            headers={"Authorization": f"Bearer {tenant.api_key}", **(headers or {})},
            params=params,
        ) as response,
    ):
        yield response, Stream(response)


async def test_it_streams_only_new_events_with_seq_as_the_id(quiet):
    sid = session(quiet)
    emit(quiet, sid, count=3)
    async with stream(quiet, sid) as (response, frames):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert (await frames.frame())["comment"] == "connected"
        new = await asyncio.to_thread(emit, quiet, sid, "console_log", "page_load")
        received = await frames.events(2)
    assert [int(f["id"]) for f in received] == new
    assert [f["data"]["seq"] for f in received] == new
    assert all("event" not in f for f in received)
    assert received[1]["data"]["event"]["type"] == "page_load"


async def test_it_replays_all_retained_events_on_request(quiet):
    sid = session(quiet)
    emitted = emit(quiet, sid, count=4)
    async with stream(quiet, sid, params={"replay": "all"}) as (_, frames):
        received = await frames.events(4)
    assert [int(f["id"]) for f in received] == emitted


async def test_it_resumes_after_the_last_event_id(quiet):
    sid = session(quiet)
    emitted = emit(quiet, sid, count=6)
    async with stream(quiet, sid, headers={"Last-Event-ID": str(emitted[2])}) as (_, frames):
        received = await frames.events(3)
    assert [int(f["id"]) for f in received] == emitted[3:]


async def test_it_resumes_without_gaps_after_a_dropped_connection(quiet):
    sid = session(quiet)
    emitted = emit(quiet, sid, count=10)
    quiet.fault(method="GET", path=f"/browsers/{sid}/telemetry/stream", drop_after_events=4, count=1)
    received = []
    with pytest.raises(httpx.HTTPError):
        async with stream(quiet, sid, params={"replay": "all"}) as (_, frames):
            while True:
                frame = await frames.frame()
                if frame and "data" in frame:
                    received.append(int(frame["id"]))
    assert received == emitted[:4]
    async with stream(quiet, sid, headers={"Last-Event-ID": str(received[-1])}) as (_, frames):
        received += [int(f["id"]) for f in await frames.events(6)]
    assert received == emitted


async def test_it_starts_at_the_oldest_retained_event_when_the_buffer_has_moved_on(quiet):
    quiet.control("POST", "settings", {"telemetry_retention": 100})
    sid = session(quiet)
    quiet.control("POST", "telemetry/burst", {"session_id": sid, "count": 150})
    async with stream(quiet, sid, params={"replay": "all"}) as (_, frames):
        first = (await frames.events(1))[0]
    assert int(first["id"]) == 51


async def test_it_delivers_a_burst_to_every_reader(quiet):
    sid = session(quiet)
    async with stream(quiet, sid) as (_, one), stream(quiet, sid) as (_, two):
        await one.frame()
        await two.frame()
        burst = await asyncio.to_thread(
            quiet.control, "POST", "telemetry/burst", {"session_id": sid, "count": 500}
        )
        first, last = burst.json()["first_seq"], burst.json()["last_seq"]
        for reader in (one, two):
            ids = [int(f["id"]) for f in await reader.events(500)]
            assert ids == list(range(first, last + 1))


async def test_it_keeps_a_silent_stream_open_with_keepalives_when_telemetry_is_off(quiet):
    sid = session(quiet, telemetry=None)
    async with stream(quiet, sid) as (response, frames):
        assert response.status_code == 200
        assert (await frames.frame())["comment"] == "connected"
        assert (await frames.frame())["comment"] == "keepalive"
        assert (await frames.frame())["comment"] == "keepalive"


@pytest.mark.parametrize("ending", ["delete", "control", "timeout"])
async def test_it_closes_the_stream_when_the_session_ends(quiet, ending):
    response = quiet.call("POST", "/browsers", json={"timeout_seconds": 60, "telemetry": ALL_ON})
    sid = response.json()["session_id"]
    async with stream(quiet, sid) as (_, frames):
        await frames.frame()
        emitted = await asyncio.to_thread(emit, quiet, sid, count=2)
        if ending == "delete":
            await asyncio.to_thread(quiet.call, "DELETE", f"/browsers/{sid}")
        elif ending == "control":
            await asyncio.to_thread(quiet.control, "POST", f"browsers/{sid}/end")
        else:
            await asyncio.to_thread(quiet.advance, 61)
        received = []
        while (frame := await frames.frame()) is not None:
            if "data" in frame:
                received.append(int(frame["id"]))
    assert received == emitted
    assert quiet.call("GET", f"/browsers/{sid}/telemetry/stream").status_code == 404


def test_it_draws_the_data_of_every_event_type_from_one_table():
    """The generator's table (``telemetry.SAMPLES``) covers the 31 types, and nothing else has data."""
    import random

    from console.sandbox.resources import telemetry

    assert set(telemetry.SAMPLES) == set(telemetry.TYPES) and len(telemetry.TYPES) == 31
    ctx = telemetry._context(random.Random(1), {"session_id": "s"}, "https://shop.example.com/cart", 1)
    data = telemetry.sample("network_response", random.Random(2), ctx)
    assert data["url"].startswith("https://shop.example.com/") and data["status_text"]
    assert telemetry.sample("page_crashed", random.Random(2), ctx) == {}
