"""Finding in a session's telemetry: a time window (relative or absolute, in the URL), free text, errors
only, a console level, one browser tab, a permalinked event; bad input said plainly, never forwarded."""

import re
from datetime import UTC, datetime, timedelta

import pytest

LONG = 259_200
TELEMETRY = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}


@pytest.fixture
def session(quiet):
    body = {"name": "find", "timeout_seconds": LONG, "telemetry": TELEMETRY}
    return quiet.call("POST", "/browsers", json=body).json()["session_id"]


def url(session, query=""):
    return f"/o/acme/browsers/{session}/{query}"


def emit(tenant, sid, *events):
    response = tenant.control("POST", "telemetry/emit", {"session_id": sid, "events": list(events)})
    assert response.status_code == 201, response.text
    return response.json()["events"]


def log(text, level="log", target="TAB-A"):
    kind = "console_error" if level == "error" else "console_log"
    return {"type": kind, "data": {"text": text, "level": level, "target_id": target}}


def shown(page: str) -> list[str]:
    return re.findall(r'<span class="trow__summary">([^<]*)</span>', page)


async def test_it_finds_by_text_errors_and_level(viewer_client, quiet, session):
    emit(
        quiet,
        session,
        log("cart loaded"),
        log("quote failed", "error"),
        log("slow image", "warning"),
        {
            "type": "network_request",
            "data": {"request_id": "r1", "method": "GET", "url": "https://shop.example.com/cart"},
        },
    )
    page = (await viewer_client.get(url(session, "?q=CART"))).content.decode()
    assert shown(page) == ["cart loaded", "GET https://shop.example.com/cart"]
    assert 'value="CART"' in page and 'data-q="CART"' in page
    errors = (await viewer_client.get(url(session, "?errors=1"))).content.decode()
    assert shown(errors) == ["quote failed"]
    warnings = (await viewer_client.get(url(session, "?view=console&level=warning"))).content.decode()
    assert shown(warnings) == ["slow image"]
    console = (await viewer_client.get(url(session, "?view=console"))).content.decode()
    assert shown(console) == ["cart loaded", "quote failed", "slow image"]  # console events only


async def test_it_lists_the_tabs_and_filters_by_one(viewer_client, quiet, session):
    emit(
        quiet,
        session,
        {"type": "page_navigation", "data": {"url": "https://shop.example.com/", "target_id": "TAB-A"}},
        {
            "type": "page_tab_opened",
            "data": {"url": "https://docs.example.com/", "title": "Docs", "target_id": "TAB-B"},
        },
        log("in a", target="TAB-A"),
        log("in b", target="TAB-B"),
    )
    page = (await viewer_client.get(url(session))).content.decode()
    tabs = re.findall(r'<option value="(TAB-[AB])"[^>]*>([^<]*)</option>', page)
    assert tabs == [("TAB-B", "Docs · https://docs.example.com/"), ("TAB-A", "https://shop.example.com/")]
    only_b = (await viewer_client.get(url(session, "?tab=TAB-B&category=console"))).content.decode()
    assert shown(only_b) == ["in b"] and 'data-target="TAB-B"' in only_b
    # A tab id that cannot be one is dropped, not sent anywhere.
    odd = (await viewer_client.get(url(session, "?tab=<x>&category=console"))).content.decode()
    assert shown(odd) == ["in a", "in b"] and "&lt;x&gt;" not in odd


async def test_it_reads_a_time_window_from_the_url(viewer_client, quiet, session):
    early = emit(quiet, session, log("early"))[0]
    quiet.advance(3600)
    emit(quiet, session, log("late"))
    relative = (await viewer_client.get(url(session, "?window=15m"))).content.decode()
    assert shown(relative) == ["late"] and "Back to live" in relative and "sse-connect" not in relative
    start = datetime.fromtimestamp(early["event"]["ts"] / 1e6, UTC)
    until = (start + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S")
    since = (start - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S")
    absolute = (await viewer_client.get(url(session, f"?since={since}&until={until}"))).content.decode()
    assert shown(absolute) == ["early"]
    assert f'value="{since}"' in absolute and f'value="{until}"' in absolute


async def test_it_says_what_it_could_not_read_and_sends_nothing_of_it(viewer_client, quiet, session):
    emit(quiet, session, log("kept"))
    page = (await viewer_client.get(url(session, "?since=yesterday-ish&window=3y"))).content.decode()
    assert "“yesterday-ish” is not a date and time" in page
    assert shown(page) == ["kept"]
    reads = [r for r in quiet.requests() if "/telemetry/events" in r["path"]]
    # The queries sent (not the whole record: a random session id may hold "3y").
    assert reads and all("yesterday" not in r["query"] and "3y" not in r["query"] for r in reads)
    backwards = (
        await viewer_client.get(url(session, "?since=2026-01-02T00:00&until=2026-01-01T00:00"))
    ).content.decode()
    assert "The window ended before it began" in backwards


async def test_it_opens_a_permalinked_event_in_its_window(viewer_client, quiet, session):
    emit(quiet, session, *[log(f"before-{i}") for i in range(80)])
    target = emit(quiet, session, log("the one", "error"))[0]
    emit(quiet, session, *[log(f"after-{i}") for i in range(80)])
    at = datetime.fromtimestamp(target["event"]["ts"] / 1e6, UTC) + timedelta(seconds=1)
    until = at.isoformat().replace("+00:00", "Z")
    page = (await viewer_client.get(url(session, f"?until={until}&event={target['seq']}"))).content.decode()
    rows = shown(page)
    assert "the one" in rows and "after-0" in rows
    assert f'data-permalink-seq="{target["seq"]}"' in page
