"""A new pool's capacity bar fills in place while the page polls and the tenant clock moves."""

import secrets

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DEMO_PASSWORD

pytestmark = pytest.mark.browser

DEMO_KEY = "sandbox-demo-key"


def log_in(page, base_url: str) -> None:
    page.goto(f"{base_url}/login/")
    page.get_by_label("Username or e-mail").fill("demo@example.com")
    page.get_by_label("Password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base_url}/o/demo/")


def call(sandbox_url: str, method: str, path: str, body: dict):
    """A call to the demo tenant of the sandbox (the demo org's service)."""
    response = httpx.request(
        method, f"{sandbox_url}{path}", json=body, headers={"Authorization": f"Bearer {DEMO_KEY}"}
    )
    response.raise_for_status()
    return response.json() if response.content else None


def advance(sandbox_url: str, seconds: int) -> None:
    call(sandbox_url, "POST", "/_sandbox/clock", {"advance_seconds": seconds})


def set_visibility(page, state: str) -> None:
    """What the browser does when the tab is hidden or shown (headless Chromium is always visible)."""
    page.evaluate(
        """state => {
            Object.defineProperty(document, "visibilityState", {configurable: true, get: () => state});
            document.dispatchEvent(new Event("visibilitychange"));
        }""",
        state,
    )


def test_it_creates_a_pool_and_sees_its_capacity_bar_fill(console_server, sandbox_url, browser_page):
    page = browser_page
    errors = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    name = f"bar-{secrets.token_hex(3)}"

    log_in(page, console_server)
    page.goto(f"{console_server}/o/demo/pools/new/")
    page.get_by_label("Size").fill("4")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Fill rate").fill("100")  # the whole size per minute
    page.get_by_role("button", name="Create pool").click()

    expect(page.get_by_role("heading", name=name)).to_be_visible()
    counts = page.locator("#pool-counts .capacity")
    expect(counts).to_have_attribute("data-available", "0")
    expect(counts).to_contain_text("4 warming")
    loads = []
    page.on("load", lambda _: loads.append(page.url))

    advance(sandbox_url, 30)  # half the pool warms
    expect(counts).to_have_attribute("data-available", "2", timeout=10_000)
    expect(page.locator("#pool-counts .bar-available")).to_have_attribute("width", "500")
    advance(sandbox_url, 30)
    expect(counts).to_have_attribute("data-available", "4", timeout=10_000)
    expect(counts).to_contain_text("4 available")
    expect(page.locator("#pool-counts .bar-available")).to_have_attribute("width", "1000")
    assert loads == []  # refreshed in place, never a full page load

    # A hidden tab stops polling; coming back refreshes at once.
    polls = []
    page.on("request", lambda request: request.headers.get("hx-request") and polls.append(request.url))
    set_visibility(page, "hidden")
    page.wait_for_timeout(300)  # let a poll already on its way be reported
    polls.clear()
    session = call(sandbox_url, "POST", f"/browser_pools/{name}/acquire", {"acquire_timeout_seconds": 0})
    page.wait_for_timeout(4000)  # longer than the 3 s poll period
    assert polls == []
    expect(counts).to_have_attribute("data-acquired", "0")
    set_visibility(page, "visible")
    expect(counts).to_have_attribute("data-acquired", "1", timeout=5_000)

    # The list shows the same bar for the new pool, and refreshes it in place too.
    page.goto(f"{console_server}/o/demo/pools/?q={name}")
    row_bar = page.locator("#pools-live .capacity").first
    expect(row_bar).to_have_attribute("data-acquired", "1")
    expect(row_bar).to_have_attribute("data-available", "3")
    call(sandbox_url, "POST", f"/browser_pools/{name}/release", {"session_id": session["session_id"]})
    expect(row_bar).to_have_attribute("data-acquired", "0", timeout=10_000)
    expect(row_bar).to_have_attribute("data-available", "4")
    call(sandbox_url, "DELETE", f"/browser_pools/{name}", {"force": True})
    assert errors == []


CSP_PROBE = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (event) {
  window.__cspViolations.push(event.violatedDirective + " " + (event.target && event.target.nodeName));
});
"""


def test_it_answers_an_invalid_pool_form_without_a_csp_violation(console_server, browser_page):
    """Autofill, the browser's validation and extensions leave style attributes on fields; when the form comes
    back with its errors, htmx must not copy them onto the new fields (an inline style the CSP refuses)."""
    page = browser_page
    page.add_init_script(CSP_PROBE)
    refused = []
    page.on(
        "console", lambda message: "Content Security Policy" in message.text and refused.append(message.text)
    )
    log_in(page, console_server)
    page.goto(f"{console_server}/o/demo/pools/new/")
    styled = page.evaluate(
        """() => {
            const fields = document.querySelectorAll("#pool-form :is(input, select, textarea)");
            fields.forEach(function (field) { field.style.backgroundImage = "none"; });
            return fields.length;
        }"""
    )
    assert styled > 20
    page.get_by_label("Size").fill("-3")
    page.get_by_label("Fill rate").fill("500")
    page.get_by_role("button", name="Create pool").click()
    expect(page.locator("#id_size_error")).to_contain_text("At least 1.")
    expect(page.locator("#id_fill_rate_per_minute_error")).to_contain_text("At most 100.")
    # and the browser's own validation of the fields that came back
    page.evaluate("document.getElementById('pool-form').reportValidity()")
    assert page.evaluate("window.__cspViolations") == []
    assert refused == []
