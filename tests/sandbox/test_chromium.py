"""Real browsers: sessions of a sandbox running the Chromium engine (console/sandbox/chromium/engine.py).

One sandbox with at most two running browsers serves these tests (``chromium_sandbox``); each test deletes
the sessions it creates.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import struct
import subprocess
import time
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import sync_playwright
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.sandbox_fixtures import (
    LONG_SESSION,
    browser_processes,
    displays,
    new_tenant,
    socket_inodes,
    start_sandbox,
    stop_sandbox,
    temporary_folder,
)

pytestmark = pytest.mark.chromium

ALL = {name: {"enabled": True} for name in ("console", "network", "page", "interaction")}


def create(tenant, **body):
    # Three days' inactivity timeout unless a test says otherwise: on a loaded machine a test can outlast the
    # service's 60 s default, and a session timed out under it is a different test.
    body = {
        "headless": True,
        "viewport": {"width": 640, "height": 480},
        "timeout_seconds": LONG_SESSION,
        **body,
    }
    response = tenant.call("POST", "/browsers", json=body, timeout=60)
    assert response.status_code == 201, response.text
    return response.json()


def wait_for_event(tenant, session_id, kind, where=lambda data: True, seconds=15.0) -> dict:
    deadline = time.monotonic() + seconds
    seen = []
    while time.monotonic() < deadline:
        response = tenant.call(
            "GET", f"/browsers/{session_id}/telemetry/events", params={"limit": 100, "since": "10m"}
        )
        seen = [item["event"] for item in response.json()]
        for event in seen:
            if event["type"] == kind and where(event.get("data") or {}):
                return event
        time.sleep(0.2)
    raise AssertionError(f"no {kind} event; saw {[e['type'] for e in seen]}")


def events_of(tenant, session_id) -> list[dict]:
    response = tenant.call("GET", f"/browsers/{session_id}/telemetry/events", params={"limit": 100})
    return [item["event"] for item in response.json()]


def pixel(png: bytes, x: int, y: int) -> tuple[int, int, int]:
    """The RGB of one pixel of an 8-bit RGB or RGBA PNG (enough of a decoder for screenshots)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    offset, data, width, channels = 8, b"", 0, 3
    while offset < len(png):
        (length,) = struct.unpack(">I", png[offset : offset + 4])
        kind, body = png[offset + 4 : offset + 8], png[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            width, _, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            data += body
        offset += 12 + length
    raw = zlib.decompress(data)
    stride = width * channels
    rows: list[bytearray] = []
    for row in range(y + 1):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        previous = rows[-1] if rows else bytearray(stride)
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + predictor) & 0xFF
        rows.append(line)
    start = x * channels
    return tuple(rows[y][start : start + 3])


def png_size(png: bytes) -> tuple[int, int]:
    return struct.unpack(">II", png[16:24])


@pytest.fixture
def real(chromium_tenant):
    """A fresh tenant of the real-browser sandbox, its sessions deleted after the test."""
    return chromium_tenant


def test_it_says_which_engine_it_runs(chromium_sandbox, sandbox_url, real):
    assert httpx.get(chromium_sandbox[0] + "/").json()["engine"] == "chromium"
    assert httpx.get(sandbox_url + "/").json()["engine"] == "simulated"
    assert httpx.get(chromium_sandbox[0] + "/_sandbox/health").json()["engine"] == "chromium"
    session = create(real)
    assert session["sandbox"] == {"engine": "chromium", "browser": "running"}
    assert session["cdp_ws_url"].startswith(chromium_sandbox[0].replace("http", "ws") + "/_sandbox/cdp/")


def test_it_reports_a_console_log_with_its_stack(real):
    session = create(
        real,
        start_url="https://lab.example.com/?log=the-chosen-text",
        telemetry={"enabled": True, "browser": {"console": {"enabled": True}}},
    )
    event = wait_for_event(
        real, session["session_id"], "console_log", lambda d: d["text"] == "the-chosen-text"
    )
    assert event["category"] == "console"
    assert event["source"] == {
        "kind": "cdp",
        "event": "Runtime.consoleAPICalled",
        "metadata": {"target_type": "page"},
    }
    frames = event["data"]["stack_trace"]["callFrames"]
    assert frames[0]["url"] == "https://lab.example.com/?log=the-chosen-text"
    assert event["data"]["url"] == "https://lab.example.com/?log=the-chosen-text"
    assert event["data"]["level"] == "log"


def test_it_clicks_a_button_and_the_page_handler_runs(real):
    session = create(real, start_url="https://lab.example.com/", telemetry={"enabled": True, "browser": ALL})
    sid = session["session_id"]
    response = real.call("POST", f"/browsers/{sid}/computer/click_mouse", json={"x": 60, "y": 40})
    assert response.status_code == 204
    wait_for_event(real, sid, "console_log", lambda d: d["text"] == "button clicked")
    click = wait_for_event(real, sid, "interaction_click")
    assert (click["data"]["x"], click["data"]["y"], click["data"]["selector"]) == (60, 40, "button#hello")
    assert real.call("POST", f"/browsers/{sid}/computer/get_mouse_position").json() == {"x": 60, "y": 40}


def test_it_types_and_presses_keys_in_the_page(real):
    session = create(
        real, start_url="https://plain.example.com/login", telemetry={"enabled": True, "browser": ALL}
    )
    sid = session["session_id"]
    batch = [
        {"type": "press_key", "press_key": {"keys": ["Tab"]}},
        {"type": "type_text", "type_text": {"text": "jo@example.com"}},
        {"type": "press_key", "press_key": {"keys": ["Tab"]}},
        {"type": "type_text", "type_text": {"text": "hunter22"}},
        {"type": "press_key", "press_key": {"keys": ["Return"]}},
    ]
    assert real.call("POST", f"/browsers/{sid}/computer/batch", json={"actions": batch}).status_code == 204
    wait_for_event(real, sid, "page_navigation", lambda d: d["url"] == "https://plain.example.com/home")
    key = wait_for_event(real, sid, "interaction_key", lambda d: d["key"] == "Enter")
    assert key["data"]["tag"] == "INPUT"
    keys = [e for e in events_of(real, sid) if e["type"] == "interaction_key"]
    typed_in = {}
    for event in keys:
        typed_in.setdefault(event["data"]["selector"], []).append(event["data"]["key"])
    # The e-mail field's keys are recorded as typed; the password's characters never are.
    assert "".join(k for k in typed_in["input#email"] if len(k) == 1) == "jo@example.com"
    password = [k for k in typed_in["input#password"] if k not in ("Enter", "Tab")]
    assert password == ["•"] * len("hunter22")
    assert [e["type"] for e in events_of(real, sid) if "hunter22" in json.dumps(e)] == []
    posted = [
        e["data"]
        for e in events_of(real, sid)
        if e["type"] == "network_request" and e["data"].get("post_data")
    ]
    assert posted and "password=%5Bredacted%5D" in posted[0]["post_data"]
    assert "jo%40example.com" in posted[0]["post_data"]  # what is not a secret stays readable


def test_it_screenshots_the_page_at_the_viewport_size(real):
    session = create(real, start_url="https://lab.example.com/?color=1e90ff")
    sid = session["session_id"]
    response = real.call("POST", f"/browsers/{sid}/computer/screenshot", json={})
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    assert png_size(response.content) == (640, 480)
    assert pixel(response.content, 400, 300) == (0x1E, 0x90, 0xFF)
    region = {"x": 300, "y": 200, "width": 50, "height": 40}
    response = real.call("POST", f"/browsers/{sid}/computer/screenshot", json={"region": region})
    assert png_size(response.content) == (50, 40)
    assert pixel(response.content, 10, 10) == (0x1E, 0x90, 0xFF)


def test_it_starts_a_headful_browser_while_the_last_one_of_its_size_closes(real):
    """The shared headful process of a size closes when its last session ends; a session of that size
    created meanwhile gets a new process on a display of its own. The close used to stop the display it
    found under the size once its browser had closed, the new one's: the new browser found no X server
    (a CI run's login flow never started its browser)."""
    viewport = {"width": 655, "height": 433}  # a size no other test uses: its shared process is this test's
    first = create(real, start_url="https://lab.example.com/?color=1e90ff", viewport=viewport, headless=False)
    assert real.call("DELETE", f"/browsers/{first['session_id']}", timeout=60).status_code in (200, 204)
    second = create(
        real, start_url="https://lab.example.com/?color=1e90ff", viewport=viewport, headless=False
    )
    shot = real.call("POST", f"/browsers/{second['session_id']}/computer/screenshot", json={}, timeout=60)
    assert shot.status_code == 200, shot.text
    assert png_size(shot.content) == (655, 433)
    assert pixel(shot.content, 300, 200) == (0x1E, 0x90, 0xFF)


def test_it_resizes_the_page_when_the_viewport_changes(real):
    sid = create(real, start_url="https://lab.example.com/")["session_id"]
    patch = {"viewport": {"width": 800, "height": 600}}
    assert real.call("PATCH", f"/browsers/{sid}", json=patch).status_code == 200
    shot = real.call("POST", f"/browsers/{sid}/computer/screenshot", json={})
    assert png_size(shot.content) == (800, 600)
    assert (
        real.call("POST", f"/browsers/{sid}/computer/click_mouse", json={"x": 790, "y": 590}).status_code
        == 204
    )


def test_it_refuses_bad_actions_with_the_error_body(real):
    sid = create(real, start_url="https://lab.example.com/")["session_id"]
    response = real.call("POST", f"/browsers/{sid}/computer/click_mouse", json={"x": 640, "y": 10})
    assert response.status_code == 400
    assert response.json()["details"][0]["code"] == "x"
    response = real.call("POST", f"/browsers/{sid}/computer/press_key", json={"keys": ["NoSuchKey"]})
    assert response.status_code == 400
    assert response.json()["details"] == [
        {"code": "keys", "message": "'NoSuchKey' is not a key name (e.g. Return, Tab, Ctrl+t)"}
    ]
    actions = [
        {"type": "click_mouse", "click_mouse": {"x": 60, "y": 40}},
        {"type": "scroll", "scroll": {"x": 10, "y": 9999}},
        {"type": "click_mouse", "click_mouse": {"x": 60, "y": 40}},
    ]
    response = real.call("POST", f"/browsers/{sid}/computer/batch", json={"actions": actions})
    assert response.status_code == 400
    assert response.json()["details"][0]["code"] == "actions[1]"


def test_it_connects_playwright_over_the_cdp_ws_url(real):
    session = create(real, start_url="https://docs.example.com/quickstart")
    other = create(real, start_url="https://news.example.org/")
    refused = session["cdp_ws_url"].split("?")[0] + "?jwt=" + other["cdp_ws_url"].split("jwt=")[1]
    with sync_playwright() as playwright:
        with pytest.raises(Exception, match=r"403|Unexpected status|WebSocket error"):
            playwright.chromium.connect_over_cdp(refused, timeout=10_000)
        browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
        try:
            pages = [page for context in browser.contexts for page in context.pages]
            assert [page.url for page in pages] == ["https://docs.example.com/quickstart"]
            assert pages[0].title() == "Quickstart"
            pages[0].click("text=the API reference")
            pages[0].wait_for_url("https://docs.example.com/api")
            # Nothing outside the demo sites is reachable, the sandbox itself included.
            probe = "(url) => fetch(url).then(() => 'reached', () => 'blocked')"
            for target in (real.url + "/_sandbox/health", "https://example.org/"):
                assert pages[0].evaluate(probe, target) == "blocked"
            pages[0].close()  # the sandbox opens a new page on the same URL at its next call
        finally:
            browser.close()
    # The sandbox drives the same page the client moved.
    shot = real.call("POST", f"/browsers/{session['session_id']}/computer/screenshot", json={})
    assert shot.status_code == 200
    events = events_of(real, session["session_id"])
    assert [e["type"] for e in events if e["category"] == "connection"] == []  # telemetry is off


def test_it_hides_automation_in_stealth_sessions(real):
    session = create(real, start_url="https://lab.example.com/", stealth=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
        try:
            page = browser.contexts[0].pages[0]
            assert page.evaluate("navigator.webdriver") is False
            assert "Headless" not in page.evaluate("navigator.userAgent")
        finally:
            browser.close()


def test_it_records_cdp_connections_as_telemetry(real):
    session = create(real, start_url="https://lab.example.com/", telemetry={"enabled": True})
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
        browser.close()
    disconnect = wait_for_event(real, session["session_id"], "cdp_disconnect")
    assert disconnect["data"]["reason"] == "client_close"
    assert disconnect["data"]["message_count"] > 0
    assert "cdp_connect" in [e["type"] for e in events_of(real, session["session_id"])]


def test_it_switches_capture_with_the_telemetry_categories(real):
    session = create(real, start_url="https://lab.example.com/", telemetry={"enabled": True, "browser": ALL})
    sid = session["session_id"]
    wait_for_event(real, sid, "page_load")
    patch = {"telemetry": {"browser": {"console": {"enabled": False}}}}
    assert real.call("PATCH", f"/browsers/{sid}", json=patch).status_code == 200
    real.call("POST", f"/browsers/{sid}/computer/click_mouse", json={"x": 60, "y": 40})
    wait_for_event(real, sid, "interaction_click")
    # On again, a second click: its "button clicked" comes after the first click's would have (one page,
    # one CDP session, in order), so once it is here the first one's absence is a fact, not a race.
    patch = {"telemetry": {"browser": {"console": {"enabled": True}}}}
    assert real.call("PATCH", f"/browsers/{sid}", json=patch).status_code == 200
    real.call("POST", f"/browsers/{sid}/computer/click_mouse", json={"x": 60, "y": 40})
    wait_for_event(real, sid, "console_log", lambda data: data.get("text") == "button clicked")
    kinds = [e["type"] for e in events_of(real, sid)]
    assert kinds.count("interaction_click") == 2 and kinds.count("console_log") == 1


def test_it_captures_periodic_screenshots_when_the_category_is_on(real):
    telemetry = {"enabled": True, "browser": {"screenshot": {"enabled": True}}}
    sid = create(real, start_url="https://lab.example.com/?color=00ff00", telemetry=telemetry)["session_id"]
    event = wait_for_event(real, sid, "monitor_screenshot")
    png = base64.b64decode(event["data"]["png"])
    assert png_size(png) == (160, 120)  # a quarter of the 640x480 viewport
    assert pixel(png, 80, 60) == (0, 255, 0)


def test_it_serves_the_demo_shop_whose_checkout_fails(real):
    session = create(
        real, start_url="https://shop.example.com/checkout", telemetry={"enabled": True, "browser": ALL}
    )
    sid = session["session_id"]
    error = wait_for_event(real, sid, "console_error")
    assert error["data"]["text"] == "Checkout failed: shipping quote returned 503"
    assert error["data"]["stack_trace"]["callFrames"][0]["functionName"] == "renderQuote"
    failed = wait_for_event(real, sid, "network_response", lambda d: d.get("status") == 503)
    assert failed["data"]["url"] == "https://shop.example.com/api/checkout/quote"
    blocked = wait_for_event(real, sid, "network_loading_failed")
    assert blocked["data"]["error_text"] == "net::ERR_NAME_NOT_RESOLVED"


def test_it_serves_the_login_sites_as_real_forms_with_their_mfa_steps(real):
    session = create(real, start_url="https://mfa.example.com/login")
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
        try:
            page = browser.contexts[0].pages[0]
            page.fill("#email", "jo@example.com")
            page.fill("#password", "wrong-password")
            page.click("text=Continue")
            assert page.locator("[role=alert]").inner_text() == "Incorrect password. Try again."
            page.fill("#password", "hunter22")
            page.click("text=Continue")
            page.click("#mfa_totp")
            page.fill("#totp", "000000")
            page.click("text=Continue")
            assert "didn't work" in page.locator("[role=alert]").inner_text()
            page.fill("#totp", "123456")
            page.click("text=Continue")
            page.wait_for_url("https://mfa.example.com/home")
            assert page.locator("h1").inner_text() == "Signed in"
        finally:
            browser.close()


def test_it_shows_chromiums_error_page_for_a_host_outside_the_demo_sites(real):
    session = create(real, start_url="https://example.org/", telemetry={"enabled": True, "browser": ALL})
    failed = wait_for_event(real, session["session_id"], "network_loading_failed")
    assert (failed["data"]["resource_type"], failed["data"]["error_text"]) == (
        "Document",
        "net::ERR_NAME_NOT_RESOLVED",
    )
    wait_for_event(
        real, session["session_id"], "page_navigation", lambda d: d["url"].startswith("chrome-error://")
    )
    shot = real.call("POST", f"/browsers/{session['session_id']}/computer/screenshot", json={})
    assert shot.status_code == 200 and pixel(shot.content, 5, 5) == (255, 255, 255)


def test_it_keeps_a_session_past_the_limit_in_standby_and_wakes_it_with_its_state(real):
    # Page telemetry only to see the login's navigation land before the session is put in standby.
    page_events = {"enabled": True, "browser": {"page": {"enabled": True}}}
    first = create(real, start_url="https://plain.example.com/login", telemetry=page_events)
    sid = first["session_id"]
    batch = [
        {"type": "press_key", "press_key": {"keys": ["Tab"]}},
        {"type": "type_text", "type_text": {"text": "jo@example.com"}},
        {"type": "press_key", "press_key": {"keys": ["Tab"]}},
        {"type": "type_text", "type_text": {"text": "hunter22\n"}},
    ]
    assert real.call("POST", f"/browsers/{sid}/computer/batch", json={"actions": batch}).status_code == 204
    # Signed in before the standby keeps the page's URL (a fixed second's pause assumed the form's navigation
    # took less on a loaded machine).
    wait_for_event(real, sid, "page_navigation", lambda d: d.get("url") == "https://plain.example.com/home")
    create(real, start_url="https://docs.example.com/")
    create(real, start_url="https://news.example.org/")  # a third: the limit is two
    assert real.call("GET", f"/browsers/{sid}").json()["sandbox"]["browser"] == "standby"
    shot = real.call("POST", f"/browsers/{sid}/computer/screenshot", json={})
    assert shot.status_code == 200
    assert real.call("GET", f"/browsers/{sid}").json()["sandbox"]["browser"] == "running"
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(first["cdp_ws_url"], timeout=20_000)
        try:
            page = browser.contexts[0].pages[0]
            assert page.url == "https://plain.example.com/home"
            page.reload()
            assert page.locator("h1").inner_text() == "Signed in"
        finally:
            browser.close()


def test_it_never_runs_more_browsers_than_the_limit_even_at_once(real, chromium_sandbox):
    with ThreadPoolExecutor(3) as pool:
        created = list(pool.map(lambda _: create(real, start_url="https://lab.example.com/"), range(3)))
    states = [real.call("GET", f"/browsers/{s['session_id']}").json()["sandbox"]["browser"] for s in created]
    assert sorted(states) == ["running", "running", "standby"]
    assert httpx.get(chromium_sandbox[0] + "/").json()["browsers"]["running"] == 2


def test_it_reports_a_crashed_page_and_recovers(real):
    session = create(real, start_url="https://lab.example.com/", telemetry={"enabled": True, "browser": ALL})
    sid = session["session_id"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
        try:
            page = browser.contexts[0].pages[0]
            with pytest.raises(Exception):  # noqa: B017 - the renderer dies under the navigation
                page.goto("chrome://crash", timeout=5_000)
        finally:
            browser.close()
    crash = wait_for_event(real, sid, "service_crashed")
    assert crash["data"] == {"service_name": "chromium", "phase": "running"}
    assert real.call("GET", f"/browsers/{sid}").json()["sandbox"]["browser"] == "crashed"
    assert real.call("POST", f"/browsers/{sid}/computer/screenshot", json={}).status_code == 200
    assert real.call("GET", f"/browsers/{sid}").json()["sandbox"]["browser"] == "running"
    assert wait_for_event(real, sid, "monitor_reconnected")["data"]["reconnect_duration_ms"] >= 0
    assert "monitor_disconnected" in [e["type"] for e in events_of(real, sid)]


def test_it_saves_downloads_in_the_session_downloads_directory(real):
    sid = create(real, start_url="https://lab.example.com/")["session_id"]
    assert (
        real.call("POST", f"/browsers/{sid}/computer/click_mouse", json={"x": 60, "y": 120}).status_code
        == 204
    )
    deadline = time.monotonic() + 10
    names = []
    while time.monotonic() < deadline and "report.csv" not in names:
        listing = real.call(
            "GET", f"/browsers/{sid}/fs/list_files", params={"path": "/home/kernel/Downloads"}
        )
        names = [item["name"] for item in listing.json()]
        time.sleep(0.2)
    assert "report.csv" in names
    body = real.call(
        "GET", f"/browsers/{sid}/fs/read_file", params={"path": "/home/kernel/Downloads/report.csv"}
    )
    assert body.content == b"day,orders\n2026-11-23,42\n"


def _live_socket(url: str):
    """A live view's websocket (its page's address with /ws), open."""
    return connect(url.replace("http", "ws", 1).replace("?", "/ws?", 1), open_timeout=20)


def _click_through(socket) -> bytes:
    """Takes one frame from a live view's socket and clicks the lab's button through it; the frame."""
    frame = socket.recv(timeout=20)
    for kind in ("down", "up"):
        socket.send(json.dumps({"type": kind, "x": 60, "y": 40, "button": "left"}))
    return frame


def test_it_serves_a_live_view_whose_read_only_link_cannot_drive(real):
    session = create(
        real,
        headless=False,
        start_url="https://lab.example.com/",
        telemetry={"enabled": True, "browser": ALL},
    )
    sid = session["session_id"]
    read_only = session["sandbox"]["read_only_live_view_url"]
    assert (
        "jwt=" in read_only
        and read_only.split("jwt=")[1] != session["browser_live_view_url"].split("jwt=")[1]
    )
    page = httpx.get(session["browser_live_view_url"])
    assert page.status_code == 200 and "<img id=screen" in page.text
    edited = read_only.replace("&readOnly=true", "")
    # Two read-only sockets click, and stay open while a driving socket clicks after them: the driving
    # click's console line is the barrier (a click through a read-only socket, had it been taken, would
    # have reached the page first).
    with (
        _live_socket(edited) as first,
        _live_socket(session["browser_live_view_url"] + "&readOnly=true") as second,
    ):
        assert _click_through(first)[:2] == b"\xff\xd8"  # a JPEG frame of the page
        assert _click_through(second)[:2] == b"\xff\xd8"
        with _live_socket(session["browser_live_view_url"]) as driving:
            _click_through(driving)
            wait_for_event(real, sid, "console_log", lambda d: d["text"] == "button clicked")
    kinds = [e["type"] for e in events_of(real, sid)]
    assert kinds.count("interaction_click") == 1 and kinds.count("console_log") == 1
    # The three sockets' disconnections are told once each, after they closed.
    deadline = time.monotonic() + 15
    while True:
        connections = [e["type"] for e in events_of(real, sid) if e["category"] == "connection"]
        if connections.count("live_view_disconnect") == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert connections.count("live_view_connect") == 3 and connections.count("live_view_disconnect") == 3


def test_it_records_a_replay_as_a_playable_mp4_of_the_right_duration(real, tmp_path):
    sid = create(real, start_url="https://lab.example.com/?color=ffa500")["session_id"]
    bad = real.call("POST", f"/browsers/{sid}/replays", json={"framerate": 30})
    assert bad.status_code == 400 and bad.json()["details"][0]["code"] == "framerate"
    asked = time.monotonic()
    started = real.call("POST", f"/browsers/{sid}/replays", json={"framerate": 10})
    assert started.status_code == 201, started.text
    replay_id = started.json()["replay_id"]
    assert real.call("POST", f"/browsers/{sid}/replays", json={}).json()["code"] == "replay_in_progress"
    real.call("POST", f"/browsers/{sid}/computer/scroll", json={"x": 100, "y": 100, "delta_y": 3})
    time.sleep(2)  # the length of the video under test (the scenario's input), not a wait for a state
    assert real.call("POST", f"/browsers/{sid}/replays/{replay_id}/stop", timeout=120).status_code == 204
    # No longer than this test saw it on (a fixed 3 s bound assumed the calls around the pause were quick).
    observed = time.monotonic() - asked
    listed = real.call("GET", f"/browsers/{sid}/replays").json()
    assert [r["replay_id"] for r in listed] == [replay_id] and listed[0]["finished_at"]
    assert real.call("DELETE", f"/browsers/{sid}", timeout=30).status_code == 204
    video = real.call("GET", f"/browsers/{sid}/replays/{replay_id}")  # still there after the delete
    assert video.status_code == 200 and video.headers["content-type"] == "video/mp4"
    path = tmp_path / "replay.mp4"
    path.write_bytes(video.content)
    probe = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-show_entries",
            "format=duration:stream=codec_name,pix_fmt,width,height",
            "-of",
            "json",
            str(path),
        ],
        capture_output=True,
        check=True,
        text=True,
    )
    info = json.loads(probe.stdout)
    stream = info["streams"][0]
    assert (stream["codec_name"], stream["pix_fmt"], stream["width"], stream["height"]) == (
        "h264",
        "yuv420p",
        640,
        480,
    )
    # Not longer than it ran, give or take what the encoding adds: the concat demuxer shows the last frame
    # once more, and the 10 fps output puts every frame on its 0.1 s grid (0.25 s more was seen under load).
    assert 1.8 <= float(info["format"]["duration"]) <= observed + 0.5, (info["format"], observed)
    page = httpx.get(listed[0]["replay_view_url"])
    assert page.status_code == 200 and "<video" in page.text
    assert httpx.get(listed[0]["replay_view_url"].replace("token=", "token=x")).status_code == 404


def as_png(source: Path, folder: Path, *, last: bool = False) -> bytes:
    """A JPEG frame, or the last frame of an MP4, as a PNG (ffmpeg); b"" for a file still being written."""
    seek = ["-sseof", "-0.3"] if last else []
    target = folder / "frame.png"
    subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            *seek,
            "-i",
            str(source),
            "-update",
            "1",
            "-frames:v",
            "1",
            "-y",
            str(target),
        ],
        check=True,
    )
    return target.read_bytes()


def is_blue(png: bytes) -> bool:
    if not png:
        return False
    red, _, blue = pixel(png, 300, 200)
    return blue > 200 and red < 60


def test_it_keeps_recording_a_session_that_moves_to_a_browser_of_its_own(real, tmp_path):
    """A CDP client moves the session to a browser process of its own (its page closes, a new one opens on
    the same URL): a recording under way follows it, so the video shows what the client did after."""
    sid = create(real, start_url="https://lab.example.com/?color=ff8000")["session_id"]
    started = real.call("POST", f"/browsers/{sid}/replays", json={"framerate": 5})
    assert started.status_code == 201, started.text
    replay_id = started.json()["replay_id"]
    session = real.call("GET", f"/browsers/{sid}").json()
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
        try:
            page = browser.contexts[0].pages[0]
            page.goto("https://lab.example.com/?color=0000ff")
            page.wait_for_function("getComputedStyle(document.body).backgroundColor === 'rgb(0, 0, 255)'")
            # The recording's newest frame turns blue: it followed the session to its new page. Without
            # that no frame comes after the move, and this waits in vain.
            folder = replay_directory(replay_id)
            deadline = time.monotonic() + 30
            while not is_blue(as_png(max(folder.glob("frame-*.jpg")), tmp_path)):
                assert time.monotonic() < deadline, "no blue frame recorded after the session moved"
                time.sleep(0.2)
        finally:
            browser.close()
    assert real.call("POST", f"/browsers/{sid}/replays/{replay_id}/stop", timeout=120).status_code == 204
    video = real.call("GET", f"/browsers/{sid}/replays/{replay_id}")
    assert video.status_code == 200
    (tmp_path / "replay.mp4").write_bytes(video.content)
    assert is_blue(as_png(tmp_path / "replay.mp4", tmp_path, last=True))  # not the orange before the move


def test_it_ends_a_replays_link_with_its_retention_and_refuses_a_token_that_is_not_ascii(real):
    """The ``replay_view_url`` page and its video answered for ever (while the sandbox ran): the API said
    404 past the 30 days' retention, the link did not. A token ``é`` was a 500 (compare_digest raises on
    non-ASCII text), not the 404 of a wrong one."""
    sid = create(real)["session_id"]
    replay_id = real.call("POST", f"/browsers/{sid}/replays", json={}).json()["replay_id"]
    assert real.call("POST", f"/browsers/{sid}/replays/{replay_id}/stop", timeout=120).status_code == 204
    link = real.call("GET", f"/browsers/{sid}/replays").json()[0]["replay_view_url"]
    page, query = link.split("?")
    assert httpx.get(f"{page}/video?{query}").status_code == 200
    for token in ("é", "☃" * 32):
        assert httpx.get(page, params={"token": token}).status_code == 404
        assert httpx.get(f"{page}/video", params={"token": token}).status_code == 404
    assert real.call("DELETE", f"/browsers/{sid}", timeout=30).status_code == 204
    real.advance(31 * 86400)
    assert real.call("GET", f"/browsers/{sid}/replays/{replay_id}").status_code == 404
    assert httpx.get(link).status_code == 404
    assert httpx.get(f"{page}/video?{query}").status_code == 404


def replay_directory(replay_id: str) -> Path:
    """Where the test sandbox (no state file: a temporary root) keeps a replay's video."""
    import tempfile

    found = list(Path(tempfile.gettempdir()).glob(f"sandbox-browsers-*/replays/{replay_id}"))
    assert len(found) == 1, found
    return found[0]


def test_it_deletes_a_replays_video_and_record_when_its_retention_ends(real):
    """Past the 30 days the API and the link said 404, but the video stayed on disk (and its record in
    memory and in the state file) for as long as the sandbox ran."""
    sid = create(real)["session_id"]
    replay_id = real.call("POST", f"/browsers/{sid}/replays", json={}).json()["replay_id"]
    assert real.call("POST", f"/browsers/{sid}/replays/{replay_id}/stop", timeout=120).status_code == 204
    directory = replay_directory(replay_id)
    assert (directory / "replay.mp4").stat().st_size > 0
    assert real.call("DELETE", f"/browsers/{sid}", timeout=30).status_code == 204
    real.advance(29 * 86400)  # within the retention: kept, whatever is read
    assert real.call("GET", f"/browsers/{sid}/replays").json()[0]["replay_id"] == replay_id
    assert real.call("GET", f"/browsers/{sid}/replays/{replay_id}").status_code == 200
    assert (directory / "replay.mp4").exists()
    real.advance(2 * 86400)
    assert real.call("GET", f"/browsers/{sid}/replays").json() == []
    assert not directory.exists()
    # The record went too: with the clock set back within the retention, the replay is not found.
    real.advance(-2 * 86400)
    assert real.call("GET", f"/browsers/{sid}/replays").json() == []
    assert real.call("GET", f"/browsers/{sid}/replays/{replay_id}").status_code == 404


def test_it_refuses_replays_of_a_simulated_session(tenant):
    session = tenant.call("POST", "/browsers", json={"headless": True}).json()
    response = tenant.call("POST", f"/browsers/{session['session_id']}/replays", json={})
    assert response.status_code == 409 and response.json()["code"] == "replays_unavailable"


def test_it_loads_a_profile_and_saves_the_session_back_into_it(real):
    profile = real.call("POST", "/profiles", json={"name": "signed-in"}).json()
    first = create(
        real,
        start_url="https://plain.example.com/login",
        profile={"id": profile["id"], "save_changes": True},
        telemetry={"enabled": True, "browser": {"page": {"enabled": True}}},
    )
    sid = first["session_id"]
    batch = [
        {"type": "press_key", "press_key": {"keys": ["Tab"]}},
        {"type": "type_text", "type_text": {"text": "jo@example.com"}},
        {"type": "press_key", "press_key": {"keys": ["Tab"]}},
        {"type": "type_text", "type_text": {"text": "hunter22\n"}},
    ]
    assert real.call("POST", f"/browsers/{sid}/computer/batch", json={"actions": batch}).status_code == 204
    wait_for_event(real, sid, "page_navigation", lambda d: d["url"] == "https://plain.example.com/home")
    assert real.call("DELETE", f"/browsers/{sid}", timeout=30).status_code == 204
    page = {"enabled": True, "browser": {"page": {"enabled": True}}}
    second = create(
        real, start_url="https://plain.example.com/home", profile={"id": profile["id"]}, telemetry=page
    )
    third = create(real, start_url="https://plain.example.com/home", telemetry=page)
    # Without the profile the site sends the session to its login page; with it, it stays on /home.
    wait_for_event(
        real, third["session_id"], "page_load", lambda d: d["url"] == "https://plain.example.com/login"
    )
    wait_for_event(
        real, second["session_id"], "page_load", lambda d: d["url"] == "https://plain.example.com/home"
    )
    urls = [e["data"]["url"] for e in events_of(real, second["session_id"]) if e["type"] == "page_navigation"]
    assert "https://plain.example.com/login" not in urls


def test_it_loads_the_session_extensions_into_its_browser(real):
    manifest = {
        "manifest_version": 3,
        "name": "Paint it",
        "version": "1.0",
        "content_scripts": [{"matches": ["<all_urls>"], "js": ["paint.js"], "run_at": "document_end"}],
    }
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("paint-it/manifest.json", json.dumps(manifest))
        zipped.writestr("paint-it/paint.js", "document.body.style.background = 'rgb(18, 52, 86)';")
    uploaded = real.call(
        "POST", "/extensions", files={"file": ("paint.zip", archive.getvalue())}, data={"name": "paint"}
    )
    assert uploaded.status_code == 201, uploaded.text
    sid = create(real, start_url="https://lab.example.com/", extensions=[{"name": "paint"}])["session_id"]
    deadline, colour = time.monotonic() + 10, None
    while time.monotonic() < deadline and colour != (18, 52, 86):
        shot = real.call("POST", f"/browsers/{sid}/computer/screenshot", json={})
        colour = pixel(shot.content, 400, 300)
        time.sleep(0.2)
    assert colour == (18, 52, 86)
    assert real.call("GET", "/extensions/paint/metadata").json()["last_used_at"]


def test_it_ends_a_live_view_whose_page_goes_away(real):
    session = create(real, headless=False, start_url="https://lab.example.com/")
    url = session["browser_live_view_url"].replace("http", "ws", 1).replace("?", "/ws?", 1)
    with connect(url, open_timeout=20) as socket:
        socket.recv(timeout=20)
        with sync_playwright() as playwright:  # a CDP client closes the page under the view
            browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
            browser.contexts[0].pages[0].close()
            browser.close()
        with pytest.raises(ConnectionClosed):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                socket.recv(timeout=10)
    with connect(url, open_timeout=20) as socket:  # a new view shows the moved page
        assert socket.recv(timeout=20)[:2] == b"\xff\xd8"


def x_sockets(pids: list[int]) -> list[Path]:
    """The socket files of the X displays these Xvfb processes serve (/tmp/.X11-unix/X<n>)."""
    inodes = socket_inodes(pids)
    found = set()
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes and fields[7].startswith("/tmp/.X11-unix/"):
            found.add(Path(fields[7]))
    return sorted(found)


def stamp(path: Path) -> tuple[int, int]:
    with contextlib.suppress(OSError):
        return path.stat().st_ino, path.stat().st_ctime_ns
    return (0, 0)


def playwright_dirs(tmp: Path) -> list[str]:
    """Playwright's profiles and artifacts: in the engine root's folder that is its driver's TMPDIR (and
    none in the TMPDIR itself)."""
    folders = [tmp, *tmp.glob("sandbox-browsers-*/playwright")]
    names = [path.name for folder in folders for path in folder.iterdir()]
    return [name for name in names if name.startswith("playwright")]


def test_it_leaves_no_chromium_process_or_temporary_directory_after_delete_or_stop():
    owner = "sandbox-test-lifecycle-" + str(time.monotonic_ns())
    with temporary_folder() as tmp:  # the sandbox's TMPDIR: what it and its Playwright leave is there
        url, process = start_sandbox(
            SANDBOX_ENGINE="chromium",
            SANDBOX_BROWSER_LINGER_SECONDS="0",
            SANDBOX_BROWSER_IDLE_SECONDS="8",  # a create and its use can be seconds apart under load
            SANDBOX_BROWSER_OWNER=owner,
            TMPDIR=str(tmp),
        )
        try:
            tenant = new_tenant(url)
            session = create(tenant, start_url="https://lab.example.com/")
            assert browser_processes(owner)
            assert tenant.call("DELETE", f"/browsers/{session['session_id']}", timeout=30).status_code == 204
            deadline = time.monotonic() + 10
            while browser_processes(owner) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert browser_processes(owner) == []
            # Its last session gone, the shared process's Playwright profile and artifacts go with it.
            deadline = time.monotonic() + 10
            while playwright_dirs(tmp) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert playwright_dirs(tmp) == []
            # Idle past SANDBOX_BROWSER_IDLE_SECONDS: standby, and the browser process is released.
            idle = create(tenant, start_url="https://lab.example.com/")
            deadline = time.monotonic() + 30
            while browser_processes(owner) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert browser_processes(owner) == []
            state = tenant.call("GET", f"/browsers/{idle['session_id']}").json()["sandbox"]["browser"]
            assert state == "standby"
            create(tenant, start_url="https://lab.example.com/")
            # A headful session (the shared headful process, its display) and a confined command: what
            # they put in the TMPDIR is seen at once (the session goes idle after a few seconds).
            headful = create(tenant, start_url="https://lab.example.com/", headless=False)
            servers = displays(owner)
            sockets = x_sockets(servers)
            made = {path.name.rpartition("-")[0] for path in tmp.iterdir()}
            assert servers and sockets
            files = {(path, *stamp(path)) for path in sockets}
            assert {"sandbox-browsers", "sandbox-etc"} <= made
            assert any(name.startswith("playwright_chromiumdev_profile") for name in playwright_dirs(tmp))
            ran = tenant.call(
                "POST", f"/browsers/{headful['session_id']}/process/exec", json={"command": "true"}
            )
            assert ran.status_code == 200 and ran.json()["exit_code"] == 0, ran.text
            assert "sandbox-fs" in {path.name.rpartition("-")[0] for path in tmp.iterdir()}
            with sync_playwright() as playwright:  # a session with a process of its own, connected
                playwright.chromium.connect_over_cdp(
                    create(tenant, start_url="https://docs.example.com/")["cdp_ws_url"], timeout=20_000
                )
                assert browser_processes(owner)
                stop_sandbox(process)  # SIGTERM: the sandbox's own shutdown
            deadline = time.monotonic() + 10
            while browser_processes(owner) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert browser_processes(owner) == []
            assert displays(owner) == []
            # Xvfb ended cleanly: its socket files are gone (another display may reuse a name since).
            assert [path for path, *made in files if path.exists() and stamp(path) == tuple(made)] == []
        finally:
            stop_sandbox(process)
        # Nothing of it is left: the browsers' root, the jail's /etc, the sessions' files, Playwright's
        # profiles and artifacts.
        assert sorted(path.name for path in tmp.iterdir()) == []


def test_it_leaves_no_chromium_process_when_the_sandbox_is_killed():
    owner = "sandbox-test-killed-" + str(time.monotonic_ns())
    url, process = start_sandbox(SANDBOX_ENGINE="chromium", SANDBOX_BROWSER_OWNER=owner)
    try:
        create(new_tenant(url), start_url="https://lab.example.com/")
        assert browser_processes(owner)
        process.kill()  # no shutdown at all: Playwright's driver ends with the sandbox and takes the browsers
        process.wait()
        deadline = time.monotonic() + 10
        while browser_processes(owner) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert browser_processes(owner) == []
    finally:
        stop_sandbox(process)


def test_it_keeps_the_demo_sessions_history_and_starts_them_in_standby(chromium_sandbox):
    demo = new_tenant(chromium_sandbox[0], demo=True)
    sessions = {s["name"]: s for s in demo.call("GET", "/browsers").json() if s.get("name")}
    smoke = sessions["checkout-smoke"]
    assert (smoke["sandbox"]["engine"], smoke["sandbox"]["browser"]) == ("chromium", "standby")
    history = demo.call("GET", f"/browsers/{smoke['session_id']}/telemetry/events", params={"since": "3h"})
    assert len(history.json()) == 20  # generated before the sandbox started, like the simulated engine's
    newest = demo.call(
        "GET", f"/browsers/{smoke['session_id']}/telemetry/events", params={"order": "desc", "limit": 1}
    ).json()[0]["event"]
    demo.advance(3600)  # an hour on the tenant's clock: the simulated engine would generate for it
    again = demo.call(
        "GET", f"/browsers/{smoke['session_id']}/telemetry/events", params={"order": "desc", "limit": 1}
    ).json()[0]["event"]
    assert again == newest


def test_it_opens_the_cdp_proxy_to_its_tenants_api_key_and_no_other(real, chromium_sandbox):
    # The sandbox keeps API keys as digests only: the key a client sends is recognised by its digest.
    session = create(real, start_url="https://lab.example.com/")
    bare = session["cdp_ws_url"].split("?")[0]
    outsider = new_tenant(chromium_sandbox[0])
    with sync_playwright() as playwright:
        with pytest.raises(Exception, match=r"403|Unexpected status|WebSocket error"):
            playwright.chromium.connect_over_cdp(
                bare, headers={"Authorization": f"Bearer {outsider.api_key}"}, timeout=10_000
            )
        browser = playwright.chromium.connect_over_cdp(
            bare, headers={"Authorization": f"Bearer {real.api_key}"}, timeout=20_000
        )
        try:
            assert [p.url for c in browser.contexts for p in c.pages] == ["https://lab.example.com/"]
        finally:
            browser.close()


def test_it_keeps_answering_screenshots_while_a_cdp_client_moves_the_session(real):
    # The first CDP client moves the session to a browser process of its own: the page it had is closed
    # and reopened. Screenshots asked meanwhile (the console's session page asks one as its live screen
    # connects) wait for the move or run again on the new page; none is a 503.
    session = create(real, start_url="https://lab.example.com/")
    sid = session["session_id"]
    connected = []

    def shots() -> list[int]:
        codes = []
        while not connected:
            codes.append(real.call("POST", f"/browsers/{sid}/computer/screenshot", json={}).status_code)
        for _ in range(3):
            codes.append(real.call("POST", f"/browsers/{sid}/computer/screenshot", json={}).status_code)
        return codes

    with ThreadPoolExecutor(3) as pool:
        asking = [pool.submit(shots) for _ in range(2)]
        with sync_playwright() as playwright:
            browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=30_000)
            try:
                assert browser.contexts[0].pages[0].url == "https://lab.example.com/"
            finally:
                connected.append(True)
                browser.close()
        codes = [code for future in asking for code in future.result()]
    assert set(codes) == {200}, codes
