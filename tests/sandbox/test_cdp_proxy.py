"""The CDP proxy of real sessions (console/sandbox/resources/cdp_proxy.py): what a client's messages may cost
the sandbox every tenant shares.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from console.sandbox.resources.cdp_proxy import MAX_MESSAGE_BYTES
from tests.sandbox.test_chromium import create
from tests.sandbox_fixtures import new_tenant, wait_until

pytestmark = pytest.mark.chromium

# How long another tenant's plain read may take while a client sends its message: far above what the read
# takes on a loaded machine (tens of ms), far below what the guard cost before its bound (seconds for
# this message).
BYSTANDER_SECONDS = 2.0


def empty_objects(size: int) -> str:
    """A refused command (``Browser.close``) whose params are empty objects, ``size`` characters in all:
    the costliest JSON per byte for the guard's parser."""
    head, tail = '{"id": 1, "method": "Browser.close", "params": {"x": [', "{}]}}"
    return head + "{}," * ((size - len(head) - len(tail)) // 3) + tail


def send_quietly(socket, text: str) -> None:
    """Send ``text``; the proxy may close the connection before it has read it all."""
    with contextlib.suppress(ConnectionClosed, OSError):
        socket.send(text)


@pytest.mark.timeout(180)
def test_it_refuses_a_message_over_its_bound_without_holding_up_another_tenant(chromium_sandbox):
    url, _ = chromium_sandbox
    owner, bystander = new_tenant(url), new_tenant(url)
    session = create(owner)
    try:
        with connect(session["cdp_ws_url"], open_timeout=60, max_size=None) as socket:
            socket.send(json.dumps({"id": 0, "method": "Browser.getVersion"}))
            assert json.loads(socket.recv(timeout=30))["id"] == 0  # relayed to the session's browser
            with ThreadPoolExecutor(1) as pool:
                # 14.5 MiB: the audit's message, under the websocket default of 16 MiB.
                pool.submit(send_quietly, socket, empty_objects(int(14.5 * 1024 * 1024))).result(timeout=60)
            started = time.monotonic()
            read = bystander.call("GET", "/browsers", timeout=60)
            took = time.monotonic() - started
            assert read.status_code == 200, read.text
            with pytest.raises(ConnectionClosed) as closed:
                socket.recv(timeout=30)  # before: the guard's reply to Browser.close, seconds later
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big
        assert str(MAX_MESSAGE_BYTES) in closed.value.rcvd.reason
        assert took < BYSTANDER_SECONDS, f"another tenant's read took {took:.2f} s"
        # A message within the bound is judged and relayed as before, on a new connection.
        with connect(session["cdp_ws_url"], open_timeout=60, max_size=None) as socket:
            pad = "x" * (MAX_MESSAGE_BYTES - 100)
            socket.send(json.dumps({"id": 2, "method": "Browser.getVersion", "params": {"pad": pad}}))
            reply = json.loads(socket.recv(timeout=30))
            assert reply["id"] == 2 and "Chrome" in reply["result"]["product"], reply
            socket.send(empty_objects(MAX_MESSAGE_BYTES - 1000))
            assert json.loads(socket.recv(timeout=30))["error"]["code"] == -32000  # Browser.close refused
    finally:
        owner.call("DELETE", f"/browsers/{session['session_id']}", timeout=30)


def pixel(tenant, session_id: str) -> tuple[int, int, int]:
    """The colour at (300, 300) of the session's computer screenshot: a 1x1 region, whose one row's filter
    leaves the pixel as it is whatever the filter type (no row above, no pixel to its left)."""
    png = tenant.call(
        "POST",
        f"/browsers/{session_id}/computer/screenshot",
        json={"region": {"x": 300, "y": 300, "width": 1, "height": 1}},
        timeout=60,
    ).content
    at, data = 8, b""
    while at < len(png):
        length, kind = int.from_bytes(png[at : at + 4], "big"), png[at + 4 : at + 8]
        if kind == b"IDAT":
            data += png[at + 8 : at + 8 + length]
        at += 12 + length
    return tuple(zlib.decompress(data)[1:4])


RED, GREEN = (255, 0, 0), (0, 192, 0)


def command(socket, number: int, method: str, params: dict | None = None) -> dict:
    """Send one CDP command and return its answer (events before it are passed over)."""
    socket.send(json.dumps({"id": number, "method": method, "params": params or {}}))
    while True:
        message = json.loads(socket.recv(timeout=30))
        if message.get("id") == number:
            return message


@pytest.mark.timeout(180)
def test_the_computer_acts_on_the_tab_in_front_as_the_service_s_display_does(chromium_sandbox):
    """A tab a page opens comes to front (Chromium's way), and a client's Target.activateTarget brings
    another back: the computer actions (and their screenshot) follow, as the service's X display does. They
    went to the session's first tab whatever was in front."""
    tenant = new_tenant(chromium_sandbox[0])
    session = create(tenant, start_url="https://lab.example.com/?color=ff0000")
    sid = session["session_id"]
    assert pixel(tenant, sid) == RED
    opened = tenant.call(
        "POST",
        f"/browsers/{sid}/playwright/execute",
        json={"code": "await page.evaluate(() => window.open('https://lab.example.com/?color=00c000'))"},
        timeout=120,
    )
    assert opened.json()["success"], opened.text
    wait_until(lambda: pixel(tenant, sid) == GREEN, seconds=30, what="the opened tab in front")
    with connect(session["cdp_ws_url"], open_timeout=60, max_size=None) as socket:
        targets = command(socket, 1, "Target.getTargets")["result"]["targetInfos"]
        first = next(t["targetId"] for t in targets if t["type"] == "page" and "ff0000" in t["url"])
        command(socket, 2, "Target.activateTarget", {"targetId": first})
    # Brought to front before the answer came: the next action is the first tab's.
    assert pixel(tenant, sid) == RED
    tenant.call("DELETE", f"/browsers/{sid}", timeout=30)


def playwright_driver(owner: str) -> int:
    """The sandbox's own Playwright driver (a Node.js process of its, ``run-driver``)."""
    marker = f"SANDBOX_BROWSER_OWNER={owner}".encode()
    for entry in Path("/proc").iterdir():
        try:
            found = entry.name.isdigit() and marker in (entry / "environ").read_bytes().split(b"\0")
            if found and b"run-driver" in (entry / "cmdline").read_bytes().split(b"\0"):
                return int(entry.name)
        except OSError:
            continue
    pytest.fail("the sandbox's Playwright driver was not found")


def next_message(socket, wanted) -> dict:
    """The first message ``wanted(message)`` accepts (others are passed over)."""
    while True:
        message = json.loads(socket.recv(timeout=30))
        if wanted(message):
            return message


@pytest.mark.timeout(180)
def test_a_tab_a_page_opens_keeps_the_sandboxs_routes_when_a_client_resumes_it_first(chromium_sandbox):
    """A client auto-attached to new tabs resumes one before the sandbox's own Playwright has set its routes
    (that Playwright held here, as a loaded machine slows it): the tab still loads the demo site. Its first
    request escaped the routes before, met the dead proxy, and the tab showed Chromium's error page, whose
    title is the host."""
    url, owner = chromium_sandbox
    tenant = new_tenant(url)
    session = create(tenant, start_url="https://lab.example.com/?color=ff0000")
    with connect(session["cdp_ws_url"], open_timeout=60, max_size=None) as socket:
        targets = command(socket, 1, "Target.getTargets")["result"]["targetInfos"]
        first = next(t["targetId"] for t in targets if t["type"] == "page" and "ff0000" in t["url"])
        page = command(socket, 2, "Target.attachToTarget", {"targetId": first, "flatten": True})
        page_session = page["result"]["sessionId"]
        auto = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
        assert "error" not in command(socket, 3, "Target.setAutoAttach", auto)
        driver = playwright_driver(owner)
        os.kill(driver, signal.SIGSTOP)
        try:
            code = "window.open('https://lab.example.com/?color=00c000'); 1"
            socket.send(
                json.dumps(
                    {
                        "id": 4,
                        "method": "Runtime.evaluate",
                        "params": {"expression": code},
                        "sessionId": page_session,
                    }
                )
            )
            attached = next_message(
                socket,
                lambda m: (
                    m.get("method") == "Target.attachedToTarget"
                    and m["params"]["targetInfo"]["type"] == "page"
                    and m["params"]["waitingForDebugger"]
                ),
            )["params"]
            popup, popup_session = attached["targetInfo"]["targetId"], attached["sessionId"]
            socket.send(
                json.dumps({"id": 5, "method": "Runtime.runIfWaitingForDebugger", "sessionId": popup_session})
            )
            answer = next_message(socket, lambda m: m.get("id") == 5)
            assert answer == {"id": 5, "result": {}, "sessionId": popup_session}
        finally:
            os.kill(driver, signal.SIGCONT)
        numbers = iter(range(6, 10_000))

        def title() -> str:
            info = command(socket, next(numbers), "Target.getTargetInfo", {"targetId": popup})
            return info["result"]["targetInfo"]["title"]

        assert wait_until(lambda: title() == "Lab", seconds=30, what="the tab's demo page")
    tenant.call("DELETE", f"/browsers/{session['session_id']}", timeout=30)
