"""List pages in a browser: the frame (head, filters, create button) shows while the service is slow and the
rows follow; a list that failed comes back with Retry; the filters still answer in place after."""

import secrets

import pytest
from playwright.sync_api import expect

from tests.browser.test_overview import HeldPart, fault, watch_errors
from tests.browser.test_pools import call, log_in

pytestmark = pytest.mark.browser


def test_it_shows_the_frame_first_and_the_rows_after(console_server, sandbox_url, browser_page):
    page = browser_page
    errors = watch_errors(page)
    log_in(page, console_server)
    name = f"frame-{secrets.token_hex(3)}"
    proxy = call(sandbox_url, "POST", "/proxies", {"type": "isp", "name": name})
    fault(sandbox_url, method="GET", path="^/proxies$", latency_ms=3000, count=1)
    part = HeldPart(page, "proxies-table")

    page.goto(f"{console_server}/o/demo/proxies/")
    expect(page.locator("#proxies-table.deferred-loading")).to_contain_text("Loading")
    expect(page.get_by_role("heading", name="Proxies", exact=True)).to_be_visible()
    expect(page.locator("#proxy-search")).to_be_visible()
    expect(page.get_by_role("link", name="New proxy")).to_be_visible()
    expect(page.get_by_role("link", name=name)).to_have_count(0)
    part.release()

    expect(page.get_by_role("link", name=name)).to_be_visible(timeout=15_000)
    expect(page.locator("#proxies-table.deferred-loading")).to_have_count(0)
    page.locator("#proxy-search").fill("no-such-proxy-anywhere")
    expect(page.locator("#proxies-table")).to_contain_text("No proxy matches", timeout=10_000)
    expect(page).to_have_url(f"{console_server}/o/demo/proxies/?q=no-such-proxy-anywhere")
    call(sandbox_url, "DELETE", f"/proxies/{proxy['id']}", {})
    assert errors == []


def test_it_retries_a_list_that_failed(console_server, sandbox_url, browser_page):
    page = browser_page
    log_in(page, console_server)
    name = f"retry-{secrets.token_hex(3)}"
    call(sandbox_url, "POST", "/profiles", {"name": name})
    # A GET is tried three times on a 503: fail all three, then answer.
    fault(sandbox_url, method="GET", path="^/profiles$", status=503, count=3)

    # Filtered by its name: the demo tenant's profiles are many more than a page once other tests ran.
    page.goto(f"{console_server}/o/demo/profiles/?q={name}")
    expect(page.get_by_role("heading", name="Profiles", exact=True)).to_be_visible()
    failed = page.locator("#profiles-table.deferred-failed")
    expect(failed).to_contain_text("Service unavailable", timeout=10_000)
    failed.get_by_role("link", name="Retry").click()
    expect(page.locator("#profiles-table")).to_contain_text(name, timeout=10_000)
    expect(page.locator("#profiles-table.deferred-failed")).to_have_count(0)
