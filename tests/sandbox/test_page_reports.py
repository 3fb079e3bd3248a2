"""A page's interaction reports reach the sandbox through a binding any script of the page can call (a CDP
client's ``evaluate``, a site's own script): what the sandbox keeps of them is bounded in kind and size."""

from __future__ import annotations

import pytest
from playwright.sync_api import sync_playwright

from tests.sandbox.test_chromium import create, real, wait_for_event  # noqa: F401 - the fixture

pytestmark = pytest.mark.chromium

FORGED = """() => {
  let deep = [];
  for (let i = 0; i < 50; i++) deep = [deep];
  window.__sandboxTelemetry({type: 'interaction_click', x: deep, y: 7, selector: {nested: deep},
                             text: 'x'.repeat(2000000), tag: 'A', extra: 'kept?'});
}"""


def test_it_keeps_only_bounded_plain_values_of_a_pages_report(real):  # noqa: F811
    session = create(
        real,
        start_url="https://lab.example.com/",
        telemetry={"enabled": True, "browser": {"interaction": {"enabled": True}}},
    )
    sid = session["session_id"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
        try:
            page = browser.contexts[0].pages[0]
            page.evaluate(FORGED)
        finally:
            browser.close()
    event = wait_for_event(real, sid, "interaction_click", where=lambda data: data.get("tag") == "A")
    data = event["data"]
    assert data["y"] == 7
    assert "x" not in data and "selector" not in data and "extra" not in data
    assert 0 < len(data["text"]) <= 500


def test_it_keeps_a_bounded_part_of_what_a_page_logs(real):  # noqa: F811
    from console.sandbox.chromium.page_events import TEXT_LIMIT

    session = create(
        real,
        start_url="https://lab.example.com/",
        telemetry={"enabled": True, "browser": {"console": {"enabled": True}}},
    )
    sid = session["session_id"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
        try:
            browser.contexts[0].pages[0].evaluate(
                "() => console.log('huge', 'y'.repeat(2000000), ...Array(100).fill('arg'))"
            )
        finally:
            browser.close()
    event = wait_for_event(real, sid, "console_log", where=lambda data: "huge" in data.get("text", ""))
    data = event["data"]
    assert len(data["text"]) <= TEXT_LIMIT
    assert all(len(arg) <= TEXT_LIMIT for arg in data["args"]) and len(data["args"]) < 100
