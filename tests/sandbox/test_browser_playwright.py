"""Playwright code and the REPL next to a real session (console/sandbox/resources/browser_playwright.py):
each executor a confined Node.js process with its own CDP connection; one at a time per executor,
concurrently across executors; a timeout or crash in one leaves the others alone."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.sandbox.test_chromium import create
from tests.sandbox_fixtures import new_tenant

pytestmark = pytest.mark.chromium


def run(tenant, session_id, code, **body):
    response = tenant.call(
        "POST", f"/browsers/{session_id}/playwright/execute", json={"code": code, **body}, timeout=120
    )
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def session(chromium_sandbox):
    url, _ = chromium_sandbox
    tenant = new_tenant(url)
    record = create(tenant)
    yield tenant, record["session_id"]
    tenant.call("DELETE", f"/browsers/{record['session_id']}", timeout=60)


@pytest.mark.timeout(240)
def test_it_runs_playwright_code_against_the_session_and_answers_its_value_and_output(session):
    tenant, session_id = session
    answer = run(
        tenant,
        session_id,
        "await page.goto('https://shop.example.com/checkout');\n"
        "console.log('at', page.url());\n"
        "await page.click('#pay');\n"
        "await page.waitForSelector('#status:not(:empty)');\n"
        "return await page.textContent('#status');",
    )
    assert answer["success"], answer
    assert answer["result"]
    assert "at https://shop.example.com/checkout" in answer["stdout"]
    assert answer["tab"]["target_id"] and answer["tab"]["created"] is False
    failed = run(tenant, session_id, "const a = 1;\nnull.boom;")
    assert failed["success"] is False and "TypeError" in failed["error"] and "script.js:2" in failed["error"]
    executors = tenant.call("GET", f"/browsers/{session_id}/playwright/executors").json()["executors"]
    assert [e["name"] for e in executors] == ["default"]


@pytest.mark.timeout(240)
def test_a_timeout_or_crash_in_one_executor_leaves_another_running_and_named_executors_run_together(session):
    tenant, session_id = session
    assert run(tenant, session_id, "return 1", executor="a")["tab"]["created"] is True
    assert run(tenant, session_id, "return 1", executor="b")["result"] == 1
    with ThreadPoolExecutor(2) as pool:
        started = time.monotonic()
        # Each waits for the other's mark in the shared browser: only possible if both run at once.
        mark = "await page.evaluate(() => localStorage.setItem('{me}', '1')).catch(() => {{}});"
        a = pool.submit(
            run,
            tenant,
            session_id,
            "await page.goto('https://docs.example.com/');"
            + mark.format(me="a")
            + "await page.waitForFunction(() => localStorage.getItem('b'), null, {timeout: 60000});"
            "return 'a';",
            executor="a",
        )
        b = pool.submit(
            run,
            tenant,
            session_id,
            "await page.goto('https://docs.example.com/');"
            + mark.format(me="b")
            + "await page.waitForFunction(() => localStorage.getItem('a'), null, {timeout: 60000});"
            "return 'b';",
            executor="b",
        )
        assert (a.result()["result"], b.result()["result"]) == ("a", "b"), (a.result(), b.result())
    assert time.monotonic() - started < 120
    timed_out = run(
        tenant, session_id, "console.log('before'); await new Promise(() => {});", executor="a", timeout_sec=2
    )
    assert timed_out["success"] is False and "timeout_sec" in timed_out["error"]
    assert "before" in timed_out["stdout"]
    crashed = run(tenant, session_id, "process.exit(3)", executor="b")
    assert crashed["success"] is False and "exit code 3" in crashed["error"]
    assert run(tenant, session_id, "return page.url()", executor="a")["result"].startswith("https://docs.")
    assert run(tenant, session_id, "return 2", executor="b")["result"] == 2
    names = [
        e["name"]
        for e in tenant.call("GET", f"/browsers/{session_id}/playwright/executors").json()["executors"]
    ]
    assert names == ["default", "a", "b"]
    assert tenant.call("DELETE", f"/browsers/{session_id}/playwright/executors/a").status_code == 204
    assert tenant.call("DELETE", f"/browsers/{session_id}/playwright/executors/a").status_code == 404


@pytest.mark.timeout(240)
def test_named_executors_started_together_each_get_their_own_tab(session):
    """Executors whose first calls arrive at once each open a tab, and each call's ``page`` is its own tab
    (the one the answer names), not a tab another executor opened at the same moment."""
    tenant, session_id = session
    own_tab = (
        "const cdp = await page.context().newCDPSession(page);\n"
        "const { targetInfo } = await cdp.send('Target.getTargetInfo');\n"
        "await cdp.detach();\n"
        "return targetInfo.targetId;"
    )
    names = ["one", "two", "three", "four"]
    with ThreadPoolExecutor(len(names)) as pool:
        answers = list(pool.map(lambda name: run(tenant, session_id, own_tab, executor=name), names))
    for answer in answers:
        assert answer["success"] and answer["tab"]["created"] is True, answer
        assert answer["result"] == answer["tab"]["target_id"], answer
    assert len({answer["result"] for answer in answers}) == len(names)


@pytest.mark.timeout(120)
def test_the_code_has_no_network_and_no_host_tree(session):
    tenant, session_id = session
    answer = run(
        tenant,
        session_id,
        "const fs = require('fs');\n"
        "const net = require('net');\n"
        "const reached = await new Promise((resolve) => {\n"
        "  const s = net.connect(80, '1.1.1.1', () => resolve(true));\n"
        "  s.on('error', () => resolve(false));\n"
        "});\n"
        "return {reached, work: fs.existsSync('/work'), uid: process.getuid()};",
    )
    assert answer["success"], answer
    assert answer["result"]["reached"] is False and answer["result"]["work"] is False
    assert answer["result"]["uid"] != 0


def test_a_simulated_session_refuses_playwright_code(tenant):
    record = tenant.call("POST", "/browsers", json={"headless": True}).json()
    response = tenant.call(
        "POST", f"/browsers/{record['session_id']}/playwright/execute", json={"code": "return 1"}
    )
    assert response.status_code == 409 and response.json()["code"] == "browser_unavailable"
    response = tenant.call("POST", f"/browsers/{record['session_id']}/playwright/execute", json={"code": ""})
    assert response.status_code == 400
