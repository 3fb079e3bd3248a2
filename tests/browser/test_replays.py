"""In Chromium, against a console whose sandbox runs real browsers: record a replay from the session's
replays pane, open its player, click a telemetry event and see the video jump to that event's moment,
with the position and the event in the URL; opening that URL seeks there again."""

import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import running_console, wait_for_telemetry, watch_errors
from tests.sandbox_fixtures import new_tenant

pytestmark = [pytest.mark.browser, pytest.mark.chromium]

ALL = {name: {"enabled": True} for name in ("console", "network", "page", "interaction")}
LOGIN = [
    {"type": "press_key", "press_key": {"keys": ["Tab"]}},
    {"type": "type_text", "type_text": {"text": "jo@example.com"}},
    {"type": "press_key", "press_key": {"keys": ["Tab"]}},
    {"type": "type_text", "type_text": {"text": "hunter22"}},
    {"type": "press_key", "press_key": {"keys": ["Return"]}},
]
FRAMERATE = 10


@pytest.fixture(scope="module")
def real_console(chromium_sandbox, tmp_path_factory):
    with running_console(chromium_sandbox[0], tmp_path_factory.mktemp("replays")) as console:
        yield console


@pytest.fixture
def team(real_console):
    return real_console.team(new_tenant(real_console.sandbox_url))


@pytest.fixture
def session(team):
    body = {
        "headless": True,
        "viewport": {"width": 640, "height": 480},
        "timeout_seconds": 600,
        "start_url": "https://plain.example.com/login",
        "telemetry": {"enabled": True, "browser": ALL},
    }
    sid = team.call("POST", "/browsers", body, timeout=60)["session_id"]
    yield sid
    team.tenant.call("DELETE", f"/browsers/{sid}", timeout=60)


def video_time(page) -> float:
    return page.eval_on_selector("#replay-video", "video => video.currentTime")


@pytest.mark.timeout(360)  # a recording's start may wait its turn behind other browsers' starts
def test_it_records_a_replay_and_seeks_to_a_clicked_event(team, session, browser_page):
    page = browser_page
    errors = watch_errors(page)
    team.log_in(page, "operator")

    # Record from the session page's replays pane.
    page.goto(team.url(f"browsers/{session}/"))
    # The pane is a tab of the session page: opened by its link (htmx), its script set up then.
    page.get_by_role("navigation", name="Session").get_by_role("link", name="Replays").click()
    pane = page.locator("#replays-pane")
    expect(pane.get_by_label("Frames per second")).to_be_visible(timeout=15_000)
    pane.get_by_label("Frames per second").fill(str(FRAMERATE))
    pane.get_by_role("button", name="Start recording").click()
    # A start may take a while on a loaded machine (the sandbox starts a recorder on a display of its own,
    # after the browsers starting ahead of it): as long as the console waits for it.
    expect(pane.get_by_text("recording", exact=True)).to_be_visible(timeout=150_000)

    # The scenario: a second of video before the login form is sent, and a second after its navigation
    # (the event must sit inside the recording, well after its start). Not a wait for a state.
    time.sleep(1)
    batch = team.tenant.call(
        "POST", f"/browsers/{session}/computer/batch", json={"actions": LOGIN}, timeout=60
    )
    assert batch.status_code == 204
    wait_for_telemetry(team, session, "page_navigation", url="https://plain.example.com/home")
    time.sleep(1)
    pane.get_by_role("button", name="Stop recording").click()
    play = pane.get_by_role("link", name="Play with telemetry")
    expect(play).to_be_visible(timeout=60_000)
    play.click()

    # The player: the video loads through the console and the window's events are beside it.
    expect(page).to_have_url(re.compile(r"/replays/rep[^/]+/$"))
    # The address changes when the player's document starts to come, before its video is parsed.
    expect(page.locator("#replay-video")).to_be_attached()
    loaded = "() => { const v = document.querySelector('#replay-video'); "
    loaded += "return v.readyState >= 1 && v.duration > 1; }"
    page.wait_for_function(loaded, timeout=20_000)
    # The navigation the batch caused (the window also shows events just before the recording started).
    navigations = page.locator("#replay-events li.revent", has_text="page_navigation")
    event = navigations.filter(has_text="plain.example.com/home").first
    expect(event).to_be_visible()
    offset = float(event.get_attribute("data-offset"))
    seq = event.get_attribute("data-seq")
    assert offset > 0.5  # the navigation came a second into the recording

    event.locator("a").click()
    expect(event).to_have_class(re.compile(r"\bis-selected\b"))
    page.wait_for_function("() => !document.querySelector('#replay-video').seeking", timeout=10_000)
    assert abs(video_time(page) - offset) <= 2 / FRAMERATE
    query = parse_qs(urlsplit(page.url).query)
    assert query["event"] == [seq] and abs(float(query["t"][0]) - offset) < 0.001

    # The marker of that navigation sits on the timeline; a later event seeks forward.
    marker = page.locator(f"#replay-timeline a.replay-marker--navigation[data-event='{seq}']")
    expect(marker).to_have_count(1)
    later = page.locator("#replay-events li.revent").last
    later_offset = float(later.get_attribute("data-offset"))
    later.locator("a").click()
    page.wait_for_function("() => !document.querySelector('#replay-video').seeking", timeout=10_000)
    assert abs(video_time(page) - later_offset) <= 2 / FRAMERATE
    assert parse_qs(urlsplit(page.url).query)["event"] == [later.get_attribute("data-seq")]

    # A shared link opens at its moment with its event selected.
    shared = f"{page.url.split('?')[0]}?t={offset:.3f}&event={seq}"
    page.goto(shared)
    page.wait_for_function(
        f"() => {{ const v = document.querySelector('#replay-video'); return v.readyState >= 1 && "
        f"!v.seeking && Math.abs(v.currentTime - {offset}) <= {2 / FRAMERATE}; }}",
        timeout=20_000,
    )
    expect(page.locator(f"#event-{seq}")).to_have_class(re.compile(r"\bis-selected\b"))

    # Playing highlights the events as they pass.
    page.eval_on_selector("#replay-video", "video => { video.muted = true; return video.play(); }")
    page.wait_for_function("() => document.querySelector('#replay-events li.is-current') !== null")

    # From the session page's telemetry: the same navigation, opened, offers "Open in replay" at its
    # moment (the recording covers its time), and the player opens there with the event selected.
    page.goto(team.url(f"browsers/{session}/"))
    row = page.locator(f"li.trow[data-seq='{seq}']")
    expect(row).to_be_visible(timeout=20_000)
    row.locator("summary").first.click()
    opened = row.locator("[data-open-replay]")
    expect(opened).to_contain_text("Open in replay (")
    said = float(re.search(r"\(([0-9.]+) s\)", opened.inner_text())[1])
    assert abs(said - offset) <= 0.6  # the row's time, to a tenth, against the player's own offset
    opened.click()
    expect(page).to_have_url(re.compile(rf"/replays/rep[^/]+/\?t=[0-9.]+&event={seq}$"))
    expect(page.locator(f"#event-{seq}")).to_have_class(re.compile(r"\bis-selected\b"))
    assert errors == [], errors


@pytest.mark.timeout(360)  # a recording's start may wait its turn behind other browsers' starts
def test_it_lets_the_operators_stop_win_over_a_refresh_in_flight(team, session, browser_page):
    # The recording pane refreshes itself every 5 s. A refresh asked before "Stop recording" and answered
    # while the stop is on its way must not replace the form that sent it: the stop's answer (the pane
    # and its message) is what the operator sees, and nothing is logged as an error.
    page = browser_page
    errors = watch_errors(page)
    team.log_in(page, "operator")
    page.goto(team.url(f"browsers/{session}/"))
    # The pane is a tab of the session page: opened by its link (htmx), its script set up then.
    page.get_by_role("navigation", name="Session").get_by_role("link", name="Replays").click()
    pane = page.locator("#replays-pane")
    pane.get_by_role("button", name="Start recording").click()
    # A start may take a while on a loaded machine (the sandbox starts a recorder on a display of its own,
    # after the browsers starting ahead of it): as long as the console waits for it.
    expect(pane.get_by_text("recording", exact=True)).to_be_visible(timeout=150_000)

    held = {"GET": [], "POST": []}

    def hold(route):
        if len(held[route.request.method]) < 1:
            held[route.request.method].append(route)
        else:
            route.continue_()

    page.route(re.compile(r"/replays/(rep[^/]+/stop/)?$"), hold)
    deadline = time.monotonic() + 15
    while not held["GET"] and time.monotonic() < deadline:  # the next refresh, held
        page.wait_for_timeout(100)
    assert held["GET"], "the pane did not refresh itself"
    pane.get_by_role("button", name="Stop recording").click()
    while not held["POST"] and time.monotonic() < deadline + 10:
        page.wait_for_timeout(100)
    assert held["POST"], "the stop was not sent"
    refresh = held["GET"][0]
    # The refresh answers first, with the pane as it was (recording): its answer is in before the stop goes
    # on (a fixed pause was not enough when the console took long to render it on a loaded machine).
    with page.expect_event("requestfinished", lambda request: request == refresh.request, timeout=30_000):
        refresh.continue_()
    held["POST"][0].continue_()
    expect(page.locator("#flash")).to_contain_text("stopped and kept", timeout=15_000)
    expect(pane.get_by_role("button", name="Stop recording")).to_have_count(0)
    assert errors == [], errors
