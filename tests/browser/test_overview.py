"""The overview at desktop and phone widths, updating by its light poll; a page whose service call is slow
shows its frame at once and the data after; a part that failed comes back with Retry. Polled parts ask once
per poll (the wall's badges)."""

import re
import secrets

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Held, settle, watch_errors

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 400, "height": 860}


class HeldPart(Held):
    """The page's request for its deferred part ``part_id``, held until ``release`` (with the service's
    slowness alone, a frame that came late on a loaded machine could find the part already swapped in)."""

    def __init__(self, page, part_id: str):
        super().__init__(page, re.compile(rf"\?part={part_id}$"))


def test_it_shows_live_figures_and_updates_them_after_the_poll(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    page.set_viewport_size(DESKTOP)
    team.log_in(page)
    page.goto(team.url())
    running = page.locator('[data-figure="running-sessions"]')
    expect(running).to_be_visible()
    before = int(running.inner_text().rstrip("+"))
    expect(page.locator("#card-pools .capacity").first).to_be_visible()
    expect(page.locator("#card-usage svg.ov-bars")).to_have_count(2)
    expect(page.locator("#card-auth [data-figure='needs-auth']")).to_be_visible()
    expect(page.locator("#card-invocations [data-figure='failed-invocations']")).to_be_visible()
    expect(page.locator("#card-sessions h2 a")).to_have_attribute(
        "href", team.path("browsers/?status=active")
    )

    team.call("POST", "/browsers", {"name": f"overview-{secrets.token_hex(3)}"})
    loads = []
    page.on("load", lambda _: loads.append(page.url))
    expect(running).to_have_text(str(before + 1), timeout=15_000)  # the 10 s poll, in place
    assert loads == []
    assert errors == []


def test_it_fits_a_phone(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    page.set_viewport_size(PHONE)
    team.log_in(page)
    page.goto(team.url())
    expect(page.locator('[data-figure="running-sessions"]')).to_be_visible()
    expect(page.locator("#card-usage svg.ov-bars").first).to_be_visible()
    cards = ("#card-sessions", "#card-pools", "#card-usage", "#card-telemetry")
    for card in cards:  # every card loaded (its placeholder is swapped out: a box measured then is lost)
        expect(page.locator(f"section{card}.ov-card")).to_be_visible()
    # Measured in one step in the page, so that a poll swapping a card meanwhile cannot detach it.
    boxes = page.evaluate(
        "cards => cards.map(c => { const r = document.querySelector(c).getBoundingClientRect();"
        " return [c, r.x, r.width]; })",
        list(cards),
    )
    for card, x, width in boxes:
        assert width > 0 and x >= 0 and x + width <= PHONE["width"], (card, x, width)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert errors == []


def test_it_shows_a_slow_pages_frame_at_once_and_its_data_after(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    team.log_in(page)
    name = f"slow-{secrets.token_hex(3)}"
    pool = team.call("POST", "/browser_pools", {"name": name, "size": 1})
    path = f"/browser_pools/{pool['id']}"
    team.fault(method="GET", path=f"^{path}$", latency_ms=3000, count=1)
    part = HeldPart(page, "pool-detail")

    page.goto(team.url(f"pools/{pool['id']}/"))
    expect(page.locator("#pool-detail.deferred-loading")).to_contain_text("Loading")
    expect(page.get_by_role("link", name="Browser pools").last).to_be_visible()
    # The frame came without the slow call: the service has not been asked for the pool yet.
    asked = team.tenant.requests()
    assert [r for r in asked if r["method"] == "GET" and r["path"] == path] == []
    part.release()
    expect(page.get_by_role("heading", name=name)).to_be_visible(timeout=15_000)
    expect(page.locator("#pool-leases")).to_contain_text("No browser of this pool is leased")
    assert errors == []


def test_it_retries_a_part_that_failed(team, browser_page):
    page = browser_page
    team.log_in(page)
    name = f"flaky-{secrets.token_hex(3)}"
    pool = team.call("POST", "/browser_pools", {"name": name, "size": 1})
    # A GET is tried three times on a 503: fail all three, then answer.
    team.fault(method="GET", path=f"^/browser_pools/{pool['id']}$", status=503, count=3)

    page.goto(team.url(f"pools/{pool['id']}/"))
    failed = page.locator("#pool-detail.deferred-failed")
    expect(failed).to_contain_text("Service unavailable", timeout=10_000)
    page.get_by_role("link", name="Retry").click()
    expect(page.get_by_role("heading", name=name)).to_be_visible(timeout=10_000)
    expect(page.locator("#pool-detail.deferred-failed")).to_have_count(0)


# Each answer the wall's badges part gets, counted on <body> once htmx has it, before it is swapped in or left
# out as the same as before (an init script: it listens before htmx runs).
COUNT_BADGE_ANSWERS = """document.addEventListener('htmx:beforeSwap', event => {
  if (event.detail.target.id !== 'wall-badges') return;
  document.body.dataset.badgeAnswers = String(Number(document.body.dataset.badgeAnswers || 0) + 1);
});"""


def test_it_asks_for_the_wall_s_badges_once_drawn_then_once_a_poll(team, browser_page):
    # The badges part was drawn to load once; the part as answered asked again as soon as it was swapped in,
    # in a loop (every tile's telemetry, about six times a second, while the wall was open).
    page = browser_page
    errors = watch_errors(page)
    asked = []
    page.on("request", lambda request: "/wall/badges/" in request.url and asked.append(request.url))
    page.add_init_script(COUNT_BADGE_ANSWERS)
    page.clock.install()  # the polls wait for the test's clock (time still flows)
    team.log_in(page)
    page.goto(team.url("browsers/wall/"))
    body = page.locator("body")
    expect(body).to_have_attribute("data-badge-answers", re.compile(r"^[1-9]"))
    settle(page)  # the part swapped in (with the answer, in the same task) has asked whatever it asks at once
    assert len(asked) == 1, asked

    page.clock.run_for(16_000)  # BADGE_SECONDS (15) and pools.js's tick
    expect(body).to_have_attribute("data-badge-answers", re.compile(r"^([2-9]|\d\d)"))
    settle(page)
    assert len(asked) == 2, asked
    assert errors == []


def test_it_swaps_a_polled_card_only_when_its_answer_changed(team, browser_page):
    # Every card was swapped at every poll (every 10 s), the same as it was: each swap laid the page out and
    # drew the card again.
    page = browser_page
    errors = watch_errors(page)
    page.clock.install()  # the polls wait for the test's clock (time still flows)
    team.log_in(page)
    page.goto(team.url())
    expect(page.locator(".deferred-loading")).to_have_count(0)
    running = page.locator('[data-figure="running-sessions"]')
    before = int(running.inner_text().rstrip("+"))
    cards = page.evaluate(
        """() => {
            window.shownCards = [...document.querySelectorAll('.overview > [data-poll][id]')];
            // What a card says, to its tooltips (the charts' hour labels move on with the minute), a CSRF
            // token masked anew aside.
            window.said = card => card.innerHTML.replace(/name="csrfmiddlewaretoken" value="[^"]*"/g, "");
            window.shownHtml = Object.fromEntries(window.shownCards.map(c => [c.id, window.said(c)]));
            window.answers = 0;
            document.addEventListener('htmx:beforeSwap', event => {
                if (event.detail.requestConfig.elt.hasAttribute('data-poll')) window.answers += 1;
            });
            return window.shownCards.map(card => card.id);
        }"""
    )
    assert len(cards) >= 7, cards
    replaced = "() => window.shownCards.filter(card => !document.body.contains(card)).map(card => card.id)"
    # A card whose answer changed meanwhile (the service's data moved on, a chart's hour labels with the
    # minute) is rightly replaced.
    changed = """() => window.shownCards
        .filter(card => window.said(document.getElementById(card.id)) !== window.shownHtml[card.id])
        .map(card => card.id)"""

    page.clock.run_for(11_000)  # one poll of each card: nothing changed
    page.wait_for_function(f"() => window.answers >= {len(cards)}")
    settle(page)
    swapped, moved_on = page.evaluate(replaced), page.evaluate(changed)
    assert set(swapped) <= set(moved_on), (swapped, moved_on)
    assert len(moved_on) <= 1, moved_on  # the test's tenant holds still (its demo seeds no change)

    team.call("POST", "/browsers", {"name": f"overview-{secrets.token_hex(3)}"})
    page.clock.run_for(10_000)  # the next poll: a session more
    expect(running).to_have_text(str(before + 1))
    page.wait_for_function(f"() => window.answers >= {2 * len(cards)}")
    settle(page)
    assert "card-sessions" in page.evaluate(replaced)
    assert errors == []
