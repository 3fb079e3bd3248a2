"""The Script pane of a session (console/browsers/panes/script.py): roles, bad input (nothing sent), the
service's refusal shown, the audit log with the code's hash and length and never the code; recent scripts
per member. A real run is in tests/pages/test_browser_script_chromium.py and tests/browser/test_script.py."""

import hashlib

import pytest

from console.accounts.models import AuditLog, RecentScript

LONG = 259_200
SECRET = "pw-do-not-log-1234"
CODE = f"await page.fill('#password', '{SECRET}');\nreturn 1;"


@pytest.fixture
def session(tenant):
    return tenant.call("POST", "/browsers", json={"headless": True, "timeout_seconds": LONG}).json()[
        "session_id"
    ]


def url(session, path=""):
    return f"/o/acme/browsers/{session}/{path}"


def hx(target):
    return {"HX-Request": "true", "HX-Target": target}


def executes(tenant):
    return [r for r in tenant.requests() if r["path"].endswith("/playwright/execute")]


async def test_the_session_page_links_the_script_pane_and_a_viewer_reads_it(viewer_client, session):
    page = (await viewer_client.get(url(session))).content.decode()
    assert f"/browsers/{session}/script/" in page
    pane = (await viewer_client.get(url(session, "script/"))).content.decode()
    assert "Executors" in pane and "Your recent scripts" in pane
    assert "data-script-editor" not in pane and "Operators run scripts" in pane
    assert "vendor/codemirror-5.65.21/codemirror.js" in pane


async def test_a_viewer_cannot_run_stop_or_reset(viewer_client, tenant, session):
    for path, form in (
        ("script/run/", {"code": "return 1", "executor": "default", "timeout_sec": 5}),
        ("script/stop/", {"executor": "default"}),
        ("script/reset/", {"executor": "default", "confirm": "yes"}),
    ):
        assert (await viewer_client.post(url(session, path), form)).status_code == 403
    assert executes(tenant) == []
    assert not [r for r in tenant.requests() if "/playwright/executors/" in r["path"]]


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"code": "   ", "executor": "default", "timeout_sec": 5}, "Write the code to run."),
        ({"code": "return 1", "executor": "no spaces", "timeout_sec": 5}, "letters, digits"),
        ({"code": "return 1", "executor": "x", "timeout_sec": 301}, "less than or equal to 300"),
    ],
)
async def test_it_refuses_bad_input_without_calling_the_service(
    operator_client, tenant, session, form, message
):
    response = await operator_client.post(url(session, "script/run/"), form, headers=hx("script-run"))
    assert response.status_code == 200 and message in response.content.decode()
    assert executes(tenant) == []


async def test_it_shows_the_services_refusal_and_audits_the_hash_and_length_never_the_code(
    operator_client, operator, tenant, session
):
    form = {"code": CODE, "executor": "default", "timeout_sec": 5}
    response = await operator_client.post(url(session, "script/run/"), form, headers=hx("script-run"))
    body = response.content.decode()
    assert response.status_code == 200 and "needs a real browser" in body  # the simulated engine's 409
    assert len(executes(tenant)) == 1
    row = await AuditLog.objects.aget(action="browser.playwright.execute")
    assert hashlib.sha256(CODE.encode()).hexdigest() in row.detail and f"{len(CODE)} characters" in row.detail
    assert SECRET not in row.detail
    assert [s.code async for s in RecentScript.objects.filter(user=operator)] == [CODE]


async def test_it_keeps_the_newest_scripts_of_each_member_for_them_alone(
    operator_client, admin_client, operator, session
):
    for n in range(RecentScript.KEPT + 2):
        form = {"code": f"return {n}", "executor": "default", "timeout_sec": 5}
        await operator_client.post(url(session, "script/run/"), form, headers=hx("script-run"))
    kept = [s.code async for s in RecentScript.objects.filter(user=operator).order_by("-ran_at", "-pk")]
    assert kept == [f"return {n}" for n in range(RecentScript.KEPT + 1, 1, -1)]
    mine = (await operator_client.get(url(session, "script/"))).content.decode()
    assert "return 11" in mine
    theirs = (await admin_client.get(url(session, "script/"))).content.decode()
    assert "return 11" not in theirs


async def test_a_reset_asks_for_confirmation_first(operator_client, tenant, session):
    asked = await operator_client.post(
        url(session, "script/reset/"), {"executor": "default"}, headers=hx("script-executors")
    )
    assert asked.status_code == 200
    assert not [r for r in tenant.requests() if r["method"] == "DELETE" and "/executors/" in r["path"]]
