"""The telemetry pane in Chromium: live events arrive through the relay, pause buffers them behind the
"N new events" pill, scrolling up pauses, category chips filter (in the URL), rows expand and copy, and
the pane says when the session ends."""

import re
import uuid

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DEMO_PASSWORD
from tests.web.test_telemetry_secrets import EVENTS, SECRETS

pytestmark = pytest.mark.browser

DEMO_KEY = "sandbox-demo-key"
TELEMETRY = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}


def sandbox(sandbox_url, method, path, json=None):
    response = httpx.request(
        method, f"{sandbox_url}{path}", json=json, headers={"Authorization": f"Bearer {DEMO_KEY}"}, timeout=10
    )
    response.raise_for_status()
    return response


def new_session(sandbox_url) -> str:
    body = {"name": f"tele-{uuid.uuid4().hex[:8]}", "timeout_seconds": 259_200, "telemetry": TELEMETRY}
    return sandbox(sandbox_url, "POST", "/browsers", body).json()["session_id"]


def emit(sandbox_url, sid, *events, count=None):
    body = {"session_id": sid, **({"count": count} if count else {"events": list(events)})}
    return sandbox(sandbox_url, "POST", "/_sandbox/telemetry/emit", body).json()["seqs"]


def console(text, level="log"):
    return {"type": "console_log", "data": {"text": text, "level": level, "url": "https://shop.example.com/"}}


def log_in(page, base_url):
    page.goto(f"{base_url}/login/")
    page.get_by_label("Username or e-mail").fill("demo@example.com")
    page.get_by_label("Password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base_url}/o/demo/")


def open_pane(page, console_server, sid, query=""):
    page.goto(f"{console_server}/o/demo/browsers/{sid}/{query}")
    expect(page.locator("#telemetry-pane .live-indicator [data-state='live']")).to_be_visible(timeout=10_000)
    return page.locator("[data-telemetry-rows]")


def test_it_shows_history_then_live_events_and_expands_a_row(console_server, sandbox_url, browser_page):
    page = browser_page
    errors = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    log_in(page, console_server)
    sid = new_session(sandbox_url)
    emit(sandbox_url, sid, console("history-marker"))

    rows = open_pane(page, console_server, sid)
    expect(rows.locator(".trow__summary", has_text="history-marker")).to_be_visible()
    emit(sandbox_url, sid, console("live-marker-1"))
    live = rows.locator("li.trow", has_text="live-marker-1")
    expect(live).to_have_count(1)

    live.locator("summary").click()
    expect(live.locator(".trow__json pre")).to_contain_text('"text": "live-marker-1"')
    live.get_by_role("button", name="Copy JSON").click()
    expect(live.get_by_role("button", name="Copied")).to_be_visible()
    assert errors == [], errors


def test_it_buffers_while_paused_and_pauses_when_scrolled_up(console_server, sandbox_url, browser_page):
    page = browser_page
    log_in(page, console_server)
    sid = new_session(sandbox_url)
    emit(sandbox_url, sid, count=80)
    rows = open_pane(page, console_server, sid)
    pane = page.locator("[data-telemetry]")

    page.get_by_role("button", name="Pause").click()
    expect(pane).to_have_attribute("data-paused", "true")
    emit(sandbox_url, sid, console("while-paused"))
    pill = page.locator("[data-telemetry-pill]")
    expect(pill).to_be_visible()
    expect(pill).to_have_text(re.compile(r"\d+ new events? ↓"))
    expect(rows.locator(".trow__summary", has_text="while-paused")).to_have_count(0)
    pill.click()
    expect(rows.locator(".trow__summary", has_text="while-paused")).to_be_visible()
    expect(pane).to_have_attribute("data-paused", "false")

    page.locator("[data-telemetry-log]").evaluate("log => { log.scrollTop = 0; }")
    expect(pane).to_have_attribute("data-paused", "true")
    emit(sandbox_url, sid, console("after-scrolling-up"))
    expect(pill).to_be_visible()
    page.get_by_role("button", name="Resume live").click()
    expect(rows.locator(".trow__summary", has_text="after-scrolling-up")).to_be_visible()


def test_it_filters_live_rows_by_category_from_the_url(console_server, sandbox_url, browser_page):
    page = browser_page
    log_in(page, console_server)
    sid = new_session(sandbox_url)
    rows = open_pane(page, console_server, sid)

    page.locator(".telemetry__filters").get_by_role("link", name="console", exact=True).click()
    expect(page).to_have_url(re.compile(r"category=console"))
    expect(page.locator("#telemetry-pane .live-indicator [data-state='live']")).to_be_visible(timeout=10_000)
    network = {
        "type": "network_request",
        "data": {"method": "GET", "url": "https://shop.example.com/net-marker"},
    }
    emit(sandbox_url, sid, network, console("console-marker"))
    expect(rows.locator(".trow__summary", has_text="console-marker")).to_be_visible()
    expect(rows.locator(".trow__summary", has_text="net-marker")).to_have_count(0)
    categories = rows.locator("li.trow").evaluate_all("rows => rows.map(r => r.dataset.category)")
    assert set(categories) == {"console"}


def test_it_says_when_the_session_ends(console_server, sandbox_url, browser_page):
    page = browser_page
    log_in(page, console_server)
    sid = new_session(sandbox_url)
    open_pane(page, console_server, sid)
    sandbox(sandbox_url, "DELETE", f"/browsers/{sid}")
    expect(page.locator("#telemetry-pane .live-indicator [data-state='ended']")).to_be_visible(timeout=10_000)
    expect(page.locator("[data-telemetry-ended]")).to_contain_text("The session has ended")


def test_it_trims_the_oldest_rows_beyond_the_bounded_buffer(console_server, sandbox_url, browser_page):
    page = browser_page
    log_in(page, console_server)
    sid = new_session(sandbox_url)
    rows = open_pane(page, console_server, sid)
    burst = sandbox(sandbox_url, "POST", "/_sandbox/telemetry/burst", {"session_id": sid, "count": 1100})
    last = rows.locator(f"li.trow[data-seq='{burst.json()['last_seq']}']")
    expect(last).to_have_count(1, timeout=20_000)
    expect(page.locator("[data-telemetry-trimmed]")).to_be_visible()
    assert rows.locator("li.trow").count() == 1000
    expect(rows.locator("#telemetry-older")).to_have_count(0)


def test_it_shows_live_events_without_the_secrets_they_carried(console_server, sandbox_url, browser_page):
    page = browser_page
    log_in(page, console_server)
    sid = new_session(sandbox_url)
    rows = open_pane(page, console_server, sid)
    emit(sandbox_url, sid, *EVENTS)
    expect(rows.locator(".trow__summary", has_text="end-of-planted-events")).to_be_visible()

    login = rows.locator("li.trow", has_text="POST https://shop.example.com/login")
    login.locator("summary").click()  # telemetry.js indents the row's JSON when it opens
    expect(login.locator(".trow__json pre")).to_contain_text('"Authorization": "[redacted]"')
    expect(login.locator(".trow__json pre")).to_contain_text("password=%5Bredacted%5D&remember=on")
    html = page.content()
    assert [name for name, secret in SECRETS.items() if secret in html] == []
