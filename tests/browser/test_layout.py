"""The layout in a real browser: sidebar and menu at desktop and phone widths, nothing wider than a phone,
the command palette by keyboard, dark mode."""

import itertools
import re
import secrets
import time

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import running_console
from tests.sandbox_fixtures import TEST_DEMO_KEY
from tests.screenshots import LOGIN, MAIN_PAGES, ORG, TELEMETRY, log_in

pytestmark = pytest.mark.browser

# What sticks out past the right edge, for the failure message.
WIDEST = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .slice(0, 5).map(e => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`)"""
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 400, "height": 800}


def demo_call(sandbox_url: str, method: str, path: str, body: dict | None = None):
    # Generous: on the real-browser sandbox (replay_path) a call launches Chromium or runs ffmpeg, which on
    # a loaded 2-core machine takes longer than httpx's default 5 s.
    response = httpx.request(
        method,
        f"{sandbox_url}{path}",
        json=body,
        headers={"Authorization": f"Bearer {TEST_DEMO_KEY}"},
        timeout=60,
    )
    response.raise_for_status()
    return response.json() if response.content else None


@pytest.fixture
def new_page(browser):
    contexts = []

    def make(viewport=DESKTOP, **options):
        context = browser.new_context(viewport=viewport, **options)
        contexts.append(context)
        page = context.new_page()
        page.errors = []
        page.on("console", lambda message: message.type == "error" and page.errors.append(message.text))
        return page

    yield make
    for context in contexts:
        context.close()


def test_it_fits_the_header_in_one_row_and_hides_the_sidebar_on_demand(console_server, new_page):
    page = new_page()
    log_in(page, console_server)
    header = page.locator("header.topbar")
    assert header.bounding_box()["height"] <= 60
    # One row: every item of the header is centred on the same line.
    middles = header.evaluate(
        "h => [...h.children].map(c => c.getBoundingClientRect()).map(r => (r.top + r.bottom) / 2)"
    )
    assert len(middles) >= 4 and max(middles) - min(middles) < 3, middles

    sidebar = page.locator("#sidebar")
    toggle = page.locator("#menu-toggle")
    expect(sidebar).to_be_visible()
    expect(sidebar.get_by_role("link", name="Sessions")).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    toggle.click()
    expect(sidebar).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    page.reload()  # remembered in this browser
    expect(page.locator("#sidebar")).to_be_hidden()
    page.locator("#menu-toggle").click()
    expect(page.locator("#sidebar")).to_be_visible()

    # A group folds away, and stays folded on the next page.
    page.locator("details.nav-group[data-nav-group='Browsers'] > summary").click()
    expect(sidebar.get_by_role("link", name="Pools")).to_be_hidden()
    page.goto(f"{console_server}/o/{ORG}/apps/")
    expect(page.locator("#sidebar").get_by_role("link", name="Pools")).to_be_hidden()
    expect(page.locator("#sidebar").get_by_role("link", name="Invocations")).to_be_visible()
    assert page.errors == []


def test_it_opens_the_sidebar_from_the_menu_button_on_a_phone(console_server, new_page):
    page = new_page(PHONE)
    log_in(page, console_server)
    sidebar = page.locator("#sidebar")
    expect(sidebar).to_be_hidden()
    page.locator("#menu-toggle").click()
    expect(sidebar).to_be_visible()
    expect(page.locator("#menu-toggle")).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("Escape")
    expect(sidebar).to_be_hidden()
    page.locator("#menu-toggle").click()
    sidebar.get_by_role("link", name="Pools").click()
    expect(page).to_have_url(f"{console_server}/o/{ORG}/pools/")
    expect(page.locator("#sidebar")).to_be_hidden()
    assert page.errors == []


def test_it_draws_no_page_wider_than_a_phone(console_server, sandbox_url, new_page):
    long_name = "x" * 255  # the longest project name the service accepts
    project = demo_call(sandbox_url, "POST", "/org/projects", {"name": long_name})
    sessions = demo_call(sandbox_url, "GET", "/browsers")
    # (The wall, whose streams never let the network idle, has its own test below.)
    paths = [*MAIN_PAGES.values(), f"projects/{project['id']}/", f"browsers/{sessions[0]['session_id']}/"]
    page = new_page(PHONE)
    log_in(page, console_server)
    widths = {}
    for path in paths:
        page.goto(f"{console_server}/o/{ORG}/{path}")
        page.wait_for_load_state("networkidle")  # the lists and other parts load after the frame
        expect(page.locator(".deferred-loading")).to_have_count(0)
        width = page.evaluate("document.documentElement.scrollWidth")
        widths[path] = width if width <= 400 else (width, page.evaluate(WIDEST))
    assert {path: width for path, width in widths.items() if not isinstance(width, int)} == {}
    assert len(widths) == len(paths)
    page.goto(f"{console_server}/o/{ORG}/projects/")
    expect(page.get_by_title(long_name).first).to_be_visible()  # the full name on hover


def test_it_finds_a_session_by_part_of_its_id_and_opens_it_by_keyboard(console_server, sandbox_url, new_page):
    name = f"palette-{secrets.token_hex(3)}"
    session = demo_call(sandbox_url, "POST", "/browsers", {"name": name})
    session_id = session["session_id"]
    # Deleted after, pass or fail: a session left running would change the figures later tests count
    # (test_overview compares the running sessions before and after creating one).
    try:
        page = new_page()
        log_in(page, console_server)

        page.keyboard.press("Control+k")
        palette = page.locator("#palette")
        expect(palette).to_be_visible()
        expect(page.locator("#palette-input")).to_be_focused()
        page.keyboard.press("Escape")
        expect(palette).to_be_hidden()

        page.keyboard.press("Control+k")
        page.keyboard.type(session_id[2:12])
        hit = palette.locator("[role='option']", has_text=session_id)
        expect(hit).to_have_count(1)
        expect(hit).to_have_attribute("aria-selected", "true")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowUp")
        expect(hit).to_have_attribute("aria-selected", "true")
        # Typing on while a search is in flight replaces it (hx-sync="this:replace"), and htmx logs the
        # replaced request as aborted; leaving the page aborts whatever is still loading the same way.
        # Those are the only errors allowed: anything else is a defect.
        aborted = ("htmx:afterRequest", "htmx:sendAbort", "htmx:sendError")
        assert [e for e in page.errors if not e.startswith(aborted)] == []
        page.keyboard.press("Enter")
        expect(page).to_have_url(f"{console_server}/o/{ORG}/browsers/{session_id}/")
        assert [e for e in page.errors if not e.startswith(aborted)] == []
    finally:
        demo_call(sandbox_url, "DELETE", f"/browsers/{session_id}", {})


def test_it_opens_the_palette_from_its_button_and_finds_a_page(console_server, new_page):
    page = new_page(PHONE)
    log_in(page, console_server)
    page.locator("#palette-button").click()
    page.keyboard.type("deploy")
    expect(page.locator("#palette [role='option']").first).to_contain_text("Deployments")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{console_server}/o/{ORG}/deployments/")


def test_it_follows_the_system_dark_mode(console_server, new_page):
    dark = new_page(color_scheme="dark")
    log_in(dark, console_server)
    background = "getComputedStyle(document.body).backgroundColor"
    assert dark.evaluate(background) == "rgb(13, 17, 23)"
    light = new_page(color_scheme="light")
    log_in(light, console_server)
    assert light.evaluate(background) == "rgb(246, 247, 249)"


def test_it_shows_relative_times_with_the_exact_time_on_hover(console_server, new_page):
    page = new_page(timezone_id="Asia/Tokyo")
    log_in(page, console_server)
    page.goto(f"{console_server}/o/{ORG}/profiles/")
    time = page.locator("#profiles-table time[data-relative]").first
    expect(time).to_have_text(re.compile(r"^(just now|\d+ (min|h|days?) ago|\d{4}-\d\d-\d\d)$"))
    assert time.get_attribute("title").endswith(" Asia/Tokyo")
    page.locator("#time-zone-toggle").click()
    expect(page.locator("#time-zone-toggle")).to_have_text("UTC")
    assert time.get_attribute("title").endswith(" UTC")


def test_it_sorts_a_table_by_a_column(console_server, sandbox_url, new_page):
    for name in ("sort-b", "sort-c", "sort-a"):
        demo_call(sandbox_url, "POST", "/profiles", {"name": f"{name}-{secrets.token_hex(2)}"})
    page = new_page()
    log_in(page, console_server)
    page.goto(f"{console_server}/o/{ORG}/profiles/?q=sort-")
    header = page.locator("#profiles-table th", has_text="Name")
    header.get_by_role("button").click()
    expect(header).to_have_attribute("aria-sort", "ascending")
    names = page.locator("#profiles-table tbody td:first-child").all_inner_texts()
    assert [n[:6] for n in names] == ["sort-a", "sort-b", "sort-c"]
    header.get_by_role("button").click()
    expect(header).to_have_attribute("aria-sort", "descending")
    names = page.locator("#profiles-table tbody td:first-child").all_inner_texts()
    assert [n[:6] for n in names] == ["sort-c", "sort-b", "sort-a"]


def test_it_lays_the_wall_out_in_one_column_on_a_phone(console_server, sandbox_url, new_page):
    tag = secrets.token_hex(4)
    made = [
        demo_call(sandbox_url, "POST", "/browsers", {"name": f"wall-{i}", "tags": {"layout": tag}})
        for i in range(3)
    ]
    page = new_page(PHONE)
    log_in(page, console_server)
    page.goto(f"{console_server}/o/{ORG}/browsers/wall/?tag=layout:{tag}")
    tiles = page.locator("[data-tile]")
    expect(tiles).to_have_count(3)
    boxes = [tiles.nth(i).bounding_box() for i in range(3)]
    assert len({round(box["x"]) for box in boxes}) == 1, boxes  # one column
    assert all(box["y"] >= above["y"] + above["height"] for above, box in itertools.pairwise(boxes)), boxes
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.evaluate(WIDEST)
    # No broken-image icon nor alt text over a tile that has no frame yet (these are simulated sessions).
    assert tiles.first.locator("img").evaluate("img => getComputedStyle(img).visibility") == "hidden"
    for session in made:
        demo_call(sandbox_url, "DELETE", f"/browsers/{session['session_id']}")


@pytest.fixture(scope="module")
def replay_path(chromium_sandbox, tmp_path_factory):
    """A console over the real-browser sandbox and the path of a recorded replay, in which a login form is
    filled (so that its window has telemetry events)."""
    sandbox = chromium_sandbox[0]
    with running_console(sandbox, tmp_path_factory.mktemp("layout-replay")) as base_url:
        body = {
            "headless": True,
            "viewport": {"width": 640, "height": 480},
            "start_url": "https://plain.example.com/login",
            "timeout_seconds": 600,
            "telemetry": {"enabled": True, "browser": TELEMETRY},
        }
        sid = demo_call(sandbox, "POST", "/browsers", body)["session_id"]
        replay = demo_call(sandbox, "POST", f"/browsers/{sid}/replays", {"framerate": 10})
        demo_call(sandbox, "POST", f"/browsers/{sid}/computer/batch", {"actions": LOGIN})
        time.sleep(1)  # a recording of at least a second
        demo_call(sandbox, "POST", f"/browsers/{sid}/replays/{replay['replay_id']}/stop")
        yield base_url, f"browsers/{sid}/replays/{replay['replay_id']}/"
        demo_call(sandbox, "DELETE", f"/browsers/{sid}")


@pytest.mark.chromium
def test_it_puts_the_events_below_the_video_on_a_phone_and_beside_it_on_a_desktop(replay_path, new_page):
    base_url, path = replay_path
    for viewport in (PHONE, DESKTOP):
        page = new_page(viewport)
        log_in(page, base_url)
        page.goto(f"{base_url}/o/{ORG}/{path}")
        video, events = page.locator("#replay-video"), page.locator("#replay-events")
        expect(events.locator("li.revent").first).to_be_visible()
        page.wait_for_function("() => document.querySelector('#replay-video').readyState >= 1")
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"], page.evaluate(
            WIDEST
        )
        video_box, events_box = video.bounding_box(), events.bounding_box()
        if viewport is PHONE:
            assert events_box["y"] >= video_box["y"] + video_box["height"], (video_box, events_box)
            # An event row is a finger's target.
            assert events.locator("li.revent a").first.bounding_box()["height"] >= 32
        else:
            assert events_box["x"] >= video_box["x"] + video_box["width"], (video_box, events_box)
        assert page.errors == []


def test_it_gives_the_selection_boxes_a_finger_size_on_a_phone(console_server, new_page):
    page = new_page(PHONE)
    log_in(page, console_server)
    page.goto(f"{console_server}/o/{ORG}/browsers/")
    expect(page.locator('tbody input[form="sessions-bulk"]').first).to_be_visible()
    # Measured in one step in the page: the live list's 5 s poll replaces a row whose uptime moved, and a
    # box resolved before that swap and measured after it is detached (no box).
    size = page.evaluate(
        """() => {
            const r = document.querySelector('tbody input[form="sessions-bulk"]').getBoundingClientRect();
            return {width: r.width, height: r.height};
        }"""
    )
    assert size["width"] >= 24 and size["height"] >= 24, size
