"""The layout in a real browser: sidebar and menu at desktop and phone widths, nothing wider than a phone,
the command palette by keyboard, dark mode."""

import itertools
import re
import secrets

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from tests.browser.conftest import running_console, wait_for_telemetry
from tests.sandbox_fixtures import new_tenant
from tests.screenshots import LOGIN, MAIN_PAGES, TELEMETRY

pytestmark = pytest.mark.browser

# What sticks out past the right edge, for the failure message.
WIDEST = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .slice(0, 5).map(e => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`)"""
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 400, "height": 800}


def log_in(page, team) -> None:
    team.log_in(page)
    page.goto(team.url())


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


def test_it_fits_the_header_in_one_row_and_hides_the_sidebar_on_demand(team, new_page):
    page = new_page()
    log_in(page, team)
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
    page.goto(team.url("apps/"))
    expect(page.locator("#sidebar").get_by_role("link", name="Pools")).to_be_hidden()
    expect(page.locator("#sidebar").get_by_role("link", name="Invocations")).to_be_visible()
    assert page.errors == []


def test_it_opens_the_sidebar_from_the_menu_button_on_a_phone(team, new_page):
    page = new_page(PHONE)
    log_in(page, team)
    sidebar = page.locator("#sidebar")
    expect(sidebar).to_be_hidden()
    page.locator("#menu-toggle").click()
    expect(sidebar).to_be_visible()
    expect(page.locator("#menu-toggle")).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("Escape")
    expect(sidebar).to_be_hidden()
    page.locator("#menu-toggle").click()
    sidebar.get_by_role("link", name="Pools").click()
    expect(page).to_have_url(team.url("pools/"))
    expect(page.locator("#sidebar")).to_be_hidden()
    assert page.errors == []


def test_it_draws_no_page_wider_than_a_phone(team, new_page):
    long_name = "x" * 255  # the longest project name the service accepts
    project = team.call("POST", "/org/projects", {"name": long_name})
    sessions = team.call("GET", "/browsers")
    # (The wall, whose streams never let the network idle, has its own test below.)
    paths = [*MAIN_PAGES.values(), f"projects/{project['id']}/", f"browsers/{sessions[0]['session_id']}/"]
    page = new_page(PHONE)
    log_in(page, team)
    widths = {}
    for path in paths:
        page.goto(team.url(path))
        page.wait_for_load_state("networkidle")  # the lists and other parts load after the frame
        expect(page.locator(".deferred-loading")).to_have_count(0)
        width = page.evaluate("document.documentElement.scrollWidth")
        widths[path] = width if width <= 400 else (width, page.evaluate(WIDEST))
    assert {path: width for path, width in widths.items() if not isinstance(width, int)} == {}
    assert len(widths) == len(paths)
    page.goto(team.url("projects/"))
    expect(page.get_by_title(long_name).first).to_be_visible()  # the full name on hover


def test_it_finds_a_session_by_part_of_its_id_and_opens_it_by_keyboard(team, new_page):
    name = f"palette-{secrets.token_hex(3)}"
    session = team.call("POST", "/browsers", {"name": name})
    session_id = session["session_id"]
    page = new_page()
    log_in(page, team)

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
    expect(page).to_have_url(team.url(f"browsers/{session_id}/"))
    assert [e for e in page.errors if not e.startswith(aborted)] == []


def test_it_opens_the_palette_from_its_button_and_finds_a_page(team, new_page):
    page = new_page(PHONE)
    log_in(page, team)
    page.locator("#palette-button").click()
    page.keyboard.type("deploy")
    expect(page.locator("#palette [role='option']").first).to_contain_text("Deployments")
    page.keyboard.press("Enter")
    expect(page).to_have_url(team.url("deployments/"))


def test_it_follows_the_system_dark_mode(team, new_page):
    dark = new_page(color_scheme="dark")
    log_in(dark, team)
    background = "getComputedStyle(document.body).backgroundColor"
    assert dark.evaluate(background) == "rgb(13, 17, 23)"
    light = new_page(color_scheme="light")
    log_in(light, team)
    assert light.evaluate(background) == "rgb(246, 247, 249)"


def test_it_shows_relative_times_with_the_exact_time_on_hover(team, new_page):
    page = new_page(timezone_id="Asia/Tokyo")
    log_in(page, team)
    page.goto(team.url("profiles/"))
    time = page.locator("#profiles-table time[data-relative]").first
    expect(time).to_have_text(re.compile(r"^(just now|\d+ (min|h|days?) ago|\d{4}-\d\d-\d\d)$"))
    assert time.get_attribute("title").endswith(" Asia/Tokyo")
    page.locator("#time-zone-toggle").click()
    expect(page.locator("#time-zone-toggle")).to_have_text("UTC")
    assert time.get_attribute("title").endswith(" UTC")


def test_it_sorts_a_table_by_a_column(team, new_page):
    for name in ("sort-b", "sort-c", "sort-a"):
        team.call("POST", "/profiles", {"name": f"{name}-{secrets.token_hex(2)}"})
    page = new_page()
    log_in(page, team)
    page.goto(team.url("profiles/?q=sort-"))
    header = page.locator("#profiles-table th", has_text="Name")
    header.get_by_role("button").click()
    expect(header).to_have_attribute("aria-sort", "ascending")
    names = page.locator("#profiles-table tbody td:first-child").all_inner_texts()
    assert [n[:6] for n in names] == ["sort-a", "sort-b", "sort-c"]
    header.get_by_role("button").click()
    expect(header).to_have_attribute("aria-sort", "descending")
    names = page.locator("#profiles-table tbody td:first-child").all_inner_texts()
    assert [n[:6] for n in names] == ["sort-c", "sort-b", "sort-a"]


def test_it_lays_the_wall_out_in_one_column_on_a_phone(team, new_page):
    tag = secrets.token_hex(4)
    for i in range(3):
        team.call("POST", "/browsers", {"name": f"wall-{i}", "tags": {"layout": tag}})
    page = new_page(PHONE)
    log_in(page, team)
    page.goto(team.url(f"browsers/wall/?tag=layout:{tag}"))
    tiles = page.locator("[data-tile]")
    expect(tiles).to_have_count(3)
    boxes = [tiles.nth(i).bounding_box() for i in range(3)]
    assert len({round(box["x"]) for box in boxes}) == 1, boxes  # one column
    assert all(box["y"] >= above["y"] + above["height"] for above, box in itertools.pairwise(boxes)), boxes
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.evaluate(WIDEST)
    # No broken-image icon nor alt text over a tile that has no frame yet (these are simulated sessions).
    assert tiles.first.locator("img").evaluate("img => getComputedStyle(img).visibility") == "hidden"


@pytest.fixture(scope="module")
def replay_path(chromium_sandbox, tmp_path_factory):
    """A console over the real-browser sandbox, a team of its own, and the path of a recorded replay in
    which a login form is filled (so that its window has telemetry events)."""
    with running_console(chromium_sandbox[0], tmp_path_factory.mktemp("layout-replay")) as console:
        team = console.team(new_tenant(console.sandbox_url))
        body = {
            "headless": True,
            "viewport": {"width": 640, "height": 480},
            "start_url": "https://plain.example.com/login",
            "timeout_seconds": 600,
            "telemetry": {"enabled": True, "browser": TELEMETRY},
        }
        sid = team.call("POST", "/browsers", body, timeout=60)["session_id"]
        replay = team.call("POST", f"/browsers/{sid}/replays", {"framerate": 10}, timeout=60)
        team.call("POST", f"/browsers/{sid}/computer/batch", {"actions": LOGIN}, timeout=60)
        wait_for_telemetry(team, sid, "page_navigation", url="https://plain.example.com/home")
        team.call("POST", f"/browsers/{sid}/replays/{replay['replay_id']}/stop", timeout=60)
        yield team, f"browsers/{sid}/replays/{replay['replay_id']}/"
        team.call("DELETE", f"/browsers/{sid}", timeout=60)


@pytest.mark.chromium
def test_it_puts_the_events_below_the_video_on_a_phone_and_beside_it_on_a_desktop(replay_path, new_page):
    team, path = replay_path
    for viewport in (PHONE, DESKTOP):
        page = new_page(viewport)
        team.log_in(page)
        page.goto(team.url(path))
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


def test_it_gives_the_selection_boxes_a_finger_size_on_a_phone(team, new_page):
    page = new_page(PHONE)
    log_in(page, team)
    page.goto(team.url("browsers/"))
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


def test_it_switches_the_theme_from_the_user_menu_and_remembers_it(team, new_page):
    page = new_page(color_scheme="light")
    log_in(page, team)
    background = "getComputedStyle(document.body).backgroundColor"
    assert page.evaluate(background) == "rgb(246, 247, 249)"
    page.locator("#account-menu summary").click()
    page.get_by_role("radio", name="Dark").check()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert page.evaluate(background) == "rgb(13, 17, 23)"
    # The chart tracks follow the theme (they stayed near-white in the dark).
    page.goto(team.url(""))
    track = page.locator(".ov-track").first
    expect(track).to_be_attached(timeout=10_000)
    assert track.evaluate("t => getComputedStyle(t).fill") == "rgb(48, 54, 61)"
    assert page.evaluate(background) == "rgb(13, 17, 23)"  # remembered across pages
    page.locator("#account-menu summary").click()
    expect(page.get_by_role("radio", name="Dark")).to_be_checked()
    page.get_by_role("radio", name="System").check()
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    assert page.evaluate(background) == "rgb(246, 247, 249)"


def palette_with_a_page_action(team, new_page):
    """A signed-in page with an action of its own (as a session page marks its "Take control" button:
    clicked, it marks the body ``data-took``), and the palette open on "take"."""
    page = new_page(color_scheme="light")
    log_in(page, team)
    page.evaluate(
        """() => {
          const button = document.createElement("button");
          button.dataset.paletteAction = "Take control";
          button.addEventListener("click", () => { document.body.dataset.took = "yes"; });
          document.querySelector("main").append(button);
        }"""
    )
    page.keyboard.press("Control+k")
    page.keyboard.type("take")
    return page


def test_it_runs_actions_from_the_palette(team, new_page):
    # A page's own action: offered, and clicked.
    page = palette_with_a_page_action(team, new_page)
    option = page.locator("#palette [role='option']").first
    expect(option).to_contain_text("Take control")
    page.keyboard.press("Enter")
    expect(page.locator("body")).to_have_attribute("data-took", "yes")
    expect(page.locator("#palette")).not_to_be_visible()

    page.keyboard.press("Control+k")
    page.keyboard.press("Control+a")
    page.keyboard.type("theme")
    expect(page.locator("#palette [role='option']").first).to_contain_text("Toggle theme")
    page.keyboard.press("Enter")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")

    # Actions found by the server go to their page.
    page.keyboard.press("Control+k")
    page.keyboard.press("Control+a")
    page.keyboard.type("new session")
    expect(page.locator("#palette [role='option']").first).to_contain_text("New session")
    page.keyboard.press("Enter")
    expect(page).to_have_url(team.url("browsers/new/"))


def test_the_palettes_enter_waits_for_the_answer_to_what_was_typed(team, new_page):
    # Results drawn for an older query are never chosen from: Enter asks again and opens the answer's first.
    page = palette_with_a_page_action(team, new_page)
    results = page.locator("#search-results")
    expect(results).to_have_attribute("data-query", "take")
    expect(results.locator("[aria-selected='true']")).to_contain_text("Take control")

    theme = re.compile(r"/search/\?q=theme$")
    held = []  # the answers to "theme", kept from the page until released
    page.route(theme, lambda route: held.append(route))
    with page.expect_request(theme):
        page.keyboard.press("Control+a")
        page.keyboard.type("theme")
    with page.expect_request(theme):  # Enter asks again, at once
        page.keyboard.press("Enter")  # "Take control" is still the one shown, and selected
    expect(results).to_have_attribute("aria-busy", "true")
    expect(page.locator("#palette")).to_be_visible()
    assert page.locator("body").get_attribute("data-took") is None
    assert page.locator("html").get_attribute("data-theme") == "light"

    # The typing's, and the Enter's own (which replaced it: the page dropped the first). Playwright runs the
    # route handler while the test waits on it.
    for _ in range(500):
        if len(held) == 2:
            break
        page.wait_for_timeout(10)
    assert len(held) == 2
    for route in held:
        try:
            route.continue_()
        except PlaywrightError as error:  # the first, when the page's abort reached Playwright already
            assert "already handled" in str(error)
    page.unroute(theme)
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(page.locator("#palette")).not_to_be_visible()
    assert page.locator("body").get_attribute("data-took") is None
