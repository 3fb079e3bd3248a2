"""The status chip of a live pane in Chromium: "Stalled" while the upstream is frozen, "Live" again after."""

import uuid

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import running_console
from tests.browser.test_telemetry import DEMO_KEY, TELEMETRY, log_in

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def quick_console(sandbox_url, tmp_path_factory):
    """A console whose keepalives come every 0.5 s and that calls an upstream stalled after 2 s of silence."""
    settings = {"LIVE_KEEPALIVE_SECONDS": "0.5", "LIVE_UPSTREAM_KEEPALIVE_SECONDS": "1"}
    with running_console(sandbox_url, tmp_path_factory.mktemp("quick"), **settings) as base_url:
        yield base_url


def sandbox(sandbox_url, path, json):
    headers = {"Authorization": f"Bearer {DEMO_KEY}"}
    response = httpx.post(f"{sandbox_url}{path}", json=json, headers=headers, timeout=10)
    response.raise_for_status()
    return response


def test_it_says_stalled_while_the_upstream_is_frozen_then_live(quick_console, sandbox_url, browser_page):
    page = browser_page
    body = {"name": f"stall-{uuid.uuid4().hex[:8]}", "timeout_seconds": 259_200, "telemetry": TELEMETRY}
    sid = sandbox(sandbox_url, "/browsers", body).json()["session_id"]
    # The upstream's keepalive comments come every 0.3 s (they alone keep the chip "Live"), but the stream
    # freezes for 5 s right after connecting.
    sandbox(sandbox_url, "/_sandbox/settings", {"keepalive_seconds": 0.3})
    try:
        fault = {"method": "GET", "path": f"^/browsers/{sid}/telemetry/stream$", "stall_seconds": 5}
        sandbox(sandbox_url, "/_sandbox/faults", fault)
        log_in(page, quick_console)
        page.goto(f"{quick_console}/o/demo/browsers/{sid}/")
        chip = page.locator("#telemetry-pane .live-indicator .live-status")
        # The stall starts when the pane's stream reaches the upstream, which on a loaded machine can be
        # seconds after the page loaded (the session part first, then the stream): waited for generously.
        expect(chip).to_have_attribute("data-state", "stalled", timeout=15_000)
        expect(chip).to_have_text("Stalled")
        expect(chip).to_have_attribute("data-state", "live", timeout=15_000)
        expect(chip).to_have_text("Live")
        # Quiet but alive: the chip stays "Live" on keepalives alone.
        page.wait_for_timeout(2_500)
        expect(chip).to_have_attribute("data-state", "live")
    finally:
        sandbox(sandbox_url, "/_sandbox/settings", {"keepalive_seconds": 15})
