"""The Script pane in Chromium, against a sandbox whose sessions are real Chromium: Playwright code run in
the session's executors from the console (the shop's checkout error read back, a timeout, an error's line
marked in the editor, two executors at once, a run stopped), and a viewer who cannot run."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import running_console, watch_errors
from tests.sandbox_fixtures import new_tenant, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.chromium]

CHECKOUT = """await page.goto('https://shop.example.com/checkout');
await page.click('#pay');
await page.waitForSelector('#status:not(:empty)');
return await page.textContent('#status');"""


@pytest.fixture(scope="module")
def real_console(chromium_sandbox, tmp_path_factory):
    with running_console(chromium_sandbox[0], tmp_path_factory.mktemp("script-console")) as console:
        yield console


@pytest.fixture
def real_team(real_console):
    return real_console.team(new_tenant(real_console.sandbox_url))


@pytest.fixture
def session(real_team):
    body = {
        "name": f"script-{uuid.uuid4().hex[:6]}",
        "headless": True,
        "viewport": {"width": 640, "height": 480},
        "timeout_seconds": 3600,
    }
    sid = real_team.call("POST", "/browsers", body, timeout=60)["session_id"]
    yield sid
    real_team.tenant.call("DELETE", f"/browsers/{sid}", timeout=30)


def open_script(page, team, sid):
    page.goto(team.url(f"browsers/{sid}/script/"))
    expect(page.locator("#script-run .CodeMirror")).to_be_visible()


def run(page, code: str, *, executor: str = "default", timeout: int = 30) -> None:
    page.evaluate(
        "(code) => document.querySelector('#script-run .CodeMirror').CodeMirror.setValue(code)", code
    )
    page.fill("#script-run input[name=executor]", executor)
    page.fill("#script-run input[name=timeout_sec]", str(timeout))
    page.get_by_role("button", name="Run").click()


@pytest.mark.timeout(240)
def test_it_runs_a_script_that_reads_the_checkout_error_and_marks_an_errors_line(
    real_team, session, browser_page
):
    team, page = real_team, browser_page
    errors = watch_errors(page)
    team.log_in(page, "operator")
    open_script(page, team, session)
    assert page.locator("#script-run .CodeMirror .cm-keyword").count() > 0  # highlighted
    run(page, CHECKOUT)
    expect(page.locator("#script-value")).to_contain_text(
        "Shipping is unavailable right now.", timeout=60_000
    )
    expect(page.locator("#script-result")).to_have_attribute("data-success", "true")
    expect(page.locator("#script-recent")).to_contain_text("shop.example.com/checkout")
    run(page, "const a = 1;\nnull.boom;\nreturn a;")
    expect(page.locator("#script-result .script-error-at")).to_have_text("Line 2, column 6", timeout=60_000)
    expect(page.locator("#script-error")).to_contain_text("TypeError")
    expect(page.locator("#script-run .CodeMirror .script-error-line")).to_have_count(1)
    assert errors == []


@pytest.mark.timeout(240)
def test_a_script_that_times_out_and_a_run_that_is_stopped_fail_and_say_so(real_team, session, browser_page):
    team, page = real_team, browser_page
    team.log_in(page, "operator")
    open_script(page, team, session)
    run(page, "return 1")  # the executor starts and connects: the timeout below is the code's alone
    expect(page.locator("#script-value")).to_have_text("1", timeout=60_000)
    run(page, "console.log('waiting');\nawait new Promise(() => {});", timeout=3)
    expect(page.locator("#script-error")).to_contain_text("did not finish within 3 s", timeout=60_000)
    expect(page.locator("#script-stdout")).to_contain_text("waiting")
    run(page, "await new Promise(() => {});", timeout=120)
    expect(page.locator("#script-run .script-running")).to_be_visible()
    wait_until(
        lambda: team.call("GET", f"/browsers/{session}/playwright/executors")["executors"][0]["busy"],
        what="the run to start on the executor",
    )
    page.get_by_role("button", name="Stop").click()
    expect(page.locator("#script-error")).to_contain_text("restarted", timeout=60_000)


@pytest.mark.timeout(300)
def test_two_executors_run_at_once(real_team, session, browser_page):
    team, first = real_team, browser_page
    second = first.context.new_page()
    team.log_in(first, "operator")
    waits = (
        "await page.goto('https://docs.example.com/');\n"
        "await page.evaluate(() => localStorage.setItem('{me}', '1'));\n"
        # Polled on a timer: the default (animation frames) stops in a tab the browser shows behind another.
        "await page.waitForFunction(() => localStorage.getItem('{other}'), null,\n"
        "  {{polling: 100, timeout: 90000}});\n"
        "return '{me}';"
    )
    for page in (first, second):
        open_script(page, team, session)
    # Each waits for the other's mark in the shared browser: both finish only if they run at once.
    run(first, waits.format(me="a", other="b"), executor="a", timeout=120)
    run(second, waits.format(me="b", other="a"), executor="b", timeout=120)
    expect(first.locator("#script-value")).to_have_text('"a"', timeout=120_000)
    expect(second.locator("#script-value")).to_have_text('"b"', timeout=120_000)
    second.reload()
    rows = second.locator("#script-executors tr[data-executor]")
    expect(rows).to_have_count(3)


def test_a_viewer_cannot_run(real_team, session, browser_page):
    team, page = real_team, browser_page
    team.log_in(page, "viewer")
    page.goto(team.url(f"browsers/{session}/script/"))
    expect(page.locator("#script-executors")).to_be_visible()
    expect(page.get_by_role("button", name="Run")).to_have_count(0)
    expect(page.locator(".read-only-note")).to_contain_text("Operators run scripts")
    status = page.evaluate(
        """async (url) => {
            const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
            const body = new URLSearchParams({code: 'return 1', executor: 'default', timeout_sec: '5'});
            const response = await fetch(url, {method: 'POST', body, headers: {'X-CSRFToken': token}});
            return response.status;
        }""",
        team.path(f"browsers/{session}/script/run/"),
    )
    assert status == 403
    assert not [r for r in team.tenant.requests() if r["path"].endswith("/playwright/execute")]
