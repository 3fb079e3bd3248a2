from playwright.sync_api import expect

from tests.browser.conftest import log_in_with_the_form, watch_errors
from tests.sandbox_fixtures import new_tenant


def test_it_logs_in_and_switches_org(console_server, browser_page):
    page = browser_page
    errors = watch_errors(page)
    # Two organizations of this test's own; the user's first (by name) is where the login lands.
    first = console_server.team(new_tenant(console_server.sandbox_url), name="Alpha login")
    second = console_server.team(new_tenant(console_server.sandbox_url), name="Beta login")
    admin = first.user("admin")
    console_server.add_member(admin, second.slug, "viewer")

    page.goto(f"{console_server.url}/login/")
    log_in_with_the_form(page, console_server.url, f"{admin}@example.com", then=first.path())
    expect(page.get_by_role("heading", level=1)).to_have_text("Alpha login")

    page.locator("#org-switcher summary").click()
    page.locator("#org-switcher").get_by_role("link", name="Beta login").click()

    expect(page).to_have_url(second.url())
    expect(page.get_by_role("heading", level=1)).to_have_text("Beta login")
    expect(page.locator("#org-switcher summary")).to_have_text("Beta login")
    # No CSP violations or script errors: htmx and console.js load as files.
    assert errors == []
