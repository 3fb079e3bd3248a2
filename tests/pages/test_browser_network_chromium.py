"""The HAR of a real page: the demo shop's failing checkout in Debian's Chromium, exported through the
console, valid HAR 1.2, its requests with their statuses and timings."""

import asyncio
import json
import time

import pytest

from tests.har import errors as har_errors

pytestmark = pytest.mark.chromium

ALL = {name: {"enabled": True} for name in ("console", "network", "page")}
QUOTE = "https://shop.example.com/api/checkout/quote"


@pytest.fixture
def tenant(chromium_tenant):
    """The organization's tenant lives on the sandbox whose sessions run Chromium."""
    return chromium_tenant


async def wait_for_event(tenant, sid, kind, seconds=30.0, **data) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        events = tenant.call(
            "GET", f"/browsers/{sid}/telemetry/events", params={"type": kind, "limit": 100, "since": "1h"}
        ).json()
        for envelope in events:
            if all(envelope["event"]["data"].get(key) == value for key, value in data.items()):
                return envelope
        await asyncio.sleep(0.2)
    raise AssertionError(f"no {kind} event with {data}")


async def test_it_exports_the_real_checkout_as_har_with_its_statuses_and_timings(viewer_client, tenant):
    body = {
        "headless": True,
        "viewport": {"width": 640, "height": 480},
        "timeout_seconds": 600,
        "start_url": "https://shop.example.com/checkout",
        "telemetry": {"enabled": True, "browser": ALL},
    }
    created = tenant.call("POST", "/browsers", json=body, timeout=60)
    assert created.status_code == 201, created.text
    sid = created.json()["session_id"]
    await wait_for_event(tenant, sid, "network_response", status=503)
    await wait_for_event(tenant, sid, "network_loading_failed")

    answer = await viewer_client.get(f"/o/acme/browsers/{sid}/telemetry/har/")
    assert answer.status_code == 200
    har = json.loads(answer.content)
    assert har_errors(har) == []
    entries = har["log"]["entries"]
    by_url = {e["request"]["url"]: e for e in entries}
    page = by_url["https://shop.example.com/checkout"]
    assert page["response"]["status"] == 200 and page["response"]["content"]["mimeType"] == "text/html"
    quote = by_url[QUOTE]
    assert quote["request"]["method"] == "POST" and quote["response"]["status"] == 503
    assert quote["request"]["postData"]["mimeType"] == "application/json"
    failed = [e for e in entries if e["response"].get("_error") == "net::ERR_NAME_NOT_RESOLVED"]
    assert failed and failed[0]["response"]["status"] == 0
    # Timings from the browser's own events: the page first, every answered request a time of its own.
    assert entries[0]["request"]["url"] == "https://shop.example.com/checkout"
    assert all(e["time"] >= 0 and e["timings"]["wait"] == e["time"] for e in entries)
    assert quote["startedDateTime"] > page["startedDateTime"]

    waterfall = (await viewer_client.get(f"/o/acme/browsers/{sid}/?view=network")).content.decode()
    assert f'title="{QUOTE}"' in waterfall and 'data-status="503"' in waterfall
