"""A new pool's capacity bar fills in place while the page polls and the tenant clock moves."""

import secrets

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import settle, watch_errors

pytestmark = pytest.mark.browser


def set_visibility(page, state: str) -> None:
    """What the browser does when the tab is hidden or shown (headless Chromium is always visible)."""
    page.evaluate(
        """state => {
            Object.defineProperty(document, "visibilityState", {configurable: true, get: () => state});
            document.dispatchEvent(new Event("visibilitychange"));
        }""",
        state,
    )


def test_it_creates_a_pool_and_sees_its_capacity_bar_fill(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    name = f"bar-{secrets.token_hex(3)}"

    team.log_in(page)
    page.clock.install()  # the page's timers run on Playwright's clock: the polls come when the test says
    page.goto(team.url("pools/new/"))
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

    team.advance(30)  # half the pool warms
    page.clock.run_for(3_500)  # the 3 s poll
    expect(counts).to_have_attribute("data-available", "2", timeout=10_000)
    expect(page.locator("#pool-counts .bar-available")).to_have_attribute("width", "500")
    team.advance(30)
    page.clock.run_for(3_500)
    expect(counts).to_have_attribute("data-available", "4", timeout=10_000)
    expect(counts).to_contain_text("4 available")
    expect(page.locator("#pool-counts .bar-available")).to_have_attribute("width", "1000")
    assert loads == []  # refreshed in place, never a full page load

    # A hidden tab stops polling; coming back refreshes at once.
    polls = []
    page.on("request", lambda request: request.headers.get("hx-request") and polls.append(request.url))
    set_visibility(page, "hidden")
    settle(page)  # a poll already on its way is reported before this returns
    polls.clear()
    session = team.call("POST", f"/browser_pools/{name}/acquire", {"acquire_timeout_seconds": 0})
    page.clock.run_for(10_000)  # three poll periods
    settle(page)
    assert polls == []
    expect(counts).to_have_attribute("data-acquired", "0")
    set_visibility(page, "visible")
    expect(counts).to_have_attribute("data-acquired", "1", timeout=5_000)

    # The list shows the same bar for the new pool, and refreshes it in place too.
    page.goto(team.url(f"pools/?q={name}"))
    row_bar = page.locator("#pools-live .capacity").first
    expect(row_bar).to_have_attribute("data-acquired", "1")
    expect(row_bar).to_have_attribute("data-available", "3")
    team.call("POST", f"/browser_pools/{name}/release", {"session_id": session["session_id"]})
    page.clock.run_for(3_500)
    expect(row_bar).to_have_attribute("data-acquired", "0", timeout=10_000)
    expect(row_bar).to_have_attribute("data-available", "4")
    assert errors == []


CSP_PROBE = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (event) {
  window.__cspViolations.push(event.violatedDirective + " " + (event.target && event.target.nodeName));
});
"""


def test_it_answers_an_invalid_pool_form_without_a_csp_violation(team, browser_page):
    """Autofill, the browser's validation and extensions leave style attributes on fields; when the form comes
    back with its errors, htmx must not copy them onto the new fields (an inline style the CSP refuses)."""
    page = browser_page
    page.add_init_script(CSP_PROBE)
    refused = []
    page.on(
        "console", lambda message: "Content Security Policy" in message.text and refused.append(message.text)
    )
    team.log_in(page)
    page.goto(team.url("pools/new/"))
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


def test_it_drops_the_acquired_banner_once_that_browser_is_released(team, browser_page):
    page = browser_page
    name = f"lease-{secrets.token_hex(3)}"
    team.call("POST", "/browser_pools", {"name": name, "size": 2, "fill_rate_per_minute": 100})
    team.advance(120)
    team.log_in(page)
    page.goto(team.url(f"pools/{name}/"))
    page.get_by_role("button", name="Acquire").click()
    banner = page.locator("#acquired-session")
    expect(banner).to_be_visible(timeout=10_000)
    sid = banner.locator("code").first.inner_text()
    expect(page.locator(f"#lease-row-{sid}")).to_be_visible(timeout=10_000)

    # Released elsewhere (another operator, a script): the lease list refreshes and the banner goes.
    page.clock.install()
    team.call("POST", f"/browser_pools/{name}/release", {"session_id": sid})
    page.clock.run_for(6_000)
    expect(page.locator(f"#lease-row-{sid}")).to_have_count(0, timeout=10_000)
    expect(banner).to_be_hidden()
    expect(page.locator("#pool-lease")).to_contain_text(f"Session {sid} is no longer leased")
    expect(page.locator("#pool-lease input[name=session_id]")).to_have_value("")
