"""The login flow in Chromium: an MFA login from "Start login" to success, every step arriving through
the live relay (or its polling fallback), with the typed values nowhere in the page afterwards."""

import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Held, watch_errors

pytestmark = pytest.mark.browser

PASSWORD = "browser-flow-probe-Pw-47k"
CODE = "864213"


def new_connection(team, domain: str) -> str:
    body = {"domain": domain, "profile_name": f"browser-{uuid.uuid4().hex[:8]}", "health_checks": False}
    return team.call("POST", "/auth/connections", body)["id"]


def test_it_runs_an_mfa_login_from_start_to_success(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    team.log_in(page)
    connection_id = new_connection(team, "mfa.example.com")

    page.goto(team.url(f"auth/{connection_id}/flow/"))
    page.get_by_role("button", name="Start login").click()
    expect(page).to_have_url(team.url(f"auth/{connection_id}/flow/"))
    expect(page.locator("#auth-flow-expiry")).to_contain_text("Expires in")
    expect(page.get_by_role("link", name="Hosted login page ↗")).to_have_attribute("target", "_blank")

    # Discovery ends by itself: the form arrives through the relayed stream, without a reload.
    expect(page.get_by_label("Email or username")).to_be_visible()
    expect(page.locator("#auth-flow-live-status .live-status")).to_have_attribute("data-state", "live")
    page.get_by_label("Email or username").fill("ops@acme.example")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Continue").click()

    page.get_by_role("button", name="Text message").click()
    code = page.get_by_label("Verification code")
    expect(code).to_be_visible()
    expect(page.get_by_text("We sent a 6-digit code by SMS")).to_be_visible()
    code.fill(CODE)
    page.get_by_role("button", name="Continue").click()

    expect(page.get_by_role("heading", name="Logged in")).to_be_visible()
    expect(page.get_by_text("https://mfa.example.com/home")).to_be_visible()
    expect(page.locator("#auth-flow-expiry")).to_have_text("Flow ended")
    html = page.content()
    assert PASSWORD not in html and CODE not in html
    assert not [e for e in errors if "Content Security Policy" in e]

    status = team.call("GET", f"/auth/connections/{connection_id}")
    assert status["status"] == "AUTHENTICATED"


def test_it_shows_the_site_error_next_to_a_rejected_password(team, browser_page):
    page = browser_page
    team.log_in(page)
    connection_id = new_connection(team, "plain.example.com")
    page.goto(team.url(f"auth/{connection_id}/flow/"))
    page.get_by_role("button", name="Start login").click()
    page.get_by_label("Email or username").fill("ops@acme.example")
    page.get_by_label("Password").fill("wrong-" + PASSWORD)
    page.get_by_role("button", name="Continue").click()
    expect(page.get_by_text("Incorrect password. Try again.")).to_be_visible()
    expect(page.get_by_label("Password")).to_have_value("")
    expect(page.get_by_label("Password")).to_have_attribute("aria-invalid", "true")
    assert PASSWORD not in page.content()


def test_it_keeps_what_the_operator_typed_when_the_stream_brings_the_step_shown(team, browser_page):
    # The page (or the answer to the operator's submit) can show a step before the live stream brings it:
    # the stream's copy of that same step must not replace the form being filled (it emptied the fields).
    page = browser_page
    team.log_in(page)
    connection_id = new_connection(team, "plain.example.com")
    team.call("POST", f"/auth/connections/{connection_id}/login", {})
    for _ in range(100):  # discovery ends after a moment
        record = team.call("GET", f"/auth/connections/{connection_id}")
        if record["flow_step"] == "AWAITING_INPUT":
            break
        page.wait_for_timeout(100)
    assert record["flow_step"] == "AWAITING_INPUT"

    stream = Held(page, re.compile(rf"/auth/{connection_id}/events/"))
    page.goto(team.url(f"auth/{connection_id}/flow/"))
    page.get_by_label("Email or username").fill("ops@acme.example")
    page.evaluate(
        """() => { window.__stateMessages = 0;
        document.addEventListener("htmx:sseBeforeMessage", () => { window.__stateMessages += 1; }); }"""
    )
    stream.release()  # the stream opens now, and brings the flow's state: the step shown
    page.wait_for_function("() => window.__stateMessages >= 1", timeout=15_000)
    expect(page.locator("#auth-flow-live-status .live-status")).to_have_attribute("data-state", "live")
    expect(page.get_by_label("Email or username")).to_have_value("ops@acme.example")
