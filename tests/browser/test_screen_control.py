"""One driver at a time, in Chromium: two users in two browser contexts, each on a console process of its
own sharing one database (as replicas share PostgreSQL), watching the same session's screen: who drives and
who watches, a request for control granted, an admin's take-over, a lease that outlives a console restart
and ends at its expiry; and what the session page says once the session ends while watched.

The sessions are the simulated sandbox's: the console shows them as screenshots through itself, driven by the
same control lease and input endpoint as the relayed screen (tests/browser/test_screen.py has real ones).
"""

from __future__ import annotations

import contextlib
import math
import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import running_console, watch_errors
from tests.sandbox_fixtures import new_tenant

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def consoles(sandbox_url, tmp_path_factory):
    """Two console processes on one database file."""
    folder = tmp_path_factory.mktemp("two-consoles")
    with running_console(sandbox_url, folder) as first, running_console(sandbox_url, folder) as second:
        yield first, second


@pytest.fixture
def team(consoles):
    """A team of its own (made through the first console's seeder: the database is the same)."""
    return consoles[0].team(new_tenant(consoles[0].sandbox_url, demo=True))


def open_pane(page, base_url: str, team, sid: str):
    page.goto(base_url + team.path(f"browsers/{sid}/"))
    pane = page.locator("#screen-pane[data-mode='snapshots']")
    expect(pane).to_have_attribute("data-frames", re.compile(r"[1-9]"), timeout=20_000)
    return pane


def post_input(page, team, sid: str, token: str = "") -> dict:
    """What the input endpoint answers this page (its own CSRF token and cookie), with ``token`` if any."""
    return page.evaluate(
        """async ([url, token]) => {
            const csrf = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
            const body = new URLSearchParams({kind: 'click', x: '10', y: '10'});
            const headers = {'X-CSRFToken': csrf, 'X-Screen-Control': token};
            const response = await fetch(url, {method: 'POST', body, headers});
            return {status: response.status, text: await response.text()};
        }""",
        [team.path(f"browsers/{sid}/screen/input/"), token],
    )


def test_it_lets_one_user_drive_and_shows_the_other_who_does(consoles, team, browser):
    first_console, second_console = consoles
    sid = team.call("POST", "/browsers", {"name": f"shared-{uuid.uuid4().hex[:6]}", "timeout_seconds": 3600})[
        "session_id"
    ]
    driver_context, other_context = browser.new_context(), browser.new_context()
    try:
        driver, other = driver_context.new_page(), other_context.new_page()
        errors = watch_errors(driver)
        team.log_in(driver, "operator")
        team.log_in(other, "admin")
        pane = open_pane(driver, first_console.url, team, sid)
        pane.get_by_role("button", name="Take control").click()
        expect(driver.locator("#screen-pane")).to_contain_text("You control this browser")
        token = driver.locator("#screen-pane").get_attribute("data-control-token")
        # A click on the screenshot reaches the browser (the simulated session's pointer moves there).
        image = driver.locator("#screen-pane [data-screen-image]")
        box = image.bounding_box()
        with driver.expect_response("**/screen/input/") as answer:
            driver.mouse.click(box["x"] + box["width"] * 100 / 1920, box["y"] + box["height"] * 200 / 1080)
        assert answer.value.status == 204

        # The other user, on the other console process, sees who drives and is refused.
        other_pane = open_pane(other, second_console.url, team, sid)
        operator = team.user("operator")
        expect(other_pane.locator("[data-screen-driver]")).to_have_text(f"{operator} is driving")
        expect(other_pane.get_by_role("button", name="Take control")).to_have_count(0)
        for sent in ("", token):  # nor with the driver's own token
            refused = post_input(other, team, sid, sent)
            assert refused["status"] == 409 and f"{operator} is driving" in refused["text"]

        # Released: the other can take it.
        driver.locator("#screen-pane").get_by_role("button", name="Release control").click()
        expect(driver.locator("#screen-pane").get_by_role("button", name="Take control")).to_be_visible()
        other.reload()
        other_pane = open_pane(other, second_console.url, team, sid)
        other_pane.get_by_role("button", name="Take control").click()
        expect(other.locator("#screen-pane")).to_contain_text("You control this browser")
        assert errors == []
    finally:
        driver_context.close()
        other_context.close()


def test_it_stops_the_screen_and_its_input_of_a_member_removed_meanwhile(consoles, team, browser_page):
    console, page = consoles[0], browser_page
    sid = team.call("POST", "/browsers", {"name": f"kept-{uuid.uuid4().hex[:6]}", "timeout_seconds": 3600})[
        "session_id"
    ]
    team.log_in(page, "operator")
    pane = open_pane(page, console.url, team, sid)
    pane.get_by_role("button", name="Take control").click()
    expect(page.locator("#screen-pane")).to_contain_text("You control this browser")
    # Whatever the page holds is the console's: nothing names the service or carries a token of it.
    held = page.evaluate(
        """() => Array.from(document.querySelectorAll('*')).flatMap(el => Array.from(el.attributes))
            .map(a => a.value).filter(v => /^(https?|wss?):|jwt/.test(v))"""
    )
    assert held == []
    console.remove_membership(team.user("operator"), team.slug)
    # The next screenshot is refused (404: the console does not say whether the session exists to a
    # non-member): the pane stops, and drops its control.
    pane = page.locator("#screen-pane")
    expect(pane).to_have_attribute("data-state", "ended", timeout=20_000)
    expect(pane.locator("[data-screen-note]")).to_contain_text("no longer yours to see")
    assert pane.get_attribute("data-control-token") is None
    assert post_input(page, team, sid)["status"] == 404


def new_session(team, name: str) -> str:
    body = {"name": f"{name}-{uuid.uuid4().hex[:6]}", "timeout_seconds": 3600}
    return team.call("POST", "/browsers", body)["session_id"]


@contextlib.contextmanager
def two_users(browser, team, first: str, second: str):
    """Two pages in two browser contexts, signed in as the team's ``first`` and ``second`` roles."""
    contexts = [browser.new_context(), browser.new_context()]
    try:
        pages = [context.new_page() for context in contexts]
        team.log_in(pages[0], first)
        team.log_in(pages[1], second)
        yield pages
    finally:
        for context in contexts:
            context.close()


def take_control(page):
    page.locator("#screen-pane").get_by_role("button", name="Take control").click()
    expect(page.locator("#screen-pane")).to_contain_text("You control this browser")
    return page.locator("#screen-pane").get_attribute("data-control-token")


def click_screen(page) -> int:
    """A click on the screen's image; the status the input endpoint answered."""
    image = page.locator("#screen-pane [data-screen-image]")
    box = image.bounding_box()
    with page.expect_response("**/screen/input/") as answer:
        # On the image itself (scrolled into view, nothing over it), away from the notices at its top.
        image.click(position={"x": box["width"] / 2, "y": box["height"] / 2})
    return answer.value.status


def test_it_hands_control_to_who_asked_and_shows_everyone_who_watches(consoles, team, browser):
    first_console, second_console = consoles
    sid = new_session(team, "handoff")
    operator, admin = team.user("operator"), team.user("admin")
    with two_users(browser, team, "operator", "admin") as (driver, asker):
        errors = watch_errors(driver) + watch_errors(asker)
        open_pane(driver, first_console.url, team, sid)
        token = take_control(driver)
        open_pane(asker, second_console.url, team, sid)
        # Presence: each page, on its own console process, lists both members with their roles.
        for page in (driver, asker):
            watchers = page.locator("[data-screen-watchers]")
            expect(watchers).to_contain_text(f"{operator} · operator · driving")
            expect(watchers).to_contain_text(f"{admin} · admin")
        expect(asker.locator("[data-screen-driver]")).to_have_text(f"{operator} is driving")
        assert post_input(asker, team, sid)["status"] == 409  # only the driver acts

        asker.locator("#screen-pane").get_by_role("button", name="Ask for control").click()
        expect(asker.locator("[data-screen-asking]")).to_have_text(f"Asked {operator} for control…")
        request = driver.locator(f"[data-request='{admin}']")
        expect(request).to_contain_text(f"{admin} (admin) asks for control")
        request.get_by_role("button", name=f"Give control to {admin}").click()

        # The asking page takes what it was given by itself; the former driver's page stops driving.
        expect(asker.locator("#screen-pane")).to_contain_text("You control this browser")
        expect(driver.locator("[data-screen-driver]")).to_have_text(f"{admin} is driving")
        expect(driver.locator("#screen-pane[data-control-token]")).to_have_count(0)
        assert click_screen(asker) == 204
        refused = post_input(driver, team, sid, token)
        assert refused["status"] == 409 and f"{admin} is driving" in refused["text"]
        assert first_console.ask("control_holder", slug=team.slug, session_id=sid)["holder"] == admin
        assert errors == []


def test_it_lets_an_admin_take_over_at_once_and_tells_the_driver(consoles, team, browser):
    first_console, second_console = consoles
    sid = new_session(team, "take-over")
    operator, admin = team.user("operator"), team.user("admin")
    with two_users(browser, team, "operator", "admin") as (driver, boss):
        open_pane(driver, first_console.url, team, sid)
        token = take_control(driver)
        open_pane(boss, second_console.url, team, sid)
        boss.once("dialog", lambda dialog: dialog.accept())
        boss.locator("#screen-pane").get_by_role("button", name="Take over").click()
        expect(boss.locator("#screen-pane")).to_contain_text("You control this browser")
        expect(boss.locator("[data-screen-notice]")).to_have_text(
            f"You took control from {operator}; they were told."
        )
        expect(driver.locator("[data-screen-notice]")).to_have_text(
            f"{admin} (an admin) took control from you."
        )
        expect(driver.locator("[data-screen-driver]")).to_have_text(f"{admin} is driving")
        expect(driver.locator("#screen-pane[data-control-token]")).to_have_count(0)
        assert post_input(driver, team, sid, token)["status"] == 409
        assert click_screen(boss) == 204


def test_it_keeps_control_across_a_console_restart_and_ends_it_at_its_expiry(
    sandbox_url, tmp_path, browser_page
):
    page = browser_page
    with running_console(sandbox_url, tmp_path) as console:
        team = console.team(new_tenant(sandbox_url, demo=True))
        sid = new_session(team, "restart")
        team.log_in(page, "operator")
        open_pane(page, console.url, team, sid)
        token = take_control(page)
    with running_console(sandbox_url, tmp_path) as console:  # the same database, a new process
        team.console = console
        open_pane(page, console.url, team, sid)
        expect(page.locator("#screen-pane")).to_contain_text("You control this browser")
        assert page.locator("#screen-pane").get_attribute("data-control-token") == token
        assert click_screen(page) == 204
        assert console.ask("expire_control", slug=team.slug, session_id=sid)["expired"] == 1
        # The page's next check-in finds the lease over: no more driving, and the screen says so.
        expect(page.locator("[data-screen-driver]")).to_have_text("Nobody is driving")
        expect(page.locator("#screen-pane[data-control-token]")).to_have_count(0)
        expect(page.locator("#screen-pane").get_by_role("button", name="Take control")).to_be_visible()
        refused = post_input(page, team, sid, token)
        assert refused["status"] == 409 and "Take control" in refused["text"]


def test_it_says_at_once_that_a_session_ended_while_watched(consoles, team, browser_page):
    page = browser_page
    sid = new_session(team, "ending")
    team.log_in(page, "operator")
    open_pane(page, consoles[0].url, team, sid)
    head = page.locator("#session-head")
    expect(head.locator(".badge--active")).to_have_text("active")
    uptime = head.locator("[data-uptime]")
    shown = uptime.inner_text()
    expect(uptime).not_to_have_text(shown)  # it ticks
    expect(page.get_by_role("link", name="Delete…")).to_be_visible()

    team.call("DELETE", f"/browsers/{sid}")
    expect(head.locator(".badge--ended")).to_have_text("ended")
    expect(head.locator(".badge--active")).to_have_count(0)
    expect(head.locator("[data-uptime]")).to_have_count(0)
    expect(page.get_by_role("link", name="Delete…")).to_have_count(0)
    expect(page.locator("#screen-pane")).to_have_attribute("data-mode", "none")
    expect(page.get_by_role("button", name="Take control")).to_have_count(0)
    expect(page.locator("#screen-pane")).to_contain_text("The session has ended.")


def test_it_picks_x_and_y_on_the_computer_pane_and_looks_again_after_an_action(consoles, team, browser_page):
    page = browser_page
    sid = new_session(team, "computer")
    team.log_in(page, "operator")
    page.goto(consoles[0].url + team.path(f"browsers/{sid}/computer/"))
    image = page.locator("[data-computer] img[data-screen]")
    expect(image).to_have_js_property("complete", True)
    border = image.evaluate("img => [img.clientLeft, img.clientTop, img.clientWidth, img.clientHeight]")
    box = image.bounding_box()
    left, top = box["x"] + border[0], box["y"] + border[1]
    # A whole CSS pixel about the middle across and a quarter down: the pointer's position is that pixel,
    # and the pick is its centre in the 1920x1080 viewport (a CSS pixel is several of the browser's here).
    at_x, at_y = math.floor(left + border[2] / 2), math.floor(top + border[3] / 4)
    page.mouse.click(at_x, at_y)
    centre_x = (at_x + 0.5 - left) * 1920 / border[2]
    centre_y = (at_y + 0.5 - top) * 1080 / border[3]
    click_form = page.locator("form[data-action='click']")
    expect(page.locator("[data-picked]")).to_contain_text("Picked (")
    x, y = (click_form.locator(f"input[name='click-{axis}']").input_value() for axis in "xy")
    assert abs(int(x) - centre_x) <= 1 and abs(int(y) - centre_y) <= 1, (x, y, centre_x, centre_y)
    expect(page.locator("[data-picked]")).to_contain_text(f"Picked ({x}, {y})")
    click_form.get_by_role("button", name="Click").click()
    expect(page.locator("[data-done]")).to_contain_text(f"click at ({x}, {y})")
    drawn = page.locator("[data-computer] img[data-screen]").get_attribute("src")
    # Once the page had time to react, the screenshot is taken again.
    expect(page.locator("[data-computer] img[data-screen]")).not_to_have_attribute("src", drawn)


def test_it_leaves_the_control_bar_as_it_is_while_nothing_changes(consoles, team, browser_page):
    """Every check-in's bar carried freshly masked CSRF tokens, so the bar was redrawn every 2 s under the
    user's pointer and focus."""
    page = browser_page
    sid = new_session(team, "steady")
    team.log_in(page, "operator")
    open_pane(page, consoles[0].url, team, sid)
    expect(page.locator("[data-screen-watchers]")).to_contain_text(team.user("operator"))  # checked in
    page.evaluate("() => { document.querySelector('[data-screen-controls]').marked = 'yes'; }")
    page.locator("#screen-pane").get_by_role("button", name="Take control").focus()
    for _ in range(2):
        with page.expect_response("**/screen/presence/"):
            pass
    assert page.evaluate("() => document.querySelector('[data-screen-controls]').marked") == "yes"
    assert page.evaluate("() => document.activeElement.textContent") == "Take control"


def test_it_takes_control_from_the_command_palette(consoles, team, browser_page):
    """The palette offers the page's own "Take control" (drawn only for those who may act) and clicks it."""
    console, page = consoles[0], browser_page
    sid = new_session(team, "palette")
    team.log_in(page, "operator")
    pane = open_pane(page, console.url, team, sid)
    expect(pane.get_by_role("button", name="Take control")).to_be_visible()
    page.keyboard.press("Control+k")
    page.keyboard.type("take control")
    expect(page.locator("#palette [role='option']").first).to_contain_text("Take control")
    page.keyboard.press("Enter")
    expect(page.locator("#screen-pane")).to_contain_text("You control this browser")
