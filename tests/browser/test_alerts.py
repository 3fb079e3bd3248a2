"""Alerts in Chromium: the header's bell counts firing alerts and changes without a reload; the alerts page
lists them and an operator acknowledges one with a note."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def bell_count(page) -> str:
    return page.locator("#alert-bell [data-bell-count]")


def test_the_bell_counts_live_and_the_alerts_page_acknowledges(browser_page, team):
    page = browser_page
    team.console.ask("alert_rule", slug=team.slug, kind="auth_needs_human", name="Logins that need a human")
    team.log_in(page, "operator")
    page.clock.install()  # the bell's poll runs on Playwright's clock: the test moves it, never waits it out
    page.goto(team.url(""))
    expect(bell_count(page)).to_have_text("0")

    round_ = team.console.ask("evaluate_alerts", slug=team.slug)
    assert round_["firing"] >= 2, round_
    page.clock.run_for(16_000)  # one poll later, without a reload
    expect(bell_count(page)).to_have_text(str(round_["firing"]))
    expect(page.locator("#alert-bell")).to_have_class(re.compile("bell--ringing"))

    page.locator("#alert-bell").click()
    table = page.locator("#alerts-table")
    expect(table.get_by_text("support-team on mfa.example.com")).to_be_visible()
    row = table.locator("tr", has_text="support-team on mfa.example.com")
    row.get_by_role("link", name="Acknowledge…").click()
    page.get_by_label("Note").fill("Calling the support team for the SMS code")
    page.get_by_role("button", name="Acknowledge").click()
    expect(page.locator("#alert-ack")).to_contain_text("Calling the support team for the SMS code")
    expect(bell_count(page)).to_have_text(str(round_["firing"] - 1))
