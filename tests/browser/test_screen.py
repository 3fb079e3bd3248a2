"""The live screen and the session wall in Chromium, against a sandbox whose sessions are real Chromium.

The console relays each session's CDP screencast: the test reads the colour of the page shown in the
screen, drives a button on the screen as an operator and sees the page's console event arrive in the
telemetry pane, checks that a viewer is refused by the input endpoint, and opens the wall.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import assert_each_write_changes, running_console, watch_errors, watch_writes
from tests.sandbox_fixtures import new_tenant

pytestmark = [pytest.mark.browser, pytest.mark.chromium]

ALL = {
    "enabled": True,
    "browser": {c: {"enabled": True} for c in ("console", "network", "page", "interaction")},
}


@pytest.fixture(scope="module")
def real_console(chromium_sandbox, tmp_path_factory):
    with running_console(chromium_sandbox[0], tmp_path_factory.mktemp("screen-console")) as console:
        yield console


@pytest.fixture
def real_team(real_console):
    """A team of its own on the console over the real-browser sandbox."""
    return real_console.team(new_tenant(real_console.sandbox_url))


@pytest.fixture
def sessions(real_team):
    """Start real sessions (deleted after the test): ``sessions(start_url) -> session id``."""
    made = []

    def start(start_url: str, **extra) -> str:
        body = {
            "name": f"screen-{uuid.uuid4().hex[:6]}",
            "headless": True,
            "viewport": {"width": 640, "height": 480},
            "start_url": start_url,
            "telemetry": ALL,
            "timeout_seconds": 3600,
            **extra,
        }
        made.append(real_team.call("POST", "/browsers", body, timeout=60)["session_id"])
        return made[-1]

    yield start
    for sid in made:
        real_team.tenant.call("DELETE", f"/browsers/{sid}", timeout=30)


def colour_at(page, x: int, y: int) -> tuple[int, int, int]:
    """The colour of the screen image at (x, y) of the session's viewport, read through a canvas."""
    return tuple(
        page.evaluate(
            """([x, y]) => {
                const image = document.querySelector('[data-screen-image]');
                const canvas = document.createElement('canvas');
                canvas.width = image.naturalWidth; canvas.height = image.naturalHeight;
                const context = canvas.getContext('2d');
                context.drawImage(image, 0, 0);
                return Array.from(context.getImageData(x, y, 1, 1).data.slice(0, 3));
            }""",
            [x, y],
        )
    )


def open_screen(page, team, sid):
    page.goto(team.url(f"browsers/{sid}/"))
    pane = page.locator("#screen-pane[data-mode='relay']")
    expect(pane).to_be_visible(timeout=20_000)
    expect(pane.locator("[data-screen-state]")).to_have_attribute("data-state", "live", timeout=30_000)
    expect(pane).to_have_attribute("data-frames", re.compile(r"[1-9]"), timeout=30_000)
    return pane


# Records the kind of every picture the screen image is given, in order (before any page script runs).
PICTURES = """
new MutationObserver((changes) => {
    for (const change of changes) {
        const src = change.target.getAttribute('src') || '';
        if (change.target.matches('[data-screen-image]') && src.startsWith('data:image/')) {
            (window.pictures = window.pictures || []).push(src.slice(11, src.indexOf(';')));
        }
    }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ['src']});
"""


def test_it_shows_a_still_picture_of_the_screen_until_the_first_frame(real_team, sessions, browser_page):
    """Opening the CDP connection can take seconds (the sandbox moves the session to a browser of its own):
    the screen shows the service's screenshot first, then the screencast's frames."""
    team, page = real_team, browser_page
    sid = sessions("https://lab.example.com/?color=1e90ff")
    team.log_in(page)
    page.add_init_script(PICTURES)
    open_screen(page, team, sid)
    page.wait_for_function("() => (window.pictures || []).includes('jpeg')")
    pictures = page.evaluate("window.pictures")
    assert pictures[0] == "png" and pictures.count("png") == 1, pictures


def test_it_shows_the_page_of_the_session_in_the_live_screen(real_team, sessions, browser_page):
    team, page = real_team, browser_page
    errors = watch_errors(page)
    sid = sessions("https://lab.example.com/?color=1e90ff")
    team.log_in(page)
    pane = open_screen(page, team, sid)
    red, green, blue = colour_at(page, 400, 300)
    assert abs(red - 0x1E) < 12 and abs(green - 0x90) < 12 and abs(blue - 0xFF) < 12
    assert pane.locator("[data-screen-mode]").inner_text().startswith("Relayed by the console")
    expect(pane.locator("[data-screen-stats]")).to_contain_text("fps")
    # Nothing the console sent names the CDP endpoint or its token.
    assert "/_sandbox/cdp/" not in page.content() and "jwt" not in page.content()
    assert errors == []


def test_it_clicks_a_button_on_the_screen_and_the_page_reacts(real_team, sessions, browser_page):
    team, page = real_team, browser_page
    sid = sessions("https://lab.example.com/")
    team.log_in(page)
    pane = open_screen(page, team, sid)
    image = pane.locator("[data-screen-image]")
    image.click(position={"x": 5, "y": 5})  # without control: nothing is sent
    pane.get_by_role("button", name="Take control").click()
    pane = page.locator("#screen-pane[data-control-token]")
    expect(pane.get_by_role("button", name="Release control")).to_be_visible()
    expect(pane.locator("[data-screen-state]")).to_have_attribute("data-state", "live", timeout=30_000)
    box = pane.locator("[data-screen-image]").bounding_box()
    # The lab's button spans (20, 20)-(220, 80) of the 640x480 viewport: click its middle, scaled.
    page.mouse.click(box["x"] + 120 * box["width"] / 640, box["y"] + 50 * box["height"] / 480)
    rows = page.locator("#telemetry-pane [data-telemetry-rows]")
    expect(rows).to_contain_text("button clicked", timeout=20_000)
    pane.get_by_role("button", name="Release control").click()
    expect(page.locator("#screen-pane").get_by_role("button", name="Take control")).to_be_visible()


def test_it_refuses_input_from_a_viewer(real_team, sessions, browser_page):
    team, page = real_team, browser_page
    sid = sessions("https://lab.example.com/")
    team.log_in(page, "viewer")
    pane = open_screen(page, team, sid)
    expect(pane.get_by_role("button", name="Take control")).to_have_count(0)
    status = page.evaluate(
        """async (url) => {
            const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
            const body = new URLSearchParams({kind: 'click', x: '120', y: '50'});
            const response = await fetch(url, {method: 'POST', body, headers: {'X-CSRFToken': token}});
            return response.status;
        }""",
        team.path(f"browsers/{sid}/screen/input/"),
    )
    assert status == 403


def test_it_shows_several_sessions_on_the_wall(real_team, sessions, browser_page):
    team, page = real_team, browser_page
    tag = uuid.uuid4().hex[:8]
    first = sessions("https://lab.example.com/?color=ff0000", tags={"wall": tag})
    second = sessions("https://lab.example.com/?color=00ff00", tags={"wall": tag})
    team.log_in(page)
    page.goto(team.url(f"browsers/wall/?tag=wall:{tag}"))
    expect(page.locator("[data-tile]")).to_have_count(2)
    for sid in (first, second):
        tile = page.locator(f"[data-tile='{sid}']")
        expect(tile).to_have_attribute("data-frames", re.compile(r"[1-9]"), timeout=30_000)
        expect(tile.locator("[data-tile-state]")).to_have_attribute("data-state", "live")
    page.locator(f"[data-tile='{first}'] a").click()
    expect(page).to_have_url(team.url(f"browsers/{first}/#pane-screen"))
    expect(page.locator("#screen-pane[data-mode='relay']")).to_be_visible(timeout=20_000)


def test_it_says_why_the_service_refused_a_tile_and_retries_when_asked(real_team, sessions, browser_page):
    """The sandbox runs at most two browsers: a wall of three sessions gets at most two live tiles, and a
    third is refused (no browser free). The tile says so in words, with a retry, instead of
    "Reconnecting…" and then "No screen from this session's CDP endpoint"."""
    team, page = real_team, browser_page
    tag = uuid.uuid4().hex[:8]
    ids = [sessions(f"https://lab.example.com/?color={c}", tags={"wall": tag}) for c in ("f00", "0f0", "00f")]
    team.log_in(page, "viewer")
    page.goto(team.url(f"browsers/wall/?tag=wall:{tag}"))
    refused = page.locator("[data-tile][data-state='refused']").first
    expect(refused).to_be_visible(timeout=60_000)
    why = refused.locator("[data-tile-why]")
    expect(why).to_contain_text("Refused by the service: busy (browser_limit_reached")
    live = page.locator("[data-tile][data-state='live']")
    expect(live.first).to_be_visible(timeout=30_000)
    assert "No screen from this session" not in page.content()
    # A live one leaves (deleted): its browser is free, and Retry shows the refused tile live.
    refused_id = refused.get_attribute("data-tile")
    team.tenant.call("DELETE", f"/browsers/{live.first.get_attribute('data-tile')}", timeout=30)
    tile = page.locator(f"[data-tile='{refused_id}']")
    tile.get_by_role("button", name="Retry").click()
    expect(tile).to_have_attribute("data-frames", re.compile(r"[1-9]"), timeout=60_000)
    expect(tile).to_have_attribute("data-state", "live")
    assert refused_id in ids


@pytest.fixture(scope="module")
def narrow_console(chromium_sandbox, tmp_path_factory):
    """A console whose walls keep one tile live per viewer."""
    folder = tmp_path_factory.mktemp("narrow-wall-console")
    with running_console(chromium_sandbox[0], folder, WALL_LIVE_TILES="1") as console:
        yield console


def test_it_keeps_live_only_the_tiles_on_screen_within_the_viewer_s_bound(narrow_console, browser_page):
    """A wall connected every tile, on screen or not, and held every browser slot of the sandbox."""
    team, page = narrow_console.team(new_tenant(narrow_console.sandbox_url)), browser_page
    tag = uuid.uuid4().hex[:8]
    body = {"headless": True, "viewport": {"width": 640, "height": 480}, "tags": {"wall": tag}}
    first = team.call("POST", "/browsers", {**body, "name": "first"}, timeout=60)["session_id"]
    second = team.call("POST", "/browsers", {**body, "name": "second"}, timeout=60)["session_id"]
    try:
        team.log_in(page, "viewer")
        # One tile a row, and room for one: the second tile is off screen.
        page.set_viewport_size({"width": 400, "height": 300})
        page.goto(team.url(f"browsers/wall/?tag=wall:{tag}"))
        tiles = page.locator("[data-tile]")
        expect(tiles).to_have_count(2)
        top, below = tiles.nth(0), tiles.nth(1)
        top.evaluate("tile => tile.scrollIntoView({block: 'start'})")
        expect(top).to_have_attribute("data-frames", re.compile(r"[1-9]"), timeout=30_000)
        expect(below).to_have_attribute("data-state", "paused")
        expect(below.locator("[data-tile-why]")).to_have_text("Paused: off screen.")
        # Both on screen: the viewer's bound (one) pauses the second, which the viewer may ask for.
        page.set_viewport_size({"width": 1200, "height": 900})
        top.evaluate("tile => tile.scrollIntoView({block: 'start'})")
        expect(below.locator("[data-tile-why]")).to_have_text("Paused: at most 1 live tile at once.")
        below.get_by_role("button", name="Show live").click()
        expect(below).to_have_attribute("data-frames", re.compile(r"[1-9]"), timeout=30_000)
        expect(top).to_have_attribute("data-state", "paused")
        expect(top.locator("[data-tile-why]")).to_have_text("Paused: at most 1 live tile at once.")
    finally:
        for sid in (first, second):
            team.tenant.call("DELETE", f"/browsers/{sid}", timeout=30)


def test_it_shows_screenshots_through_the_console_without_a_relayable_screen(team, browser_page):
    """The simulated sandbox: its sessions' CDP endpoints cannot be relayed. The pane used to offer the
    service's live view (framed, its URL and jwt in the page); it shows the session's screenshots through
    the console instead, refreshed, and never frames anything."""
    page = browser_page
    errors = watch_errors(page)
    sid = team.call("POST", "/browsers", {"name": "fallback", "timeout_seconds": 3600})["session_id"]
    team.log_in(page, "operator")
    page.goto(team.url(f"browsers/{sid}/"))
    pane = page.locator("#screen-pane[data-mode='snapshots']")
    expect(pane).to_contain_text("simulated", timeout=20_000)
    expect(pane).to_have_attribute("data-frames", re.compile(r"[2-9]"), timeout=20_000)  # refreshed
    expect(pane.locator("[data-screen-state]")).to_have_attribute("data-state", "live")
    expect(page.locator("iframe")).to_have_count(0)
    assert team.tenant.url not in page.content()
    assert errors == []


def test_it_leaves_the_held_first_frame_out_of_the_latency_and_writes_the_stats_only_on_a_change(
    real_team, sessions, browser, browser_page
):
    """A viewer joining a screen gets the frame the relay holds, captured whenever the page last changed:
    it counted as minutes of latency on a still page. Here the second viewer's clock runs five minutes
    ahead, so that held frame looks five minutes old to it."""
    team, page = real_team, browser_page
    sid = sessions("https://lab.example.com/?color=228b22")
    team.log_in(page)
    open_screen(page, team, sid)  # the first viewer: the relay holds the page's frame
    context = browser.new_context()
    try:
        late = context.new_page()
        late.clock.install(time=datetime.now(UTC) + timedelta(minutes=5))
        team.log_in(late)
        pane = open_screen(late, team, sid)
        stats = pane.locator("[data-screen-stats]")
        expect(stats).to_have_text(re.compile(r"^\d+ fps · — ms$"))

        # The stats are written only when they change: on a still page the same line, written again twice a
        # second, laid the page out each time. Every write the stats get from now on changes what they say.
        said = watch_writes(late, "#screen-pane [data-screen-stats]")
        late.clock.run_for(5_000)  # ten of the stats' ticks
        assert_each_write_changes(said())
    finally:
        context.close()


# Tabs ----------------------------------------------------------------------------------------------

RED, GREEN = (0xFF, 0, 0), (0, 0xC0, 0)
GREEN_URL = "https://lab.example.com/?color=00c000"


def wait_for_colour(page, wanted: tuple[int, int, int]) -> None:
    """Wait until the screen's image shows ``wanted`` at (400, 300) of the viewport (the lab's colour)."""
    page.wait_for_function(
        """([r, g, b]) => {
            const image = document.querySelector('#screen-pane [data-screen-image]');
            if (!image || !image.naturalWidth) return false;
            const canvas = document.createElement('canvas');
            canvas.width = image.naturalWidth; canvas.height = image.naturalHeight;
            const context = canvas.getContext('2d');
            context.drawImage(image, 0, 0);
            const [x, y, z] = context.getImageData(400, 300, 1, 1).data;
            return Math.abs(x - r) < 16 && Math.abs(y - g) < 16 && Math.abs(z - b) < 16;
        }""",
        arg=list(wanted),
        timeout=20_000,
    )


def post_tab(page, team, sid: str, target: str, token: str = "") -> dict:
    return page.evaluate(
        """async ([url, target, token]) => {
            const csrf = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
            const headers = {'X-CSRFToken': csrf, 'X-Screen-Control': token};
            const response = await fetch(url, {method: 'POST', body: new URLSearchParams({target}), headers});
            return {status: response.status, text: await response.text()};
        }""",
        [team.path(f"browsers/{sid}/screen/tab/"), target, token],
    )


def test_it_lists_a_tab_the_page_opened_follows_it_and_lets_the_driver_switch_back(
    real_team, sessions, browser
):
    team = real_team
    sid = sessions("https://lab.example.com/?color=ff0000")
    contexts = [browser.new_context() for _ in range(3)]
    try:
        driver, watcher, other = (context.new_page() for context in contexts)
        errors = watch_errors(driver) + watch_errors(watcher)
        team.log_in(driver, "operator")
        team.log_in(watcher, "viewer")
        team.log_in(other, "admin")
        pane = open_screen(driver, team, sid)
        pane.get_by_role("button", name="Take control").click()
        pane = driver.locator("#screen-pane[data-control-token]")
        expect(pane.locator("[data-screen-state]")).to_have_attribute("data-state", "live", timeout=30_000)
        strip = pane.locator("[data-screen-tabs]")
        expect(strip.locator("[data-tab]")).to_have_count(1)
        expect(strip.locator("[data-tab][data-shown]")).to_contain_text("lab.example.com/?color=ff0000")
        first = strip.locator("[data-tab]").first.get_attribute("data-tab")
        watched = open_screen(watcher, team, sid).locator("[data-screen-tabs]")
        expect(watched.locator("[data-tab]")).to_have_count(1)

        # The page opens a tab (the service's Playwright, on the session's own tab): listed everywhere,
        # live, and the screen shows it.
        opened = team.call(
            "POST",
            f"/browsers/{sid}/playwright/execute",
            {"code": f"await page.evaluate(() => window.open('{GREEN_URL}', '_blank'))"},
            timeout=120,
        )
        assert opened["success"], opened
        expect(strip.locator("[data-tab]")).to_have_count(2, timeout=20_000)
        shown = strip.locator("[data-tab][data-shown]")
        expect(shown).to_contain_text("color=00c000", timeout=20_000)
        expect(shown).to_contain_text("Lab")  # its title, once loaded
        expect(watched.locator("[data-tab][data-shown]")).to_contain_text("color=00c000")
        wait_for_colour(driver, GREEN)
        second = shown.get_attribute("data-tab")
        assert second != first

        # The watcher sees text, not buttons; the admin who does not drive is refused; so is the viewer.
        assert watched.locator("button").count() == 0
        expect(watched.locator("[data-tab][data-shown] > [aria-current='page']")).to_have_count(1)
        open_screen(other, team, sid)
        token = pane.get_attribute("data-control-token")
        for page, sent, status in ((other, "", 409), (other, token, 409), (watcher, token, 403)):
            assert post_tab(page, team, sid, first, sent)["status"] == status
        assert post_tab(driver, team, sid, "not-a-tab-of-it", token)["status"] == 400
        expect(shown).to_have_attribute("data-tab", second)

        # The driver brings the first tab back: the screen shows it again, everyone's strip says so.
        strip.locator(f"[data-tab='{first}'] button").click()
        expect(strip.locator("[data-tab][data-shown]")).to_have_attribute("data-tab", first, timeout=20_000)
        expect(watched.locator("[data-tab][data-shown]")).to_have_attribute("data-tab", first)
        wait_for_colour(driver, RED)
        assert errors == []
    finally:
        for context in contexts:
            context.close()
