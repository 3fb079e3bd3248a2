"""Real browsers: the wake admission of the Chromium engine (console/sandbox/chromium/engine.py
``Engine.live``).

Wakes are admitted one at a time; a wake waits for its turn up to ``SANDBOX_ADMISSION_TIMEOUT_SECONDS``
without that wait counting against its own launch, and past it the call gets a busy 503 (with a
Retry-After) and the session stays as it was. Each test runs a sandbox of its own with at most one or two
running browsers, headless, on small viewports.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests import server_logs
from tests.sandbox.test_chromium import create, pixel
from tests.sandbox_fixtures import browser_processes, new_tenant, start_sandbox, stop_sandbox

pytestmark = pytest.mark.chromium

BUSY_MESSAGE = "the sandbox is busy starting other browsers; try again"


def chromium_sandbox(**settings: str):
    """A sandbox on the Chromium engine with these settings: (url, process)."""
    owner = "sandbox-test-admission-" + os.urandom(6).hex()
    settings = {"SANDBOX_BROWSER_OWNER": owner, **settings}
    url, process = start_sandbox(SANDBOX_ENGINE="chromium", SANDBOX_BROWSER_LINGER_SECONDS="0", **settings)
    if httpx.get(url + "/").json()["engine"] != "chromium":
        stop_sandbox(process)
        pytest.fail("the sandbox runs simulated sessions")
    return url, process


def states(tenant) -> dict[str, str]:
    """Each session's browser state (running, standby, crashed) by session id."""
    listed = tenant.call("GET", "/browsers", params={"limit": 100}).json()
    return {session["session_id"]: session["sandbox"]["browser"] for session in listed}


def wait_until(condition, seconds: float = 60.0, what: str = "the condition"):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {seconds} s")


def assert_busy(status: int, body: dict, retry_after: str | None) -> None:
    assert status == 503
    assert body["code"] == "browser_unavailable" and body["message"] == BUSY_MESSAGE
    assert body["inner_error"]["code"] == "admission_timeout"
    assert retry_after == "5"


def test_it_answers_busy_and_keeps_the_session_as_it_was_when_a_wake_is_not_admitted_in_time():
    url, process = chromium_sandbox(SANDBOX_MAX_BROWSERS="1", SANDBOX_ADMISSION_TIMEOUT_SECONDS="0.3")
    try:
        tenant = new_tenant(url)
        green = create(tenant, start_url="https://lab.example.com/?color=00ff00")
        sid = green["session_id"]
        with ThreadPoolExecutor(1) as pool:
            # Another session's wake: it puts the green one in standby (one browser at most), starts its
            # page and navigates to a page that answers 8 s late, all under the admission.
            slow = pool.submit(create, tenant, start_url="https://lab.example.com/?delay_ms=8000")
            wait_until(
                lambda: (
                    (found := states(tenant)).get(sid) == "standby"
                    and "running" in [state for other, state in found.items() if other != sid]
                ),
                what="the slow session's wake",
            )
            screenshot = tenant.call("POST", f"/browsers/{sid}/computer/screenshot", json={})
            with pytest.raises(InvalidStatus) as refused:  # a CDP client gets the same answer
                connect(green["cdp_ws_url"], open_timeout=30).close()
            assert not slow.done(), "the slow wake was over before the busy answers: nothing was tested"
            assert_busy(screenshot.status_code, screenshot.json(), screenshot.headers.get("Retry-After"))
            answer = refused.value.response
            assert_busy(answer.status_code, json.loads(answer.body), answer.headers.get("Retry-After"))
            assert states(tenant)[sid] == "standby"  # as it was: not crashed, not half started
            assert slow.result()["session_id"] != sid
        # Its operator reads why in its log, by request id (tests/server_logs.py: what the sandbox wrote).
        log = dict(server_logs.written_since({}))
        said = next(text for name, text in log.items() if name.endswith(f"sandbox-{urlsplit(url).port}"))
        request_id = screenshot.headers["X-Request-Id"]
        assert f"answered 503 browser_unavailable: {BUSY_MESSAGE} [admission_timeout: " in said
        assert f"({request_id})" in said
        assert httpx.get(url + "/").json()["browsers"]["crashed"] == 0
        # Nothing ahead of it now: the next call wakes it, on its kept page.
        screenshot = tenant.call("POST", f"/browsers/{sid}/computer/screenshot", json={})
        assert screenshot.status_code == 200, screenshot.text
        assert pixel(screenshot.content, 300, 300) == (0, 255, 0)
        assert states(tenant)[sid] == "running"
    finally:
        stop_sandbox(process)


@pytest.mark.timeout(300)  # six sessions, and up to eight browser starts one after the other
def test_it_admits_a_burst_of_cdp_connections_one_at_a_time_and_crashes_no_session():
    url, process = chromium_sandbox(SANDBOX_MAX_BROWSERS="2")
    try:
        tenant = new_tenant(url)
        sessions = [create(tenant, start_url=f"https://lab.example.com/?log=s{n}") for n in range(6)]
        everyone = threading.Barrier(len(sessions), timeout=240)
        outcomes = threading.Barrier(len(sessions), timeout=240)

        def attempt(session: dict) -> tuple:
            """Connect to the session's CDP endpoint at the same moment as the others; a connected client
            asks for the browser's version and holds on until every attempt has its outcome."""
            everyone.wait()
            try:
                socket = connect(session["cdp_ws_url"], open_timeout=180, max_size=None)
            except InvalidStatus as refused:
                outcomes.wait()
                answer = refused.response
                return ("refused", answer.status_code, json.loads(answer.body), answer.headers)
            with socket:
                socket.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
                reply = json.loads(socket.recv(timeout=30))
                outcomes.wait()
                return ("connected", reply)

        with ThreadPoolExecutor(len(sessions)) as pool:
            results = list(pool.map(attempt, sessions))
        connected = [result for result in results if result[0] == "connected"]
        refused = [result for result in results if result[0] == "refused"]
        for _, reply in connected:
            assert reply["id"] == 1 and "Chrome" in reply["result"]["product"], reply
        for _, status, body, headers in refused:
            # A clean answer: the limit (every running browser is held by a client), or busy.
            if status == 429:
                assert body["code"] == "browser_limit_reached", body
            else:
                assert_busy(status, body, headers.get("Retry-After"))
        # Held clients keep their browsers running: exactly the limit of them got through.
        assert len(connected) == 2 and len(refused) == 4, results
        assert "crashed" not in states(tenant).values()
        assert httpx.get(url + "/").json()["browsers"]["crashed"] == 0
        # Every session can still be woken, one after the other (two running at most).
        for session in sessions:
            shot = tenant.call("POST", f"/browsers/{session['session_id']}/computer/screenshot", json={})
            assert shot.status_code == 200, shot.text
            assert states(tenant)[session["session_id"]] == "running"
        assert httpx.get(url + "/").json()["browsers"]["running"] <= 2
    finally:
        stop_sandbox(process)


def own_browser_started(owner: str) -> bool:
    """Whether a browser process of a session's own (its profile in ``browser-*/profile``) has started."""
    for pid in browser_processes(owner):
        try:
            arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"--user-data-dir=" in argument and b"/browser-" in argument for argument in arguments):
            return True
    return False


def test_it_never_puts_a_session_in_standby_between_its_wake_and_its_cdp_client():
    owner = "sandbox-test-admission-" + os.urandom(6).hex()
    url, process = chromium_sandbox(SANDBOX_MAX_BROWSERS="1", SANDBOX_BROWSER_OWNER=owner)
    try:
        tenant = new_tenant(url)
        # Each wake of this session holds the admission 4 s on its page (a slow page).
        held = create(tenant, start_url="https://lab.example.com/?delay_ms=4000")
        other = create(tenant, start_url="https://lab.example.com/")  # running; the first in standby
        connected, replied, done = threading.Event(), threading.Event(), threading.Event()

        def client() -> list[dict]:
            """A CDP client of the first session: asks for the version, then again once told to."""
            with connect(held["cdp_ws_url"], open_timeout=60, max_size=None) as socket:
                connected.set()
                socket.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
                first = json.loads(socket.recv(timeout=30))
                replied.set()
                done.wait(120)
                socket.send(json.dumps({"id": 2, "method": "Browser.getVersion"}))
                return [first, json.loads(socket.recv(timeout=30))]

        with ThreadPoolExecutor(1) as pool:
            replies = pool.submit(client)
            # The connection moves the session to a process of its own: once that process runs, the
            # other session's wake queues behind this one's (still on its slow page).
            wait_until(lambda: own_browser_started(owner), what="the session's own browser")
            assert not connected.is_set(), "the wake was over before the other call: nothing was tested"
            other_shot = tenant.call("POST", f"/browsers/{other['session_id']}/computer/screenshot", json={})
            # Admitted right after the first session's wake, the other wake found it held by its client:
            # one browser at most, so no room (it did not take the browser away from the client).
            assert other_shot.status_code == 429, other_shot.text
            assert other_shot.json()["code"] == "browser_limit_reached"
            assert states(tenant)[held["session_id"]] == "running"
            assert replied.wait(30)
            done.set()
            first, second = replies.result(timeout=60)
        assert first["id"] == 1 and second["id"] == 2 and "Chrome" in second["result"]["product"]
    finally:
        stop_sandbox(process)


def test_it_never_puts_a_session_in_standby_between_its_wake_and_its_live_viewer():
    url, process = chromium_sandbox(SANDBOX_MAX_BROWSERS="1")
    try:
        tenant = new_tenant(url)
        # Each wake of this session holds the admission 4 s on its page (a slow page); a live view is
        # a headful session's.
        viewed = create(tenant, start_url="https://lab.example.com/?delay_ms=4000", headless=False)
        other = create(tenant, start_url="https://lab.example.com/")  # running; the first in standby
        socket_url = viewed["browser_live_view_url"].replace("http", "ws", 1).replace("?", "/ws?", 1)
        framed, done = threading.Event(), threading.Event()

        def viewer() -> bytes:
            """A live viewer of the first session: one frame, then another once told to."""
            with connect(socket_url, open_timeout=60) as socket:
                socket.recv(timeout=30)
                framed.set()
                done.wait(120)
                # A click makes the page repaint (a frame is sent when the screen changes).
                for kind in ("down", "up"):
                    socket.send(json.dumps({"type": kind, "x": 60, "y": 40, "button": "left"}))
                return socket.recv(timeout=30)

        with ThreadPoolExecutor(1) as pool:
            frame = pool.submit(viewer)
            wait_until(
                lambda: (
                    (found := states(tenant))[viewed["session_id"]] == "running"
                    and found[other["session_id"]] == "standby"
                ),
                what="the viewed session's wake",
            )
            assert not framed.is_set(), "the wake was over before the other call: nothing was tested"
            other_shot = tenant.call("POST", f"/browsers/{other['session_id']}/computer/screenshot", json={})
            # Admitted right after the viewed session's wake, the other wake found it held by its viewer.
            assert other_shot.status_code == 429, other_shot.text
            assert states(tenant)[viewed["session_id"]] == "running"
            assert framed.wait(30)
            done.set()
            assert frame.result(timeout=60)[:2] == b"\xff\xd8"
    finally:
        stop_sandbox(process)


@pytest.mark.timeout(300)
def test_it_shares_the_browsers_between_tenants_when_one_holds_them_all():
    """A viewer's wall held every browser of the sandbox with CDP connections, and another tenant's
    screenshot got 429 at once. A tenant may take a held browser from the tenant holding the most when
    that one holds at least two more (docs/sandbox.md, "Limits, standby and lifecycle")."""
    url, process = chromium_sandbox(SANDBOX_MAX_BROWSERS="2")
    try:
        wall, other = new_tenant(url), new_tenant(url)
        tiles = [create(wall, start_url=f"https://lab.example.com/?log=tile{n}") for n in range(2)]
        mine = create(other, start_url="https://lab.example.com/?color=00ff00")
        with contextlib.ExitStack() as sockets:
            held = {}
            for tile in tiles:
                socket = sockets.enter_context(connect(tile["cdp_ws_url"], open_timeout=120, max_size=None))
                socket.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
                assert json.loads(socket.recv(timeout=30))["id"] == 1
                held[tile["session_id"]] = socket
            assert set(states(wall).values()) == {"running"}  # both browsers, each held by a client
            # The other tenant's screenshot: before, 429 browser_limit_reached at once.
            shot = other.call(
                "POST", f"/browsers/{mine['session_id']}/computer/screenshot", json={}, timeout=120
            )
            assert shot.status_code == 200, shot.text
            assert pixel(shot.content, 300, 300) == (0, 255, 0)
            # One tile gave its browser up: its client's connection closed, its session in standby (state
            # kept); the other still relays.
            given_up = [sid for sid, state in states(wall).items() if state == "standby"]
            assert len(given_up) == 1, states(wall)
            with pytest.raises(ConnectionClosed):
                while True:
                    held[given_up[0]].recv(timeout=30)
            kept = next(sid for sid in held if sid != given_up[0])
            held[kept].send(json.dumps({"id": 2, "method": "Browser.getVersion"}))
            assert json.loads(held[kept].recv(timeout=30))["id"] == 2
            # Now the other tenant holds its browser too: one each, and neither takes the other's.
            own = sockets.enter_context(connect(mine["cdp_ws_url"], open_timeout=120, max_size=None))
            own.send(json.dumps({"id": 3, "method": "Browser.getVersion"}))
            assert json.loads(own.recv(timeout=30))["id"] == 3
            again = next(tile for tile in tiles if tile["session_id"] == given_up[0])
            with pytest.raises(InvalidStatus) as refused:
                sockets.enter_context(connect(again["cdp_ws_url"], open_timeout=120))
            assert refused.value.response.status_code == 429
            assert json.loads(refused.value.response.body)["code"] == "browser_limit_reached"
            assert states(wall)[kept] == "running" and states(other)[mine["session_id"]] == "running"
    finally:
        stop_sandbox(process)
