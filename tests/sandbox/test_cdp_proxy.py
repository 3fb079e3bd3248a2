"""The CDP proxy of real sessions (console/sandbox/resources/cdp_proxy.py): what a client's messages may cost
the sandbox every tenant shares.
"""

from __future__ import annotations

import contextlib
import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from console.sandbox.resources.cdp_proxy import MAX_MESSAGE_BYTES
from tests.sandbox.test_chromium import create
from tests.sandbox_fixtures import new_tenant

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
