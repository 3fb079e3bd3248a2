"""The login flow in Chromium: an MFA login from "Start login" to success, every step arriving through
the live relay (or its polling fallback), with the typed values nowhere in the page afterwards."""

import re
import uuid

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DEMO_PASSWORD

pytestmark = pytest.mark.browser

PASSWORD = "browser-flow-probe-Pw-47k"
CODE = "864213"


def log_in(page, base_url):
    page.goto(f"{base_url}/login/")
    page.get_by_label("Username or e-mail").fill("demo@example.com")
    page.get_by_label("Password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base_url}/o/demo/")


def new_connection(sandbox_url: str, domain: str) -> str:
    response = httpx.post(
        f"{sandbox_url}/auth/connections",
        json={"domain": domain, "profile_name": f"browser-{uuid.uuid4().hex[:8]}", "health_checks": False},
        headers={"Authorization": "Bearer sandbox-demo-key"},
    )
    response.raise_for_status()
    return response.json()["id"]


def test_it_runs_an_mfa_login_from_start_to_success(console_server, sandbox_url, browser_page):
    page = browser_page
    errors = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    log_in(page, console_server)
    connection_id = new_connection(sandbox_url, "mfa.example.com")

    page.goto(f"{console_server}/o/demo/auth/{connection_id}/flow/")
    page.get_by_role("button", name="Start login").click()
    expect(page).to_have_url(f"{console_server}/o/demo/auth/{connection_id}/flow/")
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

    status = httpx.get(
        f"{sandbox_url}/auth/connections/{connection_id}",
        headers={"Authorization": "Bearer sandbox-demo-key"},
    ).json()
    assert status["status"] == "AUTHENTICATED"


def test_it_shows_the_site_error_next_to_a_rejected_password(console_server, sandbox_url, browser_page):
    page = browser_page
    log_in(page, console_server)
    connection_id = new_connection(sandbox_url, "plain.example.com")
    page.goto(f"{console_server}/o/demo/auth/{connection_id}/flow/")
    page.get_by_role("button", name="Start login").click()
    page.get_by_label("Email or username").fill("ops@acme.example")
    page.get_by_label("Password").fill("wrong-" + PASSWORD)
    page.get_by_role("button", name="Continue").click()
    expect(page.get_by_text("Incorrect password. Try again.")).to_be_visible()
    expect(page.get_by_label("Password")).to_have_value("")
    expect(page.get_by_label("Password")).to_have_attribute("aria-invalid", "true")
    assert PASSWORD not in page.content()


def test_it_keeps_what_the_operator_typed_when_the_stream_brings_the_step_shown(
    console_server, sandbox_url, browser_page
):
    # The page (or the answer to the operator's submit) can show a step before the live stream brings it:
    # the stream's copy of that same step must not replace the form being filled (it emptied the fields).
    page = browser_page
    log_in(page, console_server)
    connection_id = new_connection(sandbox_url, "plain.example.com")
    headers = {"Authorization": "Bearer sandbox-demo-key"}
    started = httpx.post(f"{sandbox_url}/auth/connections/{connection_id}/login", json={}, headers=headers)
    started.raise_for_status()
    for _ in range(100):  # discovery ends after a moment
        record = httpx.get(f"{sandbox_url}/auth/connections/{connection_id}", headers=headers).json()
        if record["flow_step"] == "AWAITING_INPUT":
            break
        page.wait_for_timeout(100)
    assert record["flow_step"] == "AWAITING_INPUT"

    held = []
    events = re.compile(rf"/auth/{connection_id}/events/")
    page.route(events, lambda route: held.append(route))
    page.goto(f"{console_server}/o/demo/auth/{connection_id}/flow/")
    page.get_by_label("Email or username").fill("ops@acme.example")
    page.evaluate(
        """() => { window.__stateMessages = 0;
        document.addEventListener("htmx:sseBeforeMessage", () => { window.__stateMessages += 1; }); }"""
    )
    for _ in range(100):
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "the page did not open its stream"
    held[0].continue_()  # the stream opens now, and brings the flow's state: the step shown
    page.wait_for_function("() => window.__stateMessages >= 1", timeout=15_000)
    expect(page.locator("#auth-flow-live-status .live-status")).to_have_attribute("data-state", "live")
    expect(page.get_by_label("Email or username")).to_have_value("ops@acme.example")
    page.unroute(events)
