"""Live lists in Chromium: a session created through the service client after the page loaded appears in
the sessions list without a reload, a row the operator ticked is left alone, and several sessions are
deleted from the list at once."""

import asyncio
import re
import secrets
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect

from console.service import Service, browsers
from tests.browser.conftest import assert_each_write_changes, watch_errors, watch_writes
from tests.browser.test_pools import set_visibility

pytestmark = pytest.mark.browser


def create_session(team, name: str) -> str:
    """Through the console's own service client, as another tool of the team would."""

    async def create() -> str:
        svc = Service(base_url=team.tenant.url, api_key=team.tenant.api_key, allow_private=True)
        return (await browsers.create_session(svc, name=name, timeout_seconds=3600)).session_id

    # Playwright's sync API holds this thread's event loop: the client runs on a thread of its own.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, create()).result()


def test_it_shows_a_new_session_without_a_reload_and_leaves_a_ticked_row_alone(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    prefix = f"live-{secrets.token_hex(3)}"
    ticked = team.call("POST", "/browsers", {"name": f"{prefix}-ticked", "timeout_seconds": 3600})
    team.log_in(page)
    page.goto(team.url(f"browsers/?q={prefix}"))
    note = page.locator("#browsers-table-live")
    expect(note).to_be_visible()
    expect(note.locator("[data-live-label]")).to_contain_text("Live · updated")
    loads = []
    page.on("load", lambda _: loads.append(page.url))
    ticked_row = page.locator(f"#session-row-{ticked['session_id']}")
    ticked_row.get_by_role("checkbox").check()
    expect(page.locator('[data-bulk-count="sessions-bulk"]')).to_have_text("1 selected")

    sid = create_session(team, f"{prefix}-new")
    row = page.locator(f"#session-row-{sid}")
    expect(row).to_be_visible(timeout=15_000)  # the 5 s poll, merged in place
    expect(row).to_have_class(re.compile(r"\blive-row--changed\b"))
    expect(row).to_contain_text(f"{prefix}-new")
    assert loads == [] and page.url.endswith(f"?q={prefix}")  # the filter stayed

    # The ticked row's session ends elsewhere: the row stays (ticked, marked), the others refresh.
    team.call("DELETE", f"/browsers/{ticked['session_id']}", {})
    expect(ticked_row).to_have_class(re.compile(r"\blive-row--gone\b"), timeout=15_000)
    expect(ticked_row.get_by_role("checkbox")).to_be_checked()
    # Let go of it: the next refresh drops it.
    ticked_row.get_by_role("checkbox").uncheck()
    page.locator("h1").click()
    expect(ticked_row).to_have_count(0, timeout=15_000)

    set_visibility(page, "hidden")
    expect(note).to_contain_text("Paused while this tab is hidden")
    set_visibility(page, "visible")
    expect(note).to_contain_text("Live · updated")
    assert loads == []
    assert errors == []


def named_sessions(team, prefix: str, count: int) -> list[str]:
    """The ids of ``count`` new sessions named ``<prefix>-<i>``, kept for an hour (a list filtered by the
    prefix shows them alone)."""
    bodies = [{"name": f"{prefix}-{i}", "timeout_seconds": 3600} for i in range(count)]
    return [team.call("POST", "/browsers", body)["session_id"] for body in bodies]


def test_it_deletes_the_selected_sessions_from_the_list(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    prefix = f"bulk-{secrets.token_hex(3)}"
    sids = named_sessions(team, prefix, 3)
    team.log_in(page)
    page.goto(team.url(f"browsers/?q={prefix}"))
    loads = []
    page.on("load", lambda _: loads.append(page.url))
    select_all = page.get_by_label("Select every active session on this page")
    select_all.check()
    expect(page.locator('[data-bulk-count="sessions-bulk"]')).to_have_text("3 selected")
    select_all.uncheck()
    expect(page.locator('[data-bulk-count="sessions-bulk"]')).to_have_text("none selected")
    boxes = page.locator('tbody input[form="sessions-bulk"]')
    boxes.first.click()
    boxes.last.click(modifiers=["Shift"])  # a range
    expect(page.locator('[data-bulk-count="sessions-bulk"]')).to_have_text("3 selected")
    page.locator(f"#session-row-{sids[2]}").get_by_role("checkbox").uncheck()
    expect(page.locator('[data-bulk-count="sessions-bulk"]')).to_have_text("2 selected")
    page.get_by_role("button", name="Delete selected…").click()

    panel = page.locator("#sessions-bulk-delete")
    expect(panel).to_contain_text("Delete 2 sessions?")
    expect(panel).to_contain_text(f"{prefix}-0")
    expect(panel).not_to_contain_text(f"{prefix}-2")
    assert team.call("GET", f"/browsers/{sids[0]}", None)["session_id"] == sids[0]  # not yet
    panel.get_by_role("button", name="Delete 2 sessions").click()
    expect(panel).to_contain_text("Deleted 2 of 2 sessions")
    # The list refreshes at once (HX-Trigger), without a reload: the deleted rows leave, the third stays.
    expect(page.locator(f"#session-row-{sids[0]}")).to_have_count(0, timeout=10_000)
    expect(page.locator(f"#session-row-{sids[1]}")).to_have_count(0)
    expect(page.locator(f"#session-row-{sids[2]}")).to_be_visible()
    expect(page.locator('[data-bulk-count="sessions-bulk"]')).to_have_text("none selected")
    panel.get_by_role("link", name="Done").click()
    expect(page.locator("#sessions-bulk-delete")).to_be_empty()
    assert loads == []
    assert errors == []


def test_it_releases_the_selected_leases_of_a_pool(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    name = f"leases-{secrets.token_hex(3)}"
    pool = team.call("POST", "/browser_pools", {"name": name, "size": 3, "fill_rate_per_minute": 100})
    team.advance(60)
    first = team.call("POST", f"/browser_pools/{pool['id']}/acquire", {"acquire_timeout_seconds": 0})
    team.log_in(page)
    page.goto(team.url(f"pools/{pool['id']}/"))
    first_row = page.locator(f"#lease-row-{first['session_id']}")
    expect(first_row).to_be_visible()
    first_row.get_by_role("checkbox").check()
    # A lease taken elsewhere shows up by itself; the ticked row keeps its tick meanwhile.
    second = team.call("POST", f"/browser_pools/{pool['id']}/acquire", {"acquire_timeout_seconds": 0})
    second_row = page.locator(f"#lease-row-{second['session_id']}")
    expect(second_row).to_be_visible(timeout=10_000)
    expect(first_row.get_by_role("checkbox")).to_be_checked()
    loads = []
    page.on("load", lambda _: loads.append(page.url))

    page.get_by_role("button", name="Release selected…").click()
    panel = page.locator("#pool-release-selected")
    expect(panel).to_contain_text("Release 1 leased browser?")
    panel.get_by_label("Return the browsers to the pool (reuse)").uncheck()
    panel.get_by_role("button", name="Release 1 browser").click()
    expect(panel).to_contain_text("Released 1 of 1 browser")
    expect(panel).to_contain_text("Destroyed; the pool warms a replacement.")
    expect(first_row).to_have_count(0, timeout=10_000)
    expect(second_row).to_be_visible()
    assert loads == []
    assert errors == []


def test_it_says_when_the_list_could_not_be_refreshed_and_recovers(team, browser_page):
    page = browser_page
    team.log_in(page)
    page.goto(team.url("invocations/"))
    label = page.locator("#invocations-table-live [data-live-label]")
    expect(label).to_contain_text("Live · updated")
    # The table is a part of its own (loaded after the page): counted once it is there.
    expect(page.locator("#invocations-table tbody tr").first).to_be_visible()
    rows = page.locator("#invocations-table tbody tr").count()
    team.fault(method="GET", path="^/invocations$", status=500, count=None)
    expect(label).to_contain_text("Not updated for", timeout=15_000)
    expect(label).to_have_attribute("data-state", "stalled")
    expect(page.locator("#invocations-table tbody tr")).to_have_count(rows)  # what was shown stays
    team.control("DELETE", "faults")
    expect(label).to_contain_text("Live · updated", timeout=15_000)
    expect(label).to_have_attribute("data-state", "live")


def test_it_refreshes_after_an_action_whose_answer_came_while_a_poll_was_on_its_way(team, browser_page):
    # The list polls every 5 s. A poll answered by the console before a bulk delete, and delivered after the
    # delete's answer asked the list to refresh, carries the rows as they were: the list must not keep
    # them (the refresh used to be dropped while a poll was in flight, and the deleted rows stayed until
    # the next poll). The period is made an hour once that poll is sent, so no later poll can mend it.
    page = browser_page
    errors = watch_errors(page)
    prefix = f"stale-{secrets.token_hex(3)}"
    sids = named_sessions(team, prefix, 2)
    team.log_in(page)
    page.goto(team.url(f"browsers/?q={prefix}"))
    for sid in sids:
        expect(page.locator(f"#session-row-{sid}")).to_be_visible()

    held = []

    def hold(route):
        if route.request.headers.get("hx-target") == "browsers-table" and not held:
            held.append(route)
        else:
            route.continue_()

    polls = re.compile(rf"{team.path()}browsers/\?q=")
    page.route(polls, hold)
    for _ in range(150):  # the next poll, held
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "the list did not poll"
    page.evaluate("document.getElementById('browsers-table-live').liveList.every = 3600 * 1000")
    stale = held[0].fetch()  # answered now, before the delete: both rows

    page.get_by_label("Select every active session on this page").check()
    expect(page.locator('[data-bulk-count="sessions-bulk"]')).to_have_text("2 selected")
    page.get_by_role("button", name="Delete selected…").click()
    panel = page.locator("#sessions-bulk-delete")
    panel.get_by_role("button", name="Delete 2 sessions").click()
    expect(panel).to_contain_text("Deleted 2 of 2 sessions")
    for sid in sids:
        expect(page.locator(f"#session-row-{sid}")).to_have_count(1)  # until the list is asked again
    held[0].fulfill(response=stale)  # the poll's answer comes after the delete's
    for sid in sids:
        expect(page.locator(f"#session-row-{sid}")).to_have_count(0, timeout=10_000)
    page.unroute(polls)
    assert errors == []


def test_it_keeps_the_rows_that_say_the_same_as_they_are_at_a_refresh(team, browser_page):
    # A young session's row says its uptime in a title: at every poll it had moved on, and every row was drawn
    # anew and highlighted (the whole list flashed every five seconds, and was laid out and animated again).
    page = browser_page
    errors = watch_errors(page)
    prefix = f"same-{secrets.token_hex(3)}"
    named_sessions(team, prefix, 3)
    page.clock.install()  # the polls wait for the test's clock (time still flows)
    team.log_in(page)
    page.goto(team.url(f"browsers/?q={prefix}"))
    expect(page.locator("#browsers-table tbody tr[id]")).to_have_count(3)
    expect(page.locator("#browsers-table-live [data-live-label]")).to_contain_text("Live · updated")
    # Sorted by name: console.js sorts a refreshed list again, and rows already in order stay where they are.
    page.locator("#browsers-table th[data-sort] > button", has_text="Session").click()
    expect(page.locator("#browsers-table th[aria-sort='ascending']")).to_have_text("Session")
    uptimes = page.evaluate(
        """() => {
            window.shownRows = [...document.querySelectorAll('#browsers-table tbody tr')];
            window.bulkForm = document.getElementById('sessions-bulk');  // its CSRF token is masked anew
            window.rowMoves = 0;
            new MutationObserver(records => { window.rowMoves += records.length; })
                .observe(document.querySelector('#browsers-table tbody'), {childList: true});
            document.addEventListener('live:merged', () => { document.body.dataset.merged = 'yes'; });
            return window.shownRows.map(row => row.querySelector('td[title^="Up "]').title);
        }"""
    )
    # A relative time is written only when it changes ("just now" stays): console.js draws the list's times
    # again after each refresh.
    said = watch_writes(page, "#browsers-table tbody tr:first-child time")
    team.advance(120)  # their uptimes move on by two minutes; nothing else about them changes
    page.clock.run_for(6_000)  # the list's next poll (every 5 s, on a 1 s tick)
    expect(page.locator("body")).to_have_attribute("data-merged", "yes")
    shown = page.evaluate(
        """() => ({
            kept: [...document.querySelectorAll('#browsers-table tbody tr')]
                .map((row, i) => row === window.shownRows[i]),
            highlighted: document.querySelectorAll('#browsers-table tr.live-row--changed').length,
            moves: window.rowMoves,
            formKept: document.getElementById('sessions-bulk') === window.bulkForm,
            uptimes: window.shownRows.map(row => row.querySelector('td[title^="Up "]').title),
        })"""
    )
    assert shown["kept"] == [True] * 3 and shown["highlighted"] == 0 and shown["moves"] == 0, shown
    assert shown["formKept"], shown
    # What moved on is said all the same, in the rows shown.
    assert all(now != then for now, then in zip(shown["uptimes"], uptimes, strict=True)), (uptimes, shown)
    assert_each_write_changes(said())

    # A new session joins the sorted list in its place.
    team.call("POST", "/browsers", {"name": f"{prefix}-0a", "timeout_seconds": 3600})
    page.clock.run_for(6_000)
    names = page.locator("#browsers-table tbody tr[id] td:nth-child(2) a.ellipsis")
    expect(names).to_have_text([f"{prefix}-{n}" for n in ("0", "0a", "1", "2")])
    assert errors == []
