"""List pages in a browser: the frame (head, filters, create button) shows while the service is slow and the
rows follow; a list that failed comes back with Retry; the filters still answer in place after."""

import secrets

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import watch_errors
from tests.browser.test_overview import HeldPart

pytestmark = pytest.mark.browser


def test_it_shows_the_frame_first_and_the_rows_after(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    team.log_in(page)
    name = f"frame-{secrets.token_hex(3)}"
    team.call("POST", "/proxies", {"type": "isp", "name": name})
    team.fault(method="GET", path="^/proxies$", latency_ms=3000, count=1)
    part = HeldPart(page, "proxies-table")

    page.goto(team.url("proxies/"))
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
    expect(page).to_have_url(team.url("proxies/?q=no-such-proxy-anywhere"))
    assert errors == []


def test_it_retries_a_list_that_failed(team, browser_page):
    page = browser_page
    team.log_in(page)
    name = f"retry-{secrets.token_hex(3)}"
    team.call("POST", "/profiles", {"name": name})
    # A GET is tried three times on a 503: fail all three, then answer.
    team.fault(method="GET", path="^/profiles$", status=503, count=3)

    page.goto(team.url(f"profiles/?q={name}"))
    expect(page.get_by_role("heading", name="Profiles", exact=True)).to_be_visible()
    failed = page.locator("#profiles-table.deferred-failed")
    expect(failed).to_contain_text("Service unavailable", timeout=10_000)
    failed.get_by_role("link", name="Retry").click()
    expect(page.locator("#profiles-table")).to_contain_text(name, timeout=10_000)
    expect(page.locator("#profiles-table.deferred-failed")).to_have_count(0)


def test_it_shows_a_screenful_of_sessions_one_line_each(team, browser_page):
    """At 1440 by 900, fifteen sessions with long profiles, several tags and no name: one line per row."""
    page = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    team.log_in(page)
    profile = "a-profile-with-a-rather-long-descriptive-name"
    team.call("POST", "/profiles", {"name": profile})
    run = secrets.token_hex(3)
    tags = {"run": run, "team": "checkout", "env": "staging", "owner": "someone-with-a-long-name"}
    for n in range(16):
        body = {"timeout_seconds": 3600, "tags": tags, "profile": {"name": profile}, "stealth": True}
        if n % 2:
            body["name"] = f"a-fairly-long-session-name-{n:02d}-for-the-density-check"
        team.call("POST", "/browsers", body)
    page.goto(team.url(f"browsers/?tag=run={run}"))
    rows = page.locator("#browsers-table tbody tr")
    expect(rows).to_have_count(16, timeout=15_000)
    heights, bottom15, overflow = page.evaluate(
        """() => {
          const rows = [...document.querySelectorAll('#browsers-table tbody tr')];
          const scroll = document.querySelector('#browsers-table .table-scroll');
          return [rows.map(r => r.getBoundingClientRect().height), rows[14].getBoundingClientRect().bottom,
                  scroll.scrollWidth - scroll.clientWidth];
        }"""
    )
    assert max(heights) <= 40, heights  # one line each
    assert bottom15 <= 900, bottom15  # the fifteenth row is on the first screen
    assert overflow <= 0, overflow  # and the whole row, to its actions, without scrolling sideways
    # The same whatever the "Created" column says: the server's exact minute (until console.js has made it
    # relative, which a loaded machine showed for a moment) or the widest relative forms.
    for created in ["2026-11-28 08:00", "29 days ago", "59 min ago"]:
        overflow = page.evaluate(
            """created => {
              const times = document.querySelectorAll('#browsers-table tbody time');
              times.forEach(t => { t.textContent = created; });
              const scroll = document.querySelector('#browsers-table .table-scroll');
              return scroll.scrollWidth - scroll.clientWidth;
            }""",
            created,
        )
        assert overflow <= 0, (created, overflow)
    # An unnamed session's link is its id, coloured as a link, not a grey "unnamed".
    expect(page.locator("#browsers-table tbody .session-cell a code")).to_have_count(8)
    assert "unnamed" not in page.locator("#browsers-table").inner_text()
