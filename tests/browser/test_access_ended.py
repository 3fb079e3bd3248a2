"""Access ends in Chromium: what an operator's page does once they may no longer watch it.

The console re-checks every open event stream (console/live/guard.py; STREAM_RECHECK_SECONDS is set low for
this console) and polls learn it from their answers. After the operator's membership is removed or their
sessions flushed, the telemetry pane, the live screen, the sessions list and the overview say "Access ended"
(with a link to sign in that comes back to the page) or that updates stopped, and then stay quiet: the
requests the page makes after the end are counted, over several reconnect and poll intervals (timers run
on Playwright's clock where the page polls).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DEMO_PASSWORD, ROOT, running_console
from tests.sandbox_fixtures import TEST_DEMO_KEY

pytestmark = pytest.mark.browser

TELEMETRY = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}
QUICK = {"STREAM_RECHECK_SECONDS": "0.3", "LIVE_KEEPALIVE_SECONDS": "1"}
ACCESS_ENDED = "Access ended — sign in again"
SHOTS = Path(os.environ.get("ACCESS_ENDED_SHOTS", "/tmp/access-ended"))


@dataclass
class Console:
    """A console of this module's own (its database is changed under the pages)."""

    url: str
    folder: Path
    sandbox_url: str

    def shell(self, code: str) -> None:
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{self.folder / 'console.sqlite3'}",
            "SANDBOX_URL": self.sandbox_url,
            "SANDBOX_DEMO_KEY": TEST_DEMO_KEY,
        }
        command = [sys.executable, "manage.py", "shell", "-v0", "-c", code]
        subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)

    def remove_membership(self, username: str) -> None:
        self.shell(
            "from console.accounts.models import Membership\n"
            f"mine = Membership.objects.filter(user__username={username!r}, org__slug='demo')\n"
            "assert mine.delete()[0] == 1"
        )

    def flush_sessions(self, username: str) -> None:
        """What "sign out everywhere" does: every Django session of the user is deleted."""
        self.shell(
            "from django.contrib.auth import get_user_model\n"
            "from django.contrib.sessions.models import Session\n"
            f"user = get_user_model().objects.get(username={username!r})\n"
            "gone = [s.pk for s in Session.objects.all()\n"
            "        if str(s.get_decoded().get('_auth_user_id')) == str(user.pk)]\n"
            "assert gone\n"
            "Session.objects.filter(pk__in=gone).delete()"
        )

    def restore(self) -> None:
        self.shell(
            "from django.contrib.auth import get_user_model\n"
            "from console.accounts.models import Membership, Organization\n"
            "Membership.objects.get_or_create(user=get_user_model().objects.get(username='operator'),"
            " org=Organization.objects.get(slug='demo'), defaults={'role': 'operator'})"
        )


@pytest.fixture(scope="module")
def quick_console(sandbox_url, tmp_path_factory):
    folder = tmp_path_factory.mktemp("access-ended")
    with running_console(sandbox_url, folder, **QUICK) as url:
        yield Console(url, folder, sandbox_url)


@pytest.fixture
def console(quick_console):
    yield quick_console
    quick_console.restore()


def log_in(page, console: Console, username: str = "operator", then: str = "/o/demo/") -> None:
    page.get_by_label("Username or e-mail").fill(username)
    page.get_by_label("Password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{console.url}{then}")


def sign_in(page, console: Console) -> None:
    page.goto(f"{console.url}/login/")
    log_in(page, console)


def new_session(sandbox_url: str) -> str:
    body = {"name": f"ended-{uuid.uuid4().hex[:6]}", "timeout_seconds": 3600, "telemetry": TELEMETRY}
    response = httpx.post(
        f"{sandbox_url}/browsers", json=body, headers={"Authorization": f"Bearer {TEST_DEMO_KEY}"}, timeout=30
    )
    response.raise_for_status()
    return response.json()["session_id"]


class Watch:
    """The requests a page makes whose path contains ``part``, and what went wrong on it."""

    def __init__(self, page, part: str):
        self.part = part
        self.requests: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda request: part in request.url and self.requests.append(request.url))
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("console", self.console)

    def console(self, message) -> None:
        # Chromium's own line for each answer in error (the 404 a poll gets) is not the page's error.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.errors.append(message.text)


def assert_sign_in_link(link, console: Console, page_path: str) -> None:
    """The link leads to the login page, back to ``page_path`` after it."""
    expect(link).to_have_text("sign in again")
    href = urlsplit(link.get_attribute("href"))
    assert href.path == "/login/"
    assert parse_qs(href.query) == {"next": [page_path]}


def assert_no_raw_error(page) -> None:
    text = page.locator("main").inner_text()
    raw_errors = ("Traceback", "Page not found", "There is nothing here", "Forbidden", "HTTP 4", "HTTP 5")
    for raw in raw_errors:
        assert raw not in text, raw
    expect(page.locator("main form input[name=password]")).to_have_count(0)


def shoot(page, name: str, what: str | None = None) -> None:
    """Screenshots of ``what`` (a selector; the top of the page without one) at a desktop's and a phone's
    width, for a person to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1440, 400):
        page.set_viewport_size({"width": width, "height": 900})
        path = str(SHOTS / f"{name}-{width}.png")
        if what:
            page.locator(what).scroll_into_view_if_needed()
            page.locator(what).screenshot(path=path, animations="disabled")
        else:
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=path, animations="disabled")
        assert_no_raw_error(page)  # a narrower page reveals lazy panes: they ask nothing once access ended


# The telemetry pane ---------------------------------------------------------------------------------------


def open_telemetry(page, console: Console, sid: str):
    page.goto(f"{console.url}/o/demo/browsers/{sid}/")
    chip = page.locator("#telemetry-pane .live-indicator .live-status").first
    expect(chip).to_have_attribute("data-state", "live", timeout=15_000)
    return chip


def assert_telemetry_ended(page, console: Console, sid: str, chip, streams: Watch) -> None:
    pane = page.locator("#telemetry-pane")
    ended = pane.locator("[data-telemetry-ended]")
    expect(ended).to_have_text(ACCESS_ENDED, timeout=15_000)
    assert_sign_in_link(ended.get_by_role("link"), console, f"/o/demo/browsers/{sid}/")
    expect(chip).to_have_attribute("data-state", "ended")
    expect(chip).to_have_text("Ended")
    indicator = pane.locator(".live-indicator")
    expect(indicator).to_contain_text(ACCESS_ENDED)
    assert_sign_in_link(indicator.get_by_role("link"), console, f"/o/demo/browsers/{sid}/")
    assert pane.get_attribute("sse-connect") is None  # htmx's SSE extension has nothing to reopen
    expect(page.get_by_role("button", name="❚❚ Pause")).to_be_disabled()
    # No reconnecting: over many re-check intervals and the SSE extension's first retries (0.5, 1, 2 s).
    ended_at = len(streams.requests)
    page.wait_for_timeout(4_000)
    assert streams.requests[ended_at:] == []
    expect(chip).to_have_attribute("data-state", "ended")
    assert_no_raw_error(page)
    assert streams.errors == []


def test_it_ends_the_telemetry_pane_of_a_removed_member_and_stops_reconnecting(console, browser_page):
    page = browser_page
    streams = Watch(page, "/telemetry/stream/")
    sid = new_session(console.sandbox_url)
    sign_in(page, console)
    chip = open_telemetry(page, console, sid)
    assert len(streams.requests) == 1

    console.remove_membership("operator")
    assert_telemetry_ended(page, console, sid, chip, streams)
    assert len(streams.requests) == 1
    shoot(page, "telemetry", "#pane-telemetry")


def test_it_ends_the_telemetry_pane_of_flushed_sessions_and_signs_in_back_to_the_page(console, browser_page):
    page = browser_page
    streams = Watch(page, "/telemetry/stream/")
    sid = new_session(console.sandbox_url)
    sign_in(page, console)
    chip = open_telemetry(page, console, sid)

    console.flush_sessions("operator")
    assert_telemetry_ended(page, console, sid, chip, streams)

    page.locator("[data-telemetry-ended]").get_by_role("link", name="sign in again").click()
    expect(page).to_have_url(f"{console.url}/login/?next=%2Fo%2Fdemo%2Fbrowsers%2F{sid}%2F")
    log_in(page, console, then=f"/o/demo/browsers/{sid}/")
    expect(page.locator("#telemetry-pane .live-indicator [data-state='live']")).to_be_visible(timeout=15_000)


@pytest.fixture(scope="module")
def unguarded_console(sandbox_url, tmp_path_factory):
    """A console whose streams are not re-checked in the time of a test: only a reconnection learns."""
    folder = tmp_path_factory.mktemp("access-ended-unguarded")
    with running_console(sandbox_url, folder, STREAM_RECHECK_SECONDS="3600") as url:
        yield Console(url, folder, sandbox_url)


def test_it_stops_a_pane_whose_reconnection_is_refused_once_signed_out(unguarded_console, browser_page):
    # The laptop slept through "sign out everywhere": the stream dropped without its last words, and the
    # EventSource, reopened, gets the login page. The pane asks once why, then stops and says so.
    console, page = unguarded_console, browser_page
    streams = Watch(page, "/telemetry/stream/")
    sid = new_session(console.sandbox_url)
    sign_in(page, console)
    chip = open_telemetry(page, console, sid)
    console.flush_sessions("operator")
    expect(chip).to_have_attribute("data-state", "live")  # the stream goes on: nothing re-checked it
    page.evaluate("window.stop()")  # the connection drops (here: the page stops its loads)

    pane = page.locator("#telemetry-pane")
    ended = pane.locator("[data-telemetry-ended]")
    expect(ended).to_have_text(ACCESS_ENDED, timeout=15_000)
    assert_sign_in_link(ended.get_by_role("link"), console, f"/o/demo/browsers/{sid}/")
    expect(chip).to_have_attribute("data-state", "ended")
    expect(pane.locator(".live-indicator")).to_contain_text(ACCESS_ENDED)
    assert pane.get_attribute("sse-connect") is None
    ended_at = len(streams.requests)
    page.wait_for_timeout(5_000)  # the SSE extension's retries would come at 0.5, 1, 2 and 4 s
    assert streams.requests[ended_at:] == []
    # The first stream; then the request that asked why (and, on a slow machine, the SSE extension's first
    # retry, made before the answer came), each redirected to the login page.
    first, *after = streams.requests
    assert 2 <= len(after) <= 4, after
    assert {urlsplit(url).path for url in after} == {urlsplit(first).path, "/login/"}
    assert_no_raw_error(page)


# The sessions list and the overview (polls) ---------------------------------------------------------------


def list_polls(page) -> list[str]:
    polls: list[str] = []
    page.on(
        "request",
        lambda request: request.headers.get("hx-target") == "browsers-table" and polls.append(request.url),
    )
    return polls


@pytest.mark.parametrize("revoke", ["flush_sessions", "remove_membership"])
def test_it_stops_the_live_sessions_list_once_access_ended(console, browser_page, revoke):
    page = browser_page
    errors = Watch(page, "/o/demo/").errors
    polls = list_polls(page)
    page.clock.install()
    sign_in(page, console)
    page.goto(f"{console.url}/o/demo/browsers/?status=active")
    label = page.locator("#browsers-table-live [data-live-label]")
    expect(label).to_contain_text("Live · updated")
    page.clock.run_for(6_000)
    assert polls, "the list did not poll"

    getattr(console, revoke)("operator")
    page.clock.run_for(6_000)  # the next poll: redirected to the login page, or 404 for a non-member
    expect(label).to_have_attribute("data-state", "ended")
    if revoke == "flush_sessions":
        expect(label).to_contain_text("Access ended — sign in again (this list no longer updates)")
        assert_sign_in_link(label.get_by_role("link"), console, "/o/demo/browsers/?status=active")
    else:
        expect(label).to_contain_text("Not updating: this list answered “not found”")
        reload = label.get_by_role("link", name="reload the page")
        expect(reload).to_have_attribute("href", "/o/demo/browsers/?status=active")
    expect(page.locator("#browsers-table-live [data-live-toggle]")).to_be_hidden()
    ended_at = len(polls)
    page.clock.run_for(60_000)  # a dozen poll intervals
    assert polls[ended_at:] == []
    expect(page.locator("#browsers-table")).to_be_visible()  # what it showed stays
    assert_no_raw_error(page)
    assert errors == []
    shoot(page, f"sessions-list-{revoke}")


def card_polls(page) -> list[str]:
    polls: list[str] = []
    page.on("request", lambda request: "?part=card-" in request.url and polls.append(request.url))
    return polls


@pytest.mark.parametrize("revoke", ["flush_sessions", "remove_membership"])
def test_it_stops_the_overviews_figures_once_access_ended(console, browser_page, revoke):
    page = browser_page
    errors = Watch(page, "/o/demo/").errors
    polls = card_polls(page)
    page.clock.install()
    sign_in(page, console)
    expect(page.locator('[data-figure="running-sessions"]')).to_be_visible()
    figure = page.locator('[data-figure="running-sessions"]').inner_text()
    loaded = len(polls)

    getattr(console, revoke)("operator")
    page.clock.run_for(11_000)  # one poll of every card
    flash = page.locator("#flash")
    if revoke == "flush_sessions":
        expect(flash).to_contain_text("Access ended — sign in again")
        assert_sign_in_link(flash.get_by_role("link"), console, "/o/demo/")
    else:
        expect(flash).to_contain_text("Updates stopped")
        expect(flash.get_by_role("link", name="Reload the page")).to_have_attribute("href", "/o/demo/")
    expect(flash.locator("p")).to_have_count(1)
    expect(page.locator("[data-poll]")).to_have_count(0)
    polled = len(polls)
    assert polled > loaded
    page.clock.run_for(60_000)  # six poll intervals
    assert polls[polled:] == []
    # The figures stay as they were; no login form, no error page swapped into a card.
    expect(page.locator('[data-figure="running-sessions"]')).to_have_text(figure)
    assert_no_raw_error(page)
    assert errors == []
    if revoke == "flush_sessions":
        shoot(page, "overview")


# The live screen (real browsers) ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def screen_console(chromium_sandbox, tmp_path_factory):
    url, _ = chromium_sandbox
    folder = tmp_path_factory.mktemp("access-ended-screen")
    with running_console(url, folder, **QUICK) as console_url:
        console = Console(console_url, folder, url)
        yield console


WALL_TAG = uuid.uuid4().hex[:8]  # this module's sessions on the wall, and no other


@pytest.fixture
def real_session(screen_console):
    body = {
        "name": f"ended-{uuid.uuid4().hex[:6]}",
        "tags": {"wall": WALL_TAG},
        "headless": True,
        "viewport": {"width": 640, "height": 480},
        "start_url": "https://lab.example.com/?color=1e90ff",
        "timeout_seconds": 600,
    }
    headers = {"Authorization": f"Bearer {TEST_DEMO_KEY}"}
    response = httpx.post(f"{screen_console.sandbox_url}/browsers", json=body, headers=headers, timeout=60)
    response.raise_for_status()
    sid = response.json()["session_id"]
    yield sid
    httpx.delete(f"{screen_console.sandbox_url}/browsers/{sid}", headers=headers, timeout=30)
    screen_console.restore()


@pytest.mark.chromium
def test_it_ends_the_live_screen_of_a_removed_member_and_takes_no_input(
    screen_console, real_session, browser_page
):
    console, sid, page = screen_console, real_session, browser_page
    streams = Watch(page, "/screen/stream/")
    inputs = Watch(page, "/screen/input/")
    sign_in(page, console)
    page.goto(f"{console.url}/o/demo/browsers/{sid}/")
    pane = page.locator("#screen-pane[data-mode='relay']")
    expect(pane).to_be_visible(timeout=20_000)
    pane.get_by_role("button", name="Take control").click()
    pane = page.locator("#screen-pane[data-control-token]")
    chip = pane.locator("[data-screen-state]")
    expect(chip).to_have_attribute("data-state", "live", timeout=30_000)
    expect(chip).to_have_text("Live")
    expect(pane).to_have_attribute("data-frames", re.compile(r"[1-9]"), timeout=30_000)
    opened = len(streams.requests)

    console.remove_membership("operator")
    note = page.locator("#screen-pane [data-screen-note]")
    expect(note).to_have_text("Access ended — sign in again.", timeout=15_000)
    assert_sign_in_link(note.get_by_role("link"), console, f"/o/demo/browsers/{sid}/")
    chip = page.locator("#screen-pane [data-screen-state]")
    expect(chip).to_have_attribute("data-state", "ended")
    expect(chip).to_have_text("Ended")
    expect(chip).to_have_attribute("title", ACCESS_ENDED)
    expect(page.locator("#screen-pane [data-screen-stats]")).to_have_text("no frames")
    # Control went with access: no form to release it, no "you control this browser".
    expect(page.locator("#screen-pane").get_by_role("button", name="Release control")).to_be_hidden()
    stage = page.locator("#screen-pane [data-screen-stage]")
    expect(stage).not_to_have_class(re.compile("screen__stage--control"))
    # The screen takes no input any more: a click on it sends nothing.
    page.locator("#screen-pane [data-screen-image]").click(position={"x": 60, "y": 40})
    # No reconnecting, no more frames.
    frames = page.locator("#screen-pane").get_attribute("data-frames")
    page.wait_for_timeout(3_000)
    assert len(streams.requests) == opened
    assert inputs.requests == []
    expect(page.locator("#screen-pane")).to_have_attribute("data-frames", frames)
    assert_no_raw_error(page)
    assert streams.errors == []
    shoot(page, "screen", "#pane-screen")


@pytest.mark.chromium
def test_it_ends_the_wall_of_a_removed_member_and_says_so_once(screen_console, real_session, browser_page):
    console, sid, page = screen_console, real_session, browser_page
    streams = Watch(page, "/wall/stream/")
    badges = Watch(page, "/wall/badges")
    sign_in(page, console)
    page.goto(f"{console.url}/o/demo/browsers/wall/?tag=wall:{WALL_TAG}")
    tile = page.locator(f"[data-tile='{sid}']")
    expect(tile).to_have_attribute("data-frames", re.compile(r"[1-9]"), timeout=30_000)
    state = tile.locator("[data-tile-state]")
    expect(state).to_have_attribute("data-state", "live")

    console.remove_membership("operator")
    expect(state).to_have_attribute("data-state", "ended", timeout=15_000)
    expect(state).to_have_text("Ended")
    expect(state).to_have_attribute("title", ACCESS_ENDED)
    flash = page.locator("#flash")
    expect(flash).to_contain_text(ACCESS_ENDED)
    expect(flash.locator("p")).to_have_count(1)
    assert_sign_in_link(flash.get_by_role("link"), console, f"/o/demo/browsers/wall/?tag=wall:{WALL_TAG}")
    expect(page.locator("[data-poll]")).to_have_count(0)  # the error badges stop polling
    opened, polled = len(streams.requests), len(badges.requests)
    page.wait_for_timeout(3_000)
    assert (len(streams.requests), len(badges.requests)) == (opened, polled)
    assert streams.errors == []
