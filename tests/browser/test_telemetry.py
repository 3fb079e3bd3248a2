"""The telemetry pane in Chromium: live events arrive through the relay, pause buffers them behind the
"N new events" pill, scrolling up pauses, category chips filter (in the URL), rows expand and copy, and
the pane says when the session ends."""

import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import watch_errors
from tests.web.test_telemetry_secrets import EVENTS, SECRETS

pytestmark = pytest.mark.browser

TELEMETRY = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}


def new_session(team) -> str:
    body = {"name": f"tele-{uuid.uuid4().hex[:8]}", "timeout_seconds": 259_200, "telemetry": TELEMETRY}
    return team.call("POST", "/browsers", body)["session_id"]


def emit(team, sid, *events, count=None):
    body = {"session_id": sid, **({"count": count} if count else {"events": list(events)})}
    return team.control("POST", "telemetry/emit", body)["seqs"]


def console(text, level="log"):
    return {"type": "console_log", "data": {"text": text, "level": level, "url": "https://shop.example.com/"}}


def layout_counter(page):
    """How many times the page has laid itself out so far (Chromium's LayoutCount, over CDP)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")

    def layouts() -> int:
        metrics = cdp.send("Performance.getMetrics")["metrics"]
        return next(int(m["value"]) for m in metrics if m["name"] == "LayoutCount")

    return layouts


def open_pane(page, team, sid, query=""):
    page.goto(team.url(f"browsers/{sid}/{query}"))
    expect(page.locator("#telemetry-pane .live-indicator [data-state='live']")).to_be_visible(timeout=10_000)
    return page.locator("[data-telemetry-rows]")


def test_it_shows_history_then_live_events_and_expands_a_row(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    team.log_in(page)
    sid = new_session(team)
    emit(team, sid, console("history-marker"))

    rows = open_pane(page, team, sid)
    expect(rows.locator(".trow__summary", has_text="history-marker")).to_be_visible()
    emit(team, sid, console("live-marker-1"))
    live = rows.locator("li.trow", has_text="live-marker-1")
    expect(live).to_have_count(1)

    live.locator("summary").click()
    expect(live.locator(".trow__json pre")).to_contain_text('"text": "live-marker-1"')
    live.get_by_role("button", name="Copy JSON").click()
    expect(live.get_by_role("button", name="Copied")).to_be_visible()
    assert errors == [], errors


def test_it_buffers_while_paused_and_pauses_when_scrolled_up(team, browser_page):
    page = browser_page
    team.log_in(page)
    sid = new_session(team)
    emit(team, sid, count=80)
    rows = open_pane(page, team, sid)
    pane = page.locator("[data-telemetry]")

    page.get_by_role("button", name="Pause").click()
    expect(pane).to_have_attribute("data-paused", "true")
    emit(team, sid, console("while-paused"))
    pill = page.locator("[data-telemetry-pill]")
    expect(pill).to_be_visible()
    expect(pill).to_have_text(re.compile(r"\d+ new events? ↓"))
    expect(rows.locator(".trow__summary", has_text="while-paused")).to_have_count(0)
    pill.click()
    expect(rows.locator(".trow__summary", has_text="while-paused")).to_be_visible()
    expect(pane).to_have_attribute("data-paused", "false")

    page.locator("[data-telemetry-log]").evaluate("log => { log.scrollTop = 0; }")
    expect(pane).to_have_attribute("data-paused", "true")
    emit(team, sid, console("after-scrolling-up"))
    expect(pill).to_be_visible()
    page.get_by_role("button", name="Resume live").click()
    expect(rows.locator(".trow__summary", has_text="after-scrolling-up")).to_be_visible()


def test_it_filters_live_rows_by_category_from_the_url(team, browser_page):
    page = browser_page
    team.log_in(page)
    sid = new_session(team)
    rows = open_pane(page, team, sid)

    page.locator(".telemetry__filters").get_by_role("link", name="console", exact=True).click()
    expect(page).to_have_url(re.compile(r"category=console"))
    expect(page.locator("#telemetry-pane .live-indicator [data-state='live']")).to_be_visible(timeout=10_000)
    network = {
        "type": "network_request",
        "data": {"method": "GET", "url": "https://shop.example.com/net-marker"},
    }
    emit(team, sid, network, console("console-marker"))
    expect(rows.locator(".trow__summary", has_text="console-marker")).to_be_visible()
    expect(rows.locator(".trow__summary", has_text="net-marker")).to_have_count(0)
    categories = rows.locator("li.trow").evaluate_all("rows => rows.map(r => r.dataset.category)")
    assert set(categories) == {"console"}


def test_it_says_when_the_session_ends(team, browser_page):
    page = browser_page
    team.log_in(page)
    sid = new_session(team)
    open_pane(page, team, sid)
    team.call("DELETE", f"/browsers/{sid}")
    expect(page.locator("#telemetry-pane .live-indicator [data-state='ended']")).to_be_visible(timeout=10_000)
    expect(page.locator("[data-telemetry-ended]")).to_contain_text("The session has ended")


def test_it_trims_the_oldest_rows_beyond_the_bounded_buffer(team, browser_page):
    page = browser_page
    team.log_in(page)
    sid = new_session(team)
    rows = open_pane(page, team, sid)
    layouts = layout_counter(page)
    before = layouts()
    burst = team.control("POST", "telemetry/burst", {"session_id": sid, "count": 1100})
    last = rows.locator(f"li.trow[data-seq='{burst['last_seq']}']")
    expect(last).to_have_count(1, timeout=60_000)  # 1100 rows drawn by a browser on a loaded machine
    expect(page.locator("[data-telemetry-trimmed]")).to_be_visible()
    assert rows.locator("li.trow").count() == 1000
    # The rows of a burst join the list a frame at a time, not an event at a time (which laid the growing
    # list out twice per event: about 2,200 layouts, 8 s of the renderer for this burst).
    assert layouts() - before < 1100 / 2
    expect(rows.locator("#telemetry-older")).to_have_count(0)


def test_it_shows_live_events_without_the_secrets_they_carried(team, browser_page):
    page = browser_page
    team.log_in(page)
    sid = new_session(team)
    rows = open_pane(page, team, sid)
    emit(team, sid, *EVENTS)
    expect(rows.locator(".trow__summary", has_text="end-of-planted-events")).to_be_visible()

    login = rows.locator("li.trow", has_text="POST https://shop.example.com/login")
    login.locator("summary").click()  # telemetry.js indents the row's JSON when it opens
    expect(login.locator(".trow__json pre")).to_contain_text('"Authorization": "[redacted]"')
    expect(login.locator(".trow__json pre")).to_contain_text("password=%5Bredacted%5D&remember=on")
    html = page.content()
    assert [name for name, secret in SECRETS.items() if secret in html] == []


def test_it_shows_paused_not_live_while_paused(team, browser_page):
    page = browser_page
    team.log_in(page)
    sid = new_session(team)
    open_pane(page, team, sid)
    bar = page.locator("#telemetry-pane .telemetry__bar")
    page.get_by_role("button", name="Pause").click()
    expect(bar.get_by_role("button", name="Resume live")).to_be_visible()
    expect(bar.locator(".live-status", has_text="Paused")).to_be_visible()
    expect(bar.locator(".live-indicator [data-state='live']")).to_be_hidden()
    page.get_by_role("button", name="Resume live").click()
    expect(bar.locator(".live-indicator [data-state='live']")).to_be_visible()
    expect(bar.locator(".live-status", has_text="Paused")).to_be_hidden()


def test_it_counts_the_rows_shown_after_loading_older_ones(team, browser_page):
    page = browser_page
    team.log_in(page)
    sid = new_session(team)
    emit(team, sid, count=150)
    rows = open_pane(page, team, sid)
    expect(page.locator("[data-telemetry-count]")).to_have_text(re.compile(r"^\d+ events$"))
    first = rows.locator("li.trow").count()
    page.get_by_role("link", name="Load older events").click()
    expect(page.locator("li.trow[data-seq='1']")).to_have_count(1)
    # The counter follows the rows shown (read together: a live event may arrive in between).
    page.wait_for_function(
        """first => {
          const shown = document.querySelectorAll('[data-telemetry-rows] li.trow').length;
          const said = document.querySelector('[data-telemetry-count]').textContent;
          return shown > first && said === `${shown} events`;
        }""",
        arg=first,
        timeout=10_000,
    )
