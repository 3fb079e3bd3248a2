"""Managed-auth logins in a real browser (console/sandbox/resources/login_browser.py): under the Chromium
engine a login flow runs in a session of its own, mirrored into the real login site, shown by the live view,
recorded from the page's screencast. These flows move in real time (the driver settles them), so the tests
wait on the flow's state rather than moving the tenant clock."""

from __future__ import annotations

import json
import subprocess
import time

import httpx
import pytest
from playwright.sync_api import sync_playwright
from websockets.sync.client import connect

from tests.sandbox_fixtures import new_tenant

pytestmark = pytest.mark.chromium


@pytest.fixture
def real(chromium_sandbox):
    tenant = new_tenant(chromium_sandbox[0])
    yield tenant
    for connection in tenant.call("GET", "/auth/connections").json():
        tenant.call("DELETE", f"/auth/connections/{connection['id']}")
    for session in tenant.call("GET", "/browsers", params={"limit": 100}).json():
        tenant.call("DELETE", f"/browsers/{session['session_id']}", timeout=30)


def until(check, seconds=30.0, what="the condition"):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def connection(tenant, cid):
    response = tenant.call("GET", f"/auth/connections/{cid}")
    assert response.status_code == 200, response.text
    return response.json()


def start(tenant, domain, **body):
    created = tenant.call("POST", "/auth/connections", json={"domain": domain, "profile_name": "ops", **body})
    assert created.status_code == 201, created.text
    cid = created.json()["id"]
    flow = tenant.call("POST", f"/auth/connections/{cid}/login", json={})
    assert flow.status_code == 200, flow.text
    return cid, flow.json()


def waiting(tenant, cid, step="AWAITING_INPUT", **match):
    def check():
        record = connection(tenant, cid)
        if record["flow_step"] == step and all(record.get(k) == v for k, v in match.items()):
            return record
        return None

    return until(check, what=f"{step} {match}")


def answer(tenant, record, **values):
    body = {"interaction_id": record["interaction_id"], "field_values": values}
    assert tenant.call("POST", f"/auth/connections/{record['id']}/submit", json=body).status_code == 200


def choose(tenant, record, choice):
    body = {"interaction_id": record["interaction_id"], "selected_choice_id": choice}
    assert tenant.call("POST", f"/auth/connections/{record['id']}/submit", json=body).status_code == 200


def finished(tenant, cid):
    return until(lambda: (r := connection(tenant, cid))["flow_status"] != "IN_PROGRESS" and r, what="the end")


def frame_at(path, moment: str, width: int, height: int) -> bytes:
    """One decoded frame of a video (RGB24), ``moment`` as ffmpeg's -ss or -sseof takes it."""
    seek = ["-sseof", moment] if moment.startswith("-") else ["-ss", moment]
    decoded = subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            *seek,
            "-i",
            str(path),
            "-frames:v",
            "1",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-",
        ],
        capture_output=True,
        check=True,
    ).stdout
    assert len(decoded) == width * height * 3
    return decoded


def rgb(frame: bytes, width: int, x: int, y: int) -> tuple[int, int, int]:
    start = (y * width + x) * 3
    return tuple(frame[start : start + 3])


def test_it_records_a_login_from_the_real_page_and_ends_its_session(real, tmp_path):
    cid, flow = start(real, "plain.example.com", record_session=True)
    sid = flow["live_view_url"].split("/_sandbox/live/")[1].split("?")[0]
    session = real.call("GET", f"/browsers/{sid}").json()
    assert session["tags"] == {"auth_connection": cid} and session["sandbox"]["engine"] == "chromium"
    until(lambda: real.call("GET", f"/browsers/{sid}/replays").json(), what="the recording")

    # The live view of the flow in progress is the session's real screencast (read-only).
    assert (
        "readOnly=true" in flow["live_view_url"] and "<img id=screen" in httpx.get(flow["live_view_url"]).text
    )
    socket_url = flow["live_view_url"].replace("http", "ws", 1).replace("?", "/ws?", 1)
    with connect(socket_url, open_timeout=20) as socket:
        assert socket.recv(timeout=20)[:2] == b"\xff\xd8"
    hosted = httpx.get(flow["hosted_url"])
    assert "<iframe" in hosted.text and f"/_sandbox/live/{sid}?" in hosted.text

    record = waiting(real, cid)
    answer(real, record, email="ops@acme.example", password="wrong-password")
    record = waiting(real, cid, website_error="Incorrect password. Try again.")
    answer(real, record, email="ops@acme.example", password="pw-ok")
    assert finished(real, cid)["flow_status"] == "SUCCESS"

    entry = real.call("GET", f"/auth/connections/{cid}/timeline").json()[0]
    assert entry["browser_session_id"] == sid and entry["replay_id"].startswith("rep_")
    ended = until(
        lambda: (
            (s := real.call("GET", f"/browsers/{sid}", params={"include_deleted": "true"}).json()).get(
                "deleted_at"
            )
            and s
        ),
        what="the session's end",
    )
    assert ended["deleted_at"] == entry["updated_at"]
    assert sid not in [s["session_id"] for s in real.call("GET", "/browsers").json()]
    replay = until(
        lambda: [r for r in real.call("GET", f"/browsers/{sid}/replays").json() if r.get("finished_at")],
        seconds=60,
        what="the encoded replay",
    )[0]
    assert replay["replay_id"] == entry["replay_id"]
    video = real.call("GET", f"/browsers/{sid}/replays/{replay['replay_id']}", timeout=60)
    assert video.status_code == 200 and video.headers["content-type"] == "video/mp4"
    path = tmp_path / "login.mp4"
    path.write_bytes(video.content)
    probe = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-show_entries",
            "stream=codec_name,width,height",
            "-of",
            "json",
            str(path),
        ],
        capture_output=True,
        check=True,
        text=True,
    )
    stream = json.loads(probe.stdout)["streams"][0]
    assert (stream["codec_name"], stream["width"], stream["height"]) == ("h264", 1280, 800)
    # Frames of the page itself: the site's white page with dark text (a drawn card was a dark slate).
    first, last = frame_at(path, "0", 1280, 800), frame_at(path, "-0.3", 1280, 800)
    for frame in (first, last):
        assert min(rgb(frame, 1280, 1270, 790)) > 240
        assert any(max(rgb(frame, 1280, x, y)) < 80 for x in range(24, 400, 2) for y in range(30, 100, 2))
    assert first != last  # the login form first, the signed-in page at the end


def test_it_mirrors_each_step_of_the_flow_into_the_real_site(real):
    cid, flow = start(real, "mfa.example.com")
    sid = flow["live_view_url"].split("/_sandbox/live/")[1].split("?")[0]
    cdp = real.call("GET", f"/browsers/{sid}").json()["cdp_ws_url"]
    record = waiting(real, cid)
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(cdp, timeout=20_000)
        try:

            def shown():
                page = browser.contexts[0].pages[0]
                try:
                    return page.evaluate(
                        "() => [document.querySelector('input[name=step]')?.value ?? null, "
                        "document.body.innerText]"
                    )
                except Exception:  # mid-navigation
                    return [None, ""]

            until(lambda: shown()[0] == "login", what="the login page")
            answer(real, record, email="ops@acme.example", password="pw-ok")
            record = until(
                lambda: (r := connection(real, cid))["flow_step"] == "AWAITING_INPUT" and r["choices"] and r,
                what="the choice of a second factor",
            )
            until(lambda: shown()[0] == "mfa", what="the MFA choice page")
            choose(real, record, "mfa_sms")
            record = waiting(real, cid)
            until(lambda: shown()[0] == "sms", what="the SMS code page")
            answer(real, record, sms_code="000000")
            record = waiting(real, cid, website_error="That code didn't work. Check the code and try again.")
            until(lambda: (s := shown())[0] == "sms" and "That code didn't work" in s[1], what="the error")
            answer(real, record, sms_code="482913")
            assert finished(real, cid)["flow_status"] == "SUCCESS"
        finally:
            browser.close()
    entry = real.call("GET", f"/auth/connections/{cid}/timeline").json()[0]
    assert "replay_id" not in entry
    assert real.call("GET", f"/browsers/{sid}/replays").json() == []


def test_it_keeps_the_flow_going_when_its_page_is_closed(real):
    cid, flow = start(real, "plain.example.com", record_session=True)
    sid = flow["live_view_url"].split("/_sandbox/live/")[1].split("?")[0]
    cdp = real.call("GET", f"/browsers/{sid}").json()["cdp_ws_url"]
    until(lambda: real.call("GET", f"/browsers/{sid}/replays").json(), what="the recording")
    record = waiting(real, cid)
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(cdp, timeout=20_000)
        try:
            browser.contexts[0].pages[0].close()
            answer(real, record, email="ops@acme.example", password="pw-ok")
            assert finished(real, cid)["flow_status"] == "SUCCESS"
        finally:
            browser.close()
    assert connection(real, cid)["status"] == "AUTHENTICATED"
    entry = real.call("GET", f"/auth/connections/{cid}/timeline").json()[0]
    assert entry["status"] == "SUCCESS" and entry["replay_id"]
    # The recording held the closed page's last frame and still ends, encoded, with the flow.
    replays = until(
        lambda: [r for r in real.call("GET", f"/browsers/{sid}/replays").json() if r.get("finished_at")],
        seconds=60,
        what="the encoded replay",
    )
    assert [r["replay_id"] for r in replays] == [entry["replay_id"]]
    session = real.call("GET", f"/browsers/{sid}", params={"include_deleted": "true"}).json()
    assert session["deleted_at"] == entry["updated_at"]


def test_it_keeps_the_flow_going_when_its_session_is_deleted(real):
    cid, flow = start(real, "plain.example.com")
    sid = flow["live_view_url"].split("/_sandbox/live/")[1].split("?")[0]
    record = waiting(real, cid)
    assert real.call("DELETE", f"/browsers/{sid}", timeout=30).status_code == 204
    answer(real, record, email="ops@acme.example", password="pw-ok")
    assert finished(real, cid)["flow_status"] == "SUCCESS"
    assert connection(real, cid)["status"] == "AUTHENTICATED"


def navigations(tenant, sid) -> list[str]:
    response = tenant.call(
        "GET", f"/browsers/{sid}/telemetry/events", params={"limit": 100, "category": "page", "since": "1h"}
    )
    assert response.status_code == 200, response.text
    return [
        e["event"]["data"].get("url", "") for e in response.json() if e["event"]["type"] == "page_navigation"
    ]


def test_it_moves_the_site_past_its_push_page_when_the_flow_is_approved(real):
    cid, flow = start(real, "push.example.com")
    sid = flow["live_view_url"].split("/_sandbox/live/")[1].split("?")[0]
    record = waiting(real, cid)
    answer(real, record, email="ops@acme.example", password="pw-ok")
    waiting(real, cid, step="AWAITING_EXTERNAL_ACTION")
    real.advance(21)  # the phone approves on the tenant clock; the site's own timer runs on real time
    assert finished(real, cid)["flow_status"] == "SUCCESS"
    # The session's own telemetry (its page category): the real site went from its form to the signed-in page.
    seen = until(
        lambda: (urls := navigations(real, sid)) and urls[-1] == "https://push.example.com/home" and urls,
        what="the signed-in page",
    )
    assert seen[0] == "https://push.example.com/login"


@pytest.mark.timeout(300)  # its browser may wait its turn to start (below)
def test_it_records_a_login_that_a_credential_finishes_before_the_browser_is_up(real, tmp_path):
    credential = {
        "name": "totp-login",
        "domain": "totp.example.com",
        "values": {"username": "ops@acme.example", "password": "s3cret-Vault!"},
        "totp_secret": "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP",
    }
    assert real.call("POST", "/credentials", json=credential).status_code == 201
    cid, flow = start(real, "totp.example.com", record_session=True, credential={"name": "totp-login"})
    sid = flow["live_view_url"].split("/_sandbox/live/")[1].split("?")[0]
    assert finished(real, cid)["flow_status"] == "SUCCESS"
    # The flow's browser (and its recorder) may queue behind other browsers' starts, up to the sandbox's
    # admission bound (120 s) on a loaded machine.
    entry = until(
        lambda: (e := real.call("GET", f"/auth/connections/{cid}/timeline").json()[0]).get("replay_id") and e,
        seconds=150,
        what="the replay on the timeline",
    )
    replay = until(
        lambda: [r for r in real.call("GET", f"/browsers/{sid}/replays").json() if r.get("finished_at")],
        seconds=60,
        what="the encoded replay",
    )[0]
    assert replay["replay_id"] == entry["replay_id"]
    path = tmp_path / "reauth.mp4"
    path.write_bytes(real.call("GET", f"/browsers/{sid}/replays/{replay['replay_id']}", timeout=60).content)
    first, last = frame_at(path, "0", 1280, 800), frame_at(path, "-0.3", 1280, 800)
    assert first != last and min(rgb(last, 1280, 1270, 790)) > 240
    urls = navigations(real, sid)
    assert urls[0] == "https://totp.example.com/login" and urls[-1] == "https://totp.example.com/home"


def test_it_ends_the_session_of_an_unrecorded_login_with_the_flow(real):
    credential = {
        "name": "plain-login",
        "domain": "plain.example.com",
        "values": {"username": "ops@acme.example", "password": "s3cret-Vault!"},
    }
    assert real.call("POST", "/credentials", json=credential).status_code == 201
    cid, flow = start(real, "plain.example.com", credential={"name": "plain-login"})
    sid = flow["live_view_url"].split("/_sandbox/live/")[1].split("?")[0]
    assert finished(real, cid)["flow_status"] == "SUCCESS"
    entry = real.call("GET", f"/auth/connections/{cid}/timeline").json()[0]
    ended = until(
        lambda: (
            real.call("GET", f"/browsers/{sid}", params={"include_deleted": "true"}).json().get("deleted_at")
        ),
        what="the session's end",
    )
    assert ended == entry["updated_at"] and "replay_id" not in entry
    assert real.call("GET", f"/browsers/{sid}/replays").json() == []
