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
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Team, log_in_with_the_form, running_console, settle
from tests.sandbox_fixtures import new_tenant

pytestmark = pytest.mark.browser

TELEMETRY = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}
QUICK = {"STREAM_RECHECK_SECONDS": "0.3", "LIVE_KEEPALIVE_SECONDS": "1"}
ACCESS_ENDED = "Access ended — sign in again"
SHOTS = Path(os.environ.get("ACCESS_ENDED_SHOTS", "/tmp/access-ended"))
# Every EventSource the page opens, kept where the test can read its state: one that is CLOSED never
# reconnects by itself (an open or connecting one would, on the browser's own timer).
EVENT_SOURCES = """
(() => {
  const Native = window.EventSource;
  window.__eventSources = [];
  window.EventSource = function (url, options) {
    const source = new Native(url, options);
    window.__eventSources.push(source);
    return source;
  };
  window.EventSource.prototype = Native.prototype;
  Object.assign(window.EventSource, {CONNECTING: 0, OPEN: 1, CLOSED: 2});
})();
"""


@pytest.fixture(scope="module")
def quick_console(sandbox_url, tmp_path_factory):
    with running_console(sandbox_url, tmp_path_factory.mktemp("access-ended"), **QUICK) as console:
        yield console


@pytest.fixture
def team(quick_console) -> Team:
    return quick_console.team(new_tenant(quick_console.sandbox_url))


def sign_in(page, team: Team) -> None:
    """The operator's browser, signed in; its EventSources watched (EVENT_SOURCES), its timers on
    Playwright's clock (time flows, and the test can run it ahead to fire what is due)."""
    page.add_init_script(EVENT_SOURCES)
    page.clock.install()
    team.log_in(page, "operator")


def new_session(team: Team) -> str:
    body = {"name": f"ended-{uuid.uuid4().hex[:6]}", "timeout_seconds": 3600, "telemetry": TELEMETRY}
    return team.call("POST", "/browsers", body, timeout=30)["session_id"]


def open_event_sources(page, part: str) -> int:
    return page.evaluate(
        "part => window.__eventSources.filter(s => s.url.includes(part) && s.readyState !== 2).length", part
    )


def assert_quiet_after_the_end(page, watch: Watch, *others: Watch) -> None:
    """Nothing reconnects or polls once access ended: the page's streams are closed (so the browser cannot
    reopen them by itself), and running its clock a minute ahead (every retry and poll timer due in that
    time fires) sends no request of ``watch``'s or ``others``' kinds."""
    watches = (watch, *others)
    assert open_event_sources(page, watch.part) == 0
    settle(page)
    before = [len(w.requests) for w in watches]
    page.clock.run_for(60_000)
    settle(page)
    assert [len(w.requests) for w in watches] == before, [
        w.requests[n:] for w, n in zip(watches, before, strict=True)
    ]
    assert open_event_sources(page, watch.part) == 0


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


def assert_sign_in_link(link, page_path: str) -> None:
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


def open_telemetry(page, team: Team, sid: str):
    page.goto(team.url(f"browsers/{sid}/"))
    chip = page.locator("#telemetry-pane .live-indicator .live-status").first
    expect(chip).to_have_attribute("data-state", "live", timeout=15_000)
    return chip


def assert_telemetry_ended(page, team: Team, sid: str, chip, streams: Watch) -> None:
    pane = page.locator("#telemetry-pane")
    ended = pane.locator("[data-telemetry-ended]")
    expect(ended).to_have_text(ACCESS_ENDED, timeout=15_000)
    assert_sign_in_link(ended.get_by_role("link"), team.path(f"browsers/{sid}/"))
    expect(chip).to_have_attribute("data-state", "ended")
    expect(chip).to_have_text("Ended")
    indicator = pane.locator(".live-indicator")
    expect(indicator).to_contain_text(ACCESS_ENDED)
    assert_sign_in_link(indicator.get_by_role("link"), team.path(f"browsers/{sid}/"))
    assert pane.get_attribute("sse-connect") is None  # htmx's SSE extension has nothing to reopen
    expect(page.get_by_role("button", name="❚❚ Pause")).to_be_disabled()
    # No reconnecting: not by the browser (the stream is closed), nor by the SSE extension's retries.
    assert_quiet_after_the_end(page, streams)
    expect(chip).to_have_attribute("data-state", "ended")
    assert_no_raw_error(page)
    assert streams.errors == []


def test_it_ends_the_telemetry_pane_of_a_removed_member_and_stops_reconnecting(team, browser_page):
    page = browser_page
    streams = Watch(page, "/telemetry/stream/")
    sid = new_session(team)
    sign_in(page, team)
    chip = open_telemetry(page, team, sid)
    assert len(streams.requests) == 1

    team.console.remove_membership(team.user("operator"), team.slug)
    assert_telemetry_ended(page, team, sid, chip, streams)
    assert len(streams.requests) == 1
    shoot(page, "telemetry", "#pane-telemetry")


def test_it_ends_the_telemetry_pane_of_flushed_sessions_and_signs_in_back_to_the_page(team, browser_page):
    page = browser_page
    streams = Watch(page, "/telemetry/stream/")
    sid = new_session(team)
    sign_in(page, team)
    chip = open_telemetry(page, team, sid)

    team.console.flush_sessions(team.user("operator"))
    assert_telemetry_ended(page, team, sid, chip, streams)

    page.locator("[data-telemetry-ended]").get_by_role("link", name="sign in again").click()
    expect(page).to_have_url(
        f"{team.console.url}/login/?next={team.path(f'browsers/{sid}/').replace('/', '%2F')}"
    )
    log_in_with_the_form(page, team.console.url, team.user("operator"), then=team.path(f"browsers/{sid}/"))
    expect(page.locator("#telemetry-pane .live-indicator [data-state='live']")).to_be_visible(timeout=15_000)


@pytest.fixture(scope="module")
def unguarded_console(sandbox_url, tmp_path_factory):
    """A console whose streams are not re-checked in the time of a test: only a reconnection learns."""
    folder = tmp_path_factory.mktemp("access-ended-unguarded")
    with running_console(sandbox_url, folder, STREAM_RECHECK_SECONDS="3600") as console:
        yield console


def test_it_stops_a_pane_whose_reconnection_is_refused_once_signed_out(unguarded_console, browser_page):
    # The laptop slept through "sign out everywhere": the stream dropped without its last words, and the
    # EventSource, reopened, gets the login page. The pane asks once why, then stops and says so.
    team, page = unguarded_console.team(new_tenant(unguarded_console.sandbox_url)), browser_page
    streams = Watch(page, "/telemetry/stream/")
    sid = new_session(team)
    sign_in(page, team)
    chip = open_telemetry(page, team, sid)
    team.console.flush_sessions(team.user("operator"))
    expect(chip).to_have_attribute("data-state", "live")  # the stream goes on: nothing re-checked it
    page.evaluate("window.stop()")  # the connection drops (here: the page stops its loads)

    pane = page.locator("#telemetry-pane")
    ended = pane.locator("[data-telemetry-ended]")
    expect(ended).to_have_text(ACCESS_ENDED, timeout=15_000)
    assert_sign_in_link(ended.get_by_role("link"), team.path(f"browsers/{sid}/"))
    expect(chip).to_have_attribute("data-state", "ended")
    expect(pane.locator(".live-indicator")).to_contain_text(ACCESS_ENDED)
    assert pane.get_attribute("sse-connect") is None
    # The SSE extension's retries would come at 0.5, 1, 2 and 4 s: none does.
    assert_quiet_after_the_end(page, streams)
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


def revoke(team: Team, how: str) -> None:
    if how == "flush_sessions":
        team.console.flush_sessions(team.user("operator"))
    else:
        team.console.remove_membership(team.user("operator"), team.slug)


@pytest.mark.parametrize("how", ["flush_sessions", "remove_membership"])
def test_it_stops_the_live_sessions_list_once_access_ended(team, browser_page, how):
    page = browser_page
    errors = Watch(page, team.path()).errors
    polls = list_polls(page)
    sign_in(page, team)
    page.goto(team.url("browsers/?status=active"))
    label = page.locator("#browsers-table-live [data-live-label]")
    expect(label).to_contain_text("Live · updated")
    page.clock.run_for(6_000)
    settle(page)
    assert polls, "the list did not poll"

    revoke(team, how)
    page.clock.run_for(6_000)  # the next poll: redirected to the login page, or 404 for a non-member
    expect(label).to_have_attribute("data-state", "ended")
    if how == "flush_sessions":
        expect(label).to_contain_text("Access ended — sign in again (this list no longer updates)")
        assert_sign_in_link(label.get_by_role("link"), team.path("browsers/?status=active"))
    else:
        expect(label).to_contain_text("Not updating: this list answered “not found”")
        reload = label.get_by_role("link", name="reload the page")
        expect(reload).to_have_attribute("href", team.path("browsers/?status=active"))
    expect(page.locator("#browsers-table-live [data-live-toggle]")).to_be_hidden()
    settle(page)
    ended_at = len(polls)
    page.clock.run_for(60_000)  # a dozen poll intervals
    settle(page)
    assert polls[ended_at:] == []
    expect(page.locator("#browsers-table")).to_be_visible()  # what it showed stays
    assert_no_raw_error(page)
    assert errors == []
    shoot(page, f"sessions-list-{how}")


def card_polls(page) -> list[str]:
    polls: list[str] = []
    page.on("request", lambda request: "?part=card-" in request.url and polls.append(request.url))
    return polls


@pytest.mark.parametrize("how", ["flush_sessions", "remove_membership"])
def test_it_stops_the_overviews_figures_once_access_ended(team, browser_page, how):
    page = browser_page
    errors = Watch(page, team.path()).errors
    polls = card_polls(page)
    sign_in(page, team)
    page.goto(team.url())
    expect(page.locator('[data-figure="running-sessions"]')).to_be_visible()
    figure = page.locator('[data-figure="running-sessions"]').inner_text()
    settle(page)
    loaded = len(polls)

    revoke(team, how)
    page.clock.run_for(11_000)  # one poll of every card
    flash = page.locator("#flash")
    if how == "flush_sessions":
        expect(flash).to_contain_text("Access ended — sign in again")
        assert_sign_in_link(flash.get_by_role("link"), team.path())
    else:
        expect(flash).to_contain_text("Updates stopped")
        expect(flash.get_by_role("link", name="Reload the page")).to_have_attribute("href", team.path())
    expect(flash.locator("p")).to_have_count(1)
    expect(page.locator("[data-poll]")).to_have_count(0)
    settle(page)
    polled = len(polls)
    assert polled > loaded
    page.clock.run_for(60_000)  # six poll intervals
    settle(page)
    assert polls[polled:] == []
    # The figures stay as they were; no login form, no error page swapped into a card.
    expect(page.locator('[data-figure="running-sessions"]')).to_have_text(figure)
    assert_no_raw_error(page)
    assert errors == []
    if how == "flush_sessions":
        shoot(page, "overview")


# The live screen (real browsers) ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def screen_console(chromium_sandbox, tmp_path_factory):
    folder = tmp_path_factory.mktemp("access-ended-screen")
    with running_console(chromium_sandbox[0], folder, **QUICK) as console:
        yield console


@pytest.fixture
def real_team(screen_console) -> Team:
    return screen_console.team(new_tenant(screen_console.sandbox_url))


@pytest.fixture
def real_session(real_team):
    body = {
        "name": f"ended-{uuid.uuid4().hex[:6]}",
        "headless": True,
        "viewport": {"width": 640, "height": 480},
        "start_url": "https://lab.example.com/?color=1e90ff",
        "timeout_seconds": 600,
    }
    sid = real_team.call("POST", "/browsers", body, timeout=60)["session_id"]
    yield sid
    real_team.tenant.call("DELETE", f"/browsers/{sid}", timeout=30)


@pytest.mark.chromium
def test_it_ends_the_live_screen_of_a_removed_member_and_takes_no_input(
    real_team, real_session, browser_page
):
    team, sid, page = real_team, real_session, browser_page
    streams = Watch(page, "/screen/stream/")
    inputs = Watch(page, "/screen/input/")
    sign_in(page, team)
    page.goto(team.url(f"browsers/{sid}/"))
    pane = page.locator("#screen-pane[data-mode='relay']")
    expect(pane).to_be_visible(timeout=20_000)
    pane.get_by_role("button", name="Take control").click()
    pane = page.locator("#screen-pane[data-control-token]")
    chip = pane.locator("[data-screen-state]")
    expect(chip).to_have_attribute("data-state", "live", timeout=30_000)
    expect(chip).to_have_text("Live")
    expect(pane).to_have_attribute("data-frames", re.compile(r"[1-9]"), timeout=30_000)
    opened = len(streams.requests)

    team.console.remove_membership(team.user("operator"), team.slug)
    note = page.locator("#screen-pane [data-screen-note]")
    expect(note).to_have_text("Access ended — sign in again.", timeout=15_000)
    assert_sign_in_link(note.get_by_role("link"), team.path(f"browsers/{sid}/"))
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
    # No reconnecting, no more frames (the stream is closed: none can come).
    frames = page.locator("#screen-pane").get_attribute("data-frames")
    assert_quiet_after_the_end(page, streams, inputs)
    assert len(streams.requests) == opened
    assert inputs.requests == []
    expect(page.locator("#screen-pane")).to_have_attribute("data-frames", frames)
    assert_no_raw_error(page)
    assert streams.errors == []
    shoot(page, "screen", "#pane-screen")


@pytest.mark.chromium
def test_it_ends_the_wall_of_a_removed_member_and_says_so_once(real_team, real_session, browser_page):
    team, sid, page = real_team, real_session, browser_page
    streams = Watch(page, "/wall/stream/")
    badges = Watch(page, "/wall/badges")
    sign_in(page, team)
    page.goto(team.url("browsers/wall/"))
    tile = page.locator(f"[data-tile='{sid}']")
    expect(tile).to_have_attribute("data-frames", re.compile(r"[1-9]"), timeout=30_000)
    state = tile.locator("[data-tile-state]")
    expect(state).to_have_attribute("data-state", "live")

    team.console.remove_membership(team.user("operator"), team.slug)
    expect(state).to_have_attribute("data-state", "ended", timeout=15_000)
    expect(state).to_have_text("Ended")
    expect(state).to_have_attribute("title", ACCESS_ENDED)
    flash = page.locator("#flash")
    expect(flash).to_contain_text(ACCESS_ENDED)
    expect(flash.locator("p")).to_have_count(1)
    assert_sign_in_link(flash.get_by_role("link"), team.path("browsers/wall/"))
    expect(page.locator("[data-poll]")).to_have_count(0)  # the error badges stop polling
    assert_quiet_after_the_end(page, streams, badges)
    assert streams.errors == []
