"""The status chip of a live pane in Chromium: "Stalled" while the upstream is frozen, "Live" again after; the
session's uptime, written only when it changes."""

import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import assert_each_write_changes, running_console, watch_writes
from tests.browser.test_telemetry import TELEMETRY
from tests.sandbox_fixtures import new_tenant

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def quick_console(sandbox_url, tmp_path_factory):
    """A console whose keepalives come every 0.5 s and that calls an upstream stalled after 2 s of silence."""
    settings = {"LIVE_KEEPALIVE_SECONDS": "0.5", "LIVE_UPSTREAM_KEEPALIVE_SECONDS": "1"}
    with running_console(sandbox_url, tmp_path_factory.mktemp("quick"), **settings) as console:
        yield console


def test_it_says_stalled_while_the_upstream_is_frozen_then_live(quick_console, browser_page):
    page = browser_page
    team = quick_console.team(new_tenant(quick_console.sandbox_url))
    body = {"name": f"stall-{uuid.uuid4().hex[:8]}", "timeout_seconds": 259_200, "telemetry": TELEMETRY}
    sid = team.call("POST", "/browsers", body)["session_id"]
    # The upstream's keepalive comments come every 0.3 s (they alone keep the chip "Live"), but the stream
    # freezes for 5 s right after connecting.
    team.control("POST", "settings", {"keepalive_seconds": 0.3})
    team.fault(method="GET", path=f"^/browsers/{sid}/telemetry/stream$", stall_seconds=5)
    team.log_in(page)
    page.goto(team.url(f"browsers/{sid}/"))
    chip = page.locator("#telemetry-pane .live-indicator .live-status")
    # The stall starts when the pane's stream reaches the upstream, which on a loaded machine can be
    # seconds after the page loaded (the session part first, then the stream): waited for generously.
    expect(chip).to_have_attribute("data-state", "stalled", timeout=15_000)
    expect(chip).to_have_text("Stalled")
    expect(chip).to_have_attribute("data-state", "live", timeout=15_000)
    expect(chip).to_have_text("Live")
    # Quiet but alive: the chip stays "Live" on keepalives alone, through the console's keepalives (every
    # 0.5 s) and past twice the upstream's keepalive interval: three keepalives seen while still "Live".
    page.evaluate(
        """() => {
            window.__keepalives = 0;
            document.addEventListener("htmx:sseMessage", event => {
                if (event.detail.type === "keepalive") window.__keepalives += 1;
            });
        }"""
    )
    page.wait_for_function("() => window.__keepalives >= 5", timeout=15_000)
    expect(chip).to_have_attribute("data-state", "live")


def test_it_writes_the_uptime_of_a_session_only_when_it_changes(quick_console, browser_page):
    # Past an hour the uptime reads "2 h 0 min": written again each second, it laid the page out each time.
    page = browser_page
    team = quick_console.team(new_tenant(quick_console.sandbox_url))
    sid = team.call("POST", "/browsers", {"name": f"up-{uuid.uuid4().hex[:8]}", "timeout_seconds": 259_200})
    team.advance(2 * 3600)
    page.clock.install()  # the uptime's ticks wait for the test's clock (time still flows)
    team.log_in(page)
    page.goto(team.url(f"browsers/{sid['session_id']}/"))
    uptime = page.locator("[data-session-head] [data-uptime]")
    expect(uptime).to_have_text(re.compile(r"^2 h \d+ min$"))
    said = watch_writes(page, "[data-session-head] [data-uptime]")
    page.clock.run_for(10_000)  # ten ticks
    assert_each_write_changes(said())
