"""One driver at a time, in Chromium: two users in two browser contexts, each on a console process of its
own sharing one database (as replicas share PostgreSQL), watching the same session's screen.

The sessions are the simulated sandbox's: the console shows them as screenshots through itself, driven by the
same control lease and input endpoint as the relayed screen (tests/browser/test_screen.py has real ones).
"""

from __future__ import annotations

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
