"""Credential vault in Chromium: key/value rows added and removed by credentials.js, and the TOTP code's
countdown, which re-fetches the code when it expires."""

import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import assert_each_write_changes, watch_writes

pytestmark = pytest.mark.browser

PASSWORD = "browser-leak-probe-Pw-91x"
SECRET = "MFRGG43FMZXXIZLSMFZW63LFNBQXG2DP"


def test_it_adds_and_removes_value_rows_and_never_shows_a_value(team, browser_page):
    page = browser_page
    errors = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    team.log_in(page)
    name = f"browser-{uuid.uuid4().hex[:8]}"

    page.goto(team.url("credentials/new/"))
    rows = page.locator("#new-value-rows [data-value-row]")
    expect(rows).to_have_count(3)
    page.get_by_role("button", name="Add a value").click()
    expect(rows).to_have_count(4)
    rows.nth(3).get_by_role("button", name="Remove").click()
    rows.nth(2).get_by_role("button", name="Remove").click()
    expect(rows).to_have_count(2)
    page.get_by_role("button", name="Add a value").click()
    expect(rows.nth(2).locator("input[name=new_key]")).to_be_focused()

    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Domain").fill("not a domain")
    rows.nth(0).locator("input[name=new_key]").fill("username")
    rows.nth(0).locator("input[name=new_value]").fill("ci-bot")
    rows.nth(1).locator("input[name=new_key]").fill("password")
    rows.nth(1).locator("input[name=new_value]").fill(PASSWORD)
    rows.nth(2).locator("input[name=new_key]").fill("pin")
    rows.nth(2).locator("input[name=new_value]").fill("4711")
    page.get_by_label("TOTP secret").fill(SECRET)
    page.get_by_role("button", name="Save credential").click()

    # Re-rendered by htmx: names kept, values and the secret gone, the JS buttons working again.
    expect(page.get_by_text("bare host name")).to_be_visible()
    assert PASSWORD not in page.content() and SECRET not in page.content()
    expect(rows).to_have_count(4)  # the three typed names and a blank row
    expect(rows.nth(2).locator("input[name=new_key]")).to_have_value("pin")
    expect(rows.nth(2).locator("input[name=new_value]")).to_have_value("")
    rows.nth(2).get_by_role("button", name="Remove").click()
    expect(rows).to_have_count(3)

    page.get_by_label("Domain").fill("github.com")
    rows.nth(0).locator("input[name=new_value]").fill("ci-bot")
    rows.nth(1).locator("input[name=new_value]").fill(PASSWORD)
    page.get_by_label("TOTP secret").fill(SECRET)
    page.get_by_role("button", name="Save credential").click()

    expect(page.get_by_role("heading", level=1)).to_have_text(name)
    expect(page.locator("#credential-values code")).to_have_text(["username", "password"])
    assert PASSWORD not in page.content()
    assert errors == []


def test_it_counts_down_the_code_and_fetches_the_next_one_at_expiry(team, browser_page):
    page = browser_page
    errors = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.clock.install()
    team.log_in(page)

    page.goto(team.url("credentials/github-ci/"))
    page.get_by_role("link", name="Show current code").click()
    code = page.locator("#totp-value")
    expect(code).to_have_text(re.compile(r"^\d{6}$"))
    countdown = page.locator("[data-totp-seconds]")
    first = int(countdown.get_attribute("data-totp-seconds"))
    if first >= 3:  # else the code expires before a tick can be seen
        page.clock.run_for(1000)
        expect(countdown).to_have_text(f"{first - 1} s")
        # Its four ticks a second write the figure only when it changes.
        said = watch_writes(page, "[data-totp-seconds]")
        page.clock.run_for(1000)
        expect(countdown).to_have_text(f"{first - 2} s")
        assert_each_write_changes(said())

    with page.expect_response(re.compile(r"/totp/\?n=1$")):
        page.clock.run_for((first + 1) * 1000)
    expect(page.locator("#totp-code")).to_have_attribute("hx-get", re.compile(r"\?n=2$"))
    expect(code).to_have_text(re.compile(r"^\d{6}$"))
    assert errors == []
