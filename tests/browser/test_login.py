import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DEMO_PASSWORD

pytestmark = pytest.mark.browser


def test_it_logs_in_and_switches_org(console_server, browser_page):
    page = browser_page
    errors = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))

    page.goto(f"{console_server}/login/")
    page.get_by_label("Username or e-mail").fill("demo@example.com")
    page.get_by_label("Password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()

    expect(page).to_have_url(f"{console_server}/o/demo/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Demo")

    page.locator("#org-switcher summary").click()
    page.locator("#org-switcher").get_by_role("link", name="Second").click()

    expect(page).to_have_url(f"{console_server}/o/second/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Second")
    expect(page.locator("#org-switcher summary")).to_have_text("Second")
    # No CSP violations or script errors: htmx and console.js load as files.
    assert errors == []
