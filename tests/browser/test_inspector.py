"""The session page as an inspector in Chromium: the screen and the telemetry side by side (a split that is
dragged and remembered), stacked on a phone; the other panes as tabs at their own URLs (Back goes back);
the network waterfall, a request's detail, copy as curl, the HAR download; a permalinked event."""

import json
import os
import re
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import watch_errors
from tests.har import errors as har_errors

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("INSPECTOR_SHOTS", "/tmp/inspector-shots"))
TELEMETRY = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}
QUOTE = "https://shop.example.com/api/checkout/quote"


def new_session(team) -> str:
    """A session whose telemetry holds only the test's own events (the sandbox generates none)."""
    team.control("POST", "settings", {"telemetry_rate_per_second": 0})
    body = {"name": f"insp-{uuid.uuid4().hex[:8]}", "timeout_seconds": 259_200, "telemetry": TELEMETRY}
    return team.call("POST", "/browsers", body)["session_id"]


def emit(team, sid, *events):
    return team.control("POST", "telemetry/emit", {"session_id": sid, "events": list(events)})["seqs"]


def checkout(team, sid):
    """The shop's failing checkout in the telemetry: the page, the quote's 503, a blocked tracker."""
    page = "https://shop.example.com/checkout"
    emit(
        team,
        sid,
        {
            "type": "network_request",
            "data": {"request_id": "doc", "method": "GET", "url": page, "resource_type": "Document"},
        },
    )
    team.advance(2)
    emit(
        team,
        sid,
        {
            "type": "network_response",
            "data": {"request_id": "doc", "url": page, "status": 200, "mime_type": "text/html"},
        },
        {
            "type": "network_request",
            "data": {
                "request_id": "q1",
                "method": "POST",
                "url": QUOTE,
                "resource_type": "Fetch",
                "headers": {"content-type": "application/json", "Authorization": "Bearer sk_live_abc123"},
                "post_data": '{"country": "DE"}',
            },
        },
        {
            "type": "network_request",
            "data": {
                "request_id": "gtm",
                "method": "GET",
                "url": "https://www.googletagmanager.com/gtm.js",
                "resource_type": "Script",
            },
        },
    )
    team.advance(1)
    emit(
        team,
        sid,
        {
            "type": "network_loading_failed",
            "data": {"request_id": "gtm", "error_text": "net::ERR_BLOCKED_BY_CLIENT"},
        },
        {
            "type": "console_error",
            "data": {
                "text": "Checkout failed: shipping quote returned 503",
                "stack_trace": {
                    "callFrames": [
                        {"functionName": "renderQuote", "url": page, "lineNumber": 41, "columnNumber": 9}
                    ]
                },
            },
        },
    )
    team.advance(3)
    return emit(
        team,
        sid,
        {
            "type": "network_response",
            "data": {
                "request_id": "q1",
                "url": QUOTE,
                "status": 503,
                "method": "POST",
                "mime_type": "application/json",
                "body": '{"error": "no quote"}',
            },
        },
    )


def open_session(page, team, sid, query=""):
    page.goto(team.url(f"browsers/{sid}/{query}"))
    expect(page.locator("#telemetry-pane")).to_be_visible(timeout=15_000)
    # The page's deferred part settled: htmx gives the swapped-in #session-detail the placeholder's class (its
    # padding and border) until the settle, so a box measured before it is 32 px narrower than the page's.
    expect(page.locator(".deferred-loading")).to_have_count(0)


def shoot(page, name: str) -> None:
    """The page at a desktop's and a phone's width, light and dark, for a person to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for width in (1440, 400):
            page.set_viewport_size({"width": width, "height": 1000})
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(
                path=str(SHOTS / f"{name}-{width}-{scheme}.png"),
                animations="disabled",
                full_page=width == 400,
            )
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1440, "height": 1000})


def test_it_opens_the_panes_as_tabs_at_their_own_urls_and_back_goes_back(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    team.log_in(page)
    sid = new_session(team)
    open_session(page, team, sid)
    tabs = page.get_by_role("navigation", name="Session")
    expect(tabs.get_by_role("link", name="Screen and telemetry")).to_have_attribute("aria-current", "page")
    expect(page.locator("#processes-pane")).to_have_count(0)  # loaded when its tab opens
    page.evaluate("window.__samePage = true")

    tabs.get_by_role("link", name="Processes").click()
    expect(page).to_have_url(re.compile(rf"/browsers/{sid}/processes/$"))
    expect(page.locator("#processes-pane")).to_be_visible()
    expect(tabs.get_by_role("link", name="Processes")).to_have_attribute("aria-current", "page")
    expect(page.locator("#telemetry-pane")).to_have_count(0)
    tabs.get_by_role("link", name="Files").click()
    expect(page).to_have_url(re.compile(rf"/browsers/{sid}/files/$"))
    expect(page.locator("#files-pane")).to_be_visible()
    assert page.evaluate("window.__samePage === true")  # swapped in by htmx, not a new page

    page.go_back()
    expect(page).to_have_url(re.compile(rf"/browsers/{sid}/processes/$"))
    expect(page.locator("#processes-pane")).to_be_visible()
    expect(
        page.get_by_role("navigation", name="Session").get_by_role("link", name="Processes")
    ).to_have_attribute("aria-current", "page")
    page.go_back()
    expect(page).to_have_url(re.compile(rf"/browsers/{sid}/$"))
    expect(page.locator("#telemetry-pane")).to_be_visible()
    expect(page.locator("#screen-pane")).to_be_visible()

    # Loaded directly, a tab's URL is the whole session page with that tab open.
    page.goto(team.url(f"browsers/{sid}/replays/"))
    expect(page.locator("#replays-pane")).to_be_visible()
    expect(
        page.get_by_role("navigation", name="Session").get_by_role("link", name="Replays")
    ).to_have_attribute("aria-current", "page")
    # And from there to the screen and the telemetry, live, through the tab.
    page.get_by_role("navigation", name="Session").get_by_role("link", name="Screen and telemetry").click()
    expect(page).to_have_url(re.compile(rf"/browsers/{sid}/$"))
    expect(page.locator("#telemetry-pane .live-indicator [data-state='live']")).to_be_visible(timeout=15_000)
    expect(page.locator("#replays-pane")).to_have_count(0)
    assert errors == [], errors


def test_it_puts_screen_and_telemetry_side_by_side_remembers_the_split_and_stacks_on_a_phone(
    team, browser_page
):
    page = browser_page
    team.log_in(page)
    sid = new_session(team)
    page.set_viewport_size({"width": 1440, "height": 1000})
    open_session(page, team, sid)
    boxes = """() => {
        const s = document.querySelector('.inspector__screen').getBoundingClientRect();
        const t = document.querySelector('.inspector__telemetry').getBoundingClientRect();
        const i = document.querySelector('[data-inspector]').getBoundingClientRect();
        return {screen: [s.left, s.top, s.width, s.bottom], telemetry: [t.left, t.top, t.width],
                inspector: i.width};
    }"""
    wide = page.evaluate(boxes)
    assert wide["telemetry"][0] > wide["screen"][0] + wide["screen"][2] - 1  # beside it
    assert abs(wide["screen"][1] - wide["telemetry"][1]) < 5

    gutter = page.get_by_role("separator", name="Resize the screen and the telemetry")
    gutter.focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(gutter).to_have_attribute("aria-valuenow", "40")
    assert page.evaluate("localStorage.getItem('console.inspector.split')") == "40"
    box = gutter.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 50)
    page.mouse.down()
    target = (
        page.evaluate("document.querySelector('[data-inspector]').getBoundingClientRect().left")
        + wide["inspector"] * 0.6
    )
    page.mouse.move(target, box["y"] + 60, steps=5)
    page.mouse.up()
    expect(gutter).to_have_attribute("aria-valuenow", "60")
    assert page.evaluate("localStorage.getItem('console.inspector.split')") == "60"

    page.reload()
    expect(page.locator("#telemetry-pane")).to_be_visible(timeout=15_000)
    # The split is the page script's to apply, once it runs: waited for, then measured.
    expect(page.locator("[data-inspector]")).to_have_attribute("data-inspector-ready", "1")
    expect(gutter).to_have_attribute("aria-valuenow", "60")
    remembered = page.evaluate(boxes)
    assert remembered["screen"][2] / remembered["inspector"] == pytest.approx(0.6, abs=0.02)

    page.set_viewport_size({"width": 400, "height": 900})
    phone = page.evaluate(boxes)
    assert phone["telemetry"][1] >= phone["screen"][3] - 1  # below it
    expect(gutter).to_be_hidden()
    assert page.evaluate("document.documentElement.scrollWidth <= 400")


def test_it_leaves_each_rows_summary_room_on_a_phone(team, browser_page):
    # The row's time, category and type take their columns; what the event says must still show beside them
    # (at 400 px the inspector's own column widths once left the summary nothing but its ellipsis; it now has
    # a line of its own).
    page = browser_page
    team.log_in(page)
    sid = new_session(team)
    marker = f"phone-{uuid.uuid4().hex[:6]}"
    emit(
        team,
        sid,
        {"type": "console_log", "data": {"text": marker, "level": "log"}},
        {
            "type": "network_response",
            "data": {"request_id": "r", "url": f"https://shop.example.com/{marker}", "status": 200},
        },
    )
    page.set_viewport_size({"width": 400, "height": 900})
    open_session(page, team, sid)
    rows = page.locator("[data-telemetry-rows] .trow")
    expect(rows).to_have_count(2)
    shown = page.evaluate(
        """() => [...document.querySelectorAll('[data-telemetry-rows] .trow')].map((row) => {
            const line = row.querySelector('summary').getBoundingClientRect();
            const said = row.querySelector('.trow__summary').getBoundingClientRect();
            return {line: line.width, shown: Math.min(said.right, line.right) - said.left};
        })"""
    )
    assert all(row["shown"] >= row["line"] / 2 for row in shown), shown
    assert page.evaluate("document.documentElement.scrollWidth <= 400")


def test_it_draws_the_waterfall_opens_a_request_and_copies_it_as_curl(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    team.log_in(page)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sid = new_session(team)
    checkout(team, sid)
    open_session(page, team, sid)
    page.get_by_role("navigation", name="Telemetry views").get_by_role("link", name="Network").click()
    expect(page).to_have_url(re.compile(r"view=network"))
    rows = page.locator("[data-network-table] tbody tr.nrow")
    expect(rows).to_have_count(3)
    expect(rows.nth(1)).to_have_attribute("data-status", "503")
    expect(rows.nth(1)).to_have_class(re.compile(r"nrow--error"))
    expect(rows.nth(2)).to_have_class(re.compile(r"nrow--blocked"))

    rows.nth(1).get_by_role("link").click()
    detail = page.locator("#request-detail")
    expect(detail.locator(".request__title")).to_contain_text(f"POST {QUOTE}")
    expect(detail).to_contain_text("503")
    expect(detail).to_contain_text("[redacted]")
    expect(detail).not_to_contain_text("sk_live_abc123")
    expect(page).to_have_url(re.compile(r"view=network"))  # the list stays, the detail beside it
    detail.get_by_role("button", name="Copy as curl").click()
    expect(detail.get_by_role("button", name="Copied")).to_be_visible()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith(f"curl {QUOTE} ") and "Authorization: [redacted]" in copied
    shoot(page, "network")
    assert errors == [], errors


def test_it_downloads_the_har_of_the_window(team, browser_page):
    page = browser_page
    team.log_in(page)
    sid = new_session(team)
    checkout(team, sid)
    open_session(page, team, sid, "?view=network&errors=1")
    expect(page.locator("[data-network-table] tbody tr.nrow")).to_have_count(2)
    with page.expect_download() as download:
        page.locator("[data-har-link]").click()
    assert download.value.suggested_filename == f"{sid}.har"
    har = json.loads(Path(download.value.path()).read_text())
    assert har_errors(har) == []
    assert [e["request"]["url"] for e in har["log"]["entries"]] == [
        QUOTE,
        "https://www.googletagmanager.com/gtm.js",
    ]


def test_it_opens_a_permalinked_event_scrolled_to_and_highlighted(team, browser_page):
    page = browser_page
    team.log_in(page)
    sid = new_session(team)
    emit(
        team,
        sid,
        *[{"type": "console_log", "data": {"text": f"before-{i}", "level": "log"}} for i in range(60)],
    )
    seqs = checkout(team, sid)
    emit(
        team,
        sid,
        *[{"type": "console_log", "data": {"text": f"after-{i}", "level": "log"}} for i in range(60)],
    )
    open_session(page, team, sid, "?view=console&errors=1")
    error = page.locator("li.trow", has_text="Checkout failed")
    expect(error).to_have_count(1)
    expect(page.locator("li.trow", has_text="before-1")).to_have_count(0)
    error.locator("summary").click()
    expect(error.locator(".trow__stack")).to_contain_text(
        "at renderQuote (https://shop.example.com/checkout:42:10)"
    )
    link = error.locator("[data-permalink]")
    href = link.evaluate("a => a.href")
    assert "event=" in href and "until=" in href and "view=console" in href
    shoot(page, "console")

    page.goto(href)
    target = page.locator("li.trow.is-permalinked")
    expect(target).to_have_count(1, timeout=15_000)
    expect(target).to_contain_text("Checkout failed")
    expect(target.locator("details")).to_have_attribute("open", "")
    expect(target).to_be_in_viewport()
    assert int(target.get_attribute("data-seq")) < seqs[0]
    shoot(page, "permalink")
