"""The guarded CDP websocket of a real session: ``ws://<sandbox>/_sandbox/cdp/{session_id}?jwt=…``.

- Guard: the session record's ``jwt`` in the query, or ``Authorization: Bearer <API key>`` of the tenant
  owning the session. Anything else (no token, another session's token, an ended or simulated session) is
  refused before the websocket opens (HTTP 403).
- Confinement: a browser-level CDP client can list, attach to and close every target of its browser
  (``Target.*``) and close the browser itself, so a client must never share a browser with another
  session. On the first connection the session moves to a Chromium process of its own (``engine.dedicate``:
  state kept, as from standby) and the client is relayed to that process's browser-level endpoint. It sees
  its session's page and nothing else. A ``Target.activateTarget`` it sends is also where the session's
  computer actions go from then on (``engine.bring_to_front``), as a tab brought to front on the service's
  display takes its input. ``Browser.close`` and ``Browser.crash*`` are refused (ending the
  session is ``DELETE``), and so is a message the guard cannot judge as Chromium would (not a JSON object
  Python parses, or a top-level key given twice); a message over ``max_message_bytes`` (1 MiB) closes
  the connection with 1009 before it is read (the guard parses on the shared event loop); everything
  else passes through untouched, so
  ``playwright.chromium.connect_over_cdp(cdp_ws_url)`` works as against the service. A session whose
  browser cannot be had is refused before the websocket opens with the error answer of a service call:
  503 ``browser_unavailable`` (the sandbox busy starting other browsers, with a Retry-After; or the
  browser not starting) or 429 ``browser_limit_reached``.
- The process's own debugging port listens on 127.0.0.1 of the process's own network namespace when the
  sandbox is root (``confine.Network``; ``engine.cdp_socket`` opens the relay's connection there), so
  nothing else of the machine reaches it. A sandbox that is not root leaves it on the host's 127.0.0.1:
  pages cannot reach it (their requests are routed, meet the dead proxy, or go to the session's proxy),
  nor can sessions' commands unless ``SANDBOX_EXEC_NETWORK=on``, but another local user of the machine
  could (docs/security.md).
- A tab a page of the session's own context opens (``window.open``, a link's target: it has an
  ``openerId``) waits for a debugger (Playwright's auto-attach, the sandbox's and a client's alike) and goes
  on at the first ``Runtime.runIfWaitingForDebugger`` Chromium gets from any of them. A client's came
  first when the sandbox's Playwright was slower to set the tab's routes: the tab's first request escaped
  them, met the dead proxy, and the tab showed Chromium's error page (a test run on a loaded machine: 3 in
  12). So the proxy answers a client's resume of such a tab itself (``{}``) and leaves the resume to the
  sandbox's Playwright, which sends it once the routes are on. A tab a client creates
  (``Target.createTarget``) is not held: Chromium waits for its creator's resume too (held, it never
  loaded), and it has no request before its client navigates it. Tabs of a client's own context go on at
  the client's word. (A client that does not ``flatten`` sends its resume inside
  ``Target.sendMessageToTarget``, which passes as it is.)
- A connected client keeps the session running (never put in standby) and counts as activity. Telemetry:
  ``cdp_connect`` and ``cdp_disconnect`` (``duration_ms``, ``message_count``, ``reason``). Deleting the
  session closes its browser, which ends the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import time
from json.decoder import scanstring

from starlette.responses import JSONResponse
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from console.sandbox.chromium import engine
from console.sandbox.core.errors import ApiError
from console.sandbox.core.state import key_digest, registry
from console.sandbox.resources import browser_computer, sessions

REFUSED = ("Browser.close", "Browser.crash", "Browser.crashGpuProcess")
POLICY_VIOLATION = 1008
MESSAGE_TOO_BIG = 1009
# The largest message a client may send, in bytes (``SANDBOX_CDP_MAX_MESSAGE_BYTES``). The guard parses
# every message on the event loop every tenant shares: JSON made of small values costs Python's parser
# about 40 to 55 ms per MiB on a loaded 2-core machine (a 14.5 MiB message under the 16 MiB websocket default
# held another tenant's request 2.4 s, 20 s here; off the loop would not help: the C parser keeps the
# GIL). A client's CDP commands are small; the largest a Playwright client sends are its
# injected scripts (a few hundred KiB) and, rarely, a route's body to fulfil or files to upload, which
# above about 750 KiB (base64) need a larger bound. The server refuses a larger frame from its header,
# before reading it (uvicorn's ``ws_max_size``, server.py): the client sees a close 1009 "message too big".
MAX_MESSAGE_BYTES = 1024 * 1024
MIN_MESSAGE_BYTES = 64 * 1024
_SPACE = re.compile(r"[ \t\n\r]*")  # JSON's white space, as json.decoder skips it
_SCAN = json.JSONDecoder().scan_once  # one JSON value at an index: (value, end), C


def _session(websocket: WebSocket):
    """(tenant, record) of an active real session the caller may drive, else None."""
    session_id = websocket.path_params["session_id"]
    token = websocket.query_params.get("jwt", "")
    scheme, _, key = websocket.headers.get("authorization", "").partition(" ")
    for tenant in registry.tenants.values():
        record = tenant.table(sessions.TABLE).get(session_id)
        if record is None:
            continue
        # As bytes: compare_digest raises on a str holding non-ASCII characters (``?jwt=é`` was a 500).
        by_jwt = bool(token) and secrets.compare_digest(token.encode(), record["_jwt"].encode())
        by_key = scheme.lower() == "bearer" and secrets.compare_digest(
            key_digest(key.strip()), tenant.key_sha256
        )
        if (by_jwt or by_key) and record.get("_engine") == "chromium" and sessions.is_active(tenant, record):
            return tenant, record
        return None
    return None


async def _refuse(websocket: WebSocket, error: ApiError) -> None:
    """Refuse the handshake with the error's status, body and headers (a busy sandbox's 503 and its
    Retry-After, the limit's 429), where the server can send such an answer; else close with 1013 (try
    again later), which the client sees as a refused handshake."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        answer = JSONResponse(error.body(), status_code=error.status, headers=error.headers)
        await websocket.send_denial_response(answer)
    else:
        await websocket.close(code=1013)


def max_message_bytes() -> int:
    """``SANDBOX_CDP_MAX_MESSAGE_BYTES``: the largest websocket message a client may send (default 1 MiB)."""
    try:
        given = int(os.environ.get("SANDBOX_CDP_MAX_MESSAGE_BYTES") or MAX_MESSAGE_BYTES)
    except ValueError:
        return MAX_MESSAGE_BYTES
    return max(MIN_MESSAGE_BYTES, given)


class Unjudgeable(ValueError):
    """The text is not one JSON value Python's ``json`` parses."""


def _top_level(text: str) -> list[tuple[str, object]] | None:
    """The top-level (key, value) pairs of a JSON object, in the order given and repeats kept; None for
    JSON that is not an object; ``Unjudgeable`` for anything that is not JSON.

    The same grammar as ``json.loads`` (its C scanner parses each value, strict about control
    characters), without a Python call per nested object: a hook on every object (how the guard found a
    repeated key) cost up to 8 times as much (1 MiB of empty objects: 344 ms against 46 ms on a
    loaded 2-core machine)."""
    end = _SPACE.match(text).end()
    if text[end : end + 1] != "{":
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            raise Unjudgeable from None
        return None
    pairs: list[tuple[str, object]] = []
    try:
        end = _SPACE.match(text, end + 1).end()
        if text[end : end + 1] == "}":
            end += 1
        else:
            while True:
                if text[end : end + 1] != '"':
                    raise Unjudgeable
                key, end = scanstring(text, end + 1, True)
                end = _SPACE.match(text, end).end()
                if text[end : end + 1] != ":":
                    raise Unjudgeable
                value, end = _SCAN(text, _SPACE.match(text, end + 1).end())
                pairs.append((key, value))
                end = _SPACE.match(text, end).end()
                separator, end = text[end : end + 1], end + 1
                if separator == "}":
                    break
                if separator != ",":
                    raise Unjudgeable
                end = _SPACE.match(text, end).end()
    except (ValueError, StopIteration, RecursionError):
        raise Unjudgeable from None
    if _SPACE.match(text, end).end() != len(text):
        raise Unjudgeable
    return pairs


def _error(message_id, code: int, text: str) -> str:
    return json.dumps({"id": message_id, "error": {"code": code, "message": text}})


def _refusal(text: str) -> str | None:
    """The error reply for a command the proxy does not pass on, else None.

    The guard judges exactly what Chromium will run: a message Python's ``json`` cannot parse, that is not
    an object, or that gives a top-level key twice (``{"method": "Runtime.evaluate", "method":
    "Browser.close"}``: which one does Chromium's parser keep?) is refused rather than passed on."""
    try:
        pairs = _top_level(text)
    except Unjudgeable:
        return _error(None, -32700, "Message must be a valid JSON")
    if pairs is None:
        return _error(None, -32600, "Message must be an object")
    message = dict(pairs)
    if len(message) != len(pairs):
        # Chromium (crdtp) refuses one too ("CBOR: duplicate map key"): the guard does not rely on it.
        # Answered with the first id given, as Chromium answers a message it refuses.
        seen: set[str] = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
        first_id = next((value for key, value in pairs if key == "id"), None)
        return _error(first_id, -32600, f"Message must not give a key twice ({repeated[:100]!r})")
    if message.get("method") in REFUSED:
        reply = {
            "id": message.get("id"),
            "error": {"code": -32000, "message": f"{message['method']} is not allowed: delete the session"},
        }
        if message.get("sessionId"):
            reply["sessionId"] = message["sessionId"]
        return json.dumps(reply)
    return None


def _activated(text: str) -> str | None:
    """The target a ``Target.activateTarget`` command brings to front (the guard already judged the
    message), else None: the session's computer actions go to the front tab, as on the service's display."""
    if '"Target.activateTarget"' not in text:
        return None
    message = json.loads(text)
    params = message.get("params")
    if message.get("method") != "Target.activateTarget" or not isinstance(params, dict):
        return None
    target = params.get("targetId")
    return target if isinstance(target, str) and len(target) <= 128 else None


RESUME = "Runtime.runIfWaitingForDebugger"
MAX_WAITING = 256  # the client's sessions of waiting tabs remembered (a page opening tabs in a loop)
# The largest browser message looked into: an attachedToTarget event is well under 1 KiB but for its tab's
# URL and title; what a page says (console text, a response body a client asked for) can be any size and
# mention the event's name, and would be parsed on the loop every tenant shares. A tab whose event is larger
# (a URL of 60,000 characters) is not held: its client's resume passes on, as before.
MAX_EVENT_BYTES = 64 * 1024


class Waiting:
    """The client's CDP sessions of new tabs of the session's own context, which wait for the sandbox's
    Playwright to set their routes: the client's resume of one is answered here, not passed on."""

    def __init__(self, context_id: str | None):
        self.context_id = context_id
        self.sessions: dict[str, None] = {}  # in the order they came, at most MAX_WAITING

    def seen(self, message: str) -> None:
        """A message from the browser: a tab of the session's context attached to the client, waiting."""
        if (
            self.context_id is None
            or len(message) > MAX_EVENT_BYTES
            or '"Target.attachedToTarget"' not in message
        ):
            return
        try:
            event = json.loads(message)
        except ValueError:
            return
        if not isinstance(event, dict) or event.get("method") != "Target.attachedToTarget":
            return
        params = event.get("params")
        if not isinstance(params, dict):
            return
        info, session = params.get("targetInfo"), params.get("sessionId")
        if (
            params.get("waitingForDebugger") is True
            and isinstance(info, dict)
            and info.get("type") == "page"
            and isinstance(info.get("openerId"), str)  # a page opened it: not a client's Target.createTarget
            and info.get("browserContextId") == self.context_id
            and isinstance(session, str)
        ):
            self.sessions[session] = None
            while len(self.sessions) > MAX_WAITING:
                del self.sessions[next(iter(self.sessions))]

    def answer(self, text: str) -> str | None:
        """The answer to a client's resume of such a tab (the guard already judged the message), else None:
        the message passes on."""
        if not self.sessions or f'"{RESUME}"' not in text:
            return None
        message = json.loads(text)
        session = message.get("sessionId")
        if message.get("method") != RESUME or session not in self.sessions:
            return None
        del self.sessions[session]
        return json.dumps({"id": message.get("id"), "result": {}, "sessionId": session})


async def cdp(websocket: WebSocket):
    from websockets.asyncio.client import connect  # the relay's client, needed once a CDP client comes

    found = _session(websocket)
    if found is None:
        await websocket.close(code=POLICY_VIOLATION)
        return
    tenant, record = found
    browsers_engine = engine.get()
    try:
        live = await browsers_engine.dedicate(tenant, record)  # attached
    except ApiError as error:
        await _refuse(websocket, error)
        return
    started, counted, reason = time.monotonic(), 0, "upstream_error"
    try:
        waiting = Waiting(await browsers_engine.context_id(live))
        await websocket.accept()
    except BaseException:
        live.attached -= 1
        raise
    browser_computer.emit(tenant, record, [("cdp_connect", {})])
    try:
        # Into the browser's own network namespace where it has one (its port is nowhere else).
        into = {"sock": sock} if (sock := browsers_engine.cdp_socket(live)) is not None else {}
        async with connect(
            live.cdp_endpoint, max_size=None, ping_interval=None, open_timeout=10, **into
        ) as upstream:
            limit = max_message_bytes()
            too_big = f"a message is at most {limit} bytes"

            async def from_client() -> str:
                nonlocal counted
                while True:
                    try:
                        text = await websocket.receive_text()
                    except WebSocketDisconnect:
                        return "client_close"
                    counted += 1
                    sessions.touch(tenant, record)
                    live.last_used = time.monotonic()
                    if len(text) > limit:  # the server's own bound refuses it first (server.py)
                        await websocket.send_text(_error(None, -32600, too_big))
                        await websocket.close(code=MESSAGE_TOO_BIG, reason=too_big)
                        return "client_close"
                    refusal = _refusal(text)
                    if refusal is not None:
                        await websocket.send_text(refusal)
                        continue
                    if (answer := waiting.answer(text)) is not None:
                        await websocket.send_text(answer)
                        continue
                    if (front := _activated(text)) is not None:
                        # Before it is passed on: once the client has the answer, input goes to that tab.
                        await browsers_engine.bring_to_front(live, front)
                    await upstream.send(text)

            async def from_browser() -> str:
                async for message in upstream:
                    text = message if isinstance(message, str) else message.decode()
                    waiting.seen(text)  # before the client can answer it
                    await websocket.send_text(text)
                return "upstream_changed" if sessions.is_active(tenant, record) else "context_cancelled"

            tasks = [asyncio.create_task(from_client()), asyncio.create_task(from_browser())]
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            for task in done:
                if not task.cancelled() and task.exception() is None:
                    reason = task.result()
    except Exception:  # the browser went away or refused the connection: the client sees a close
        reason = "upstream_error"
    finally:
        live.attached -= 1
        browser_computer.emit(
            tenant,
            record,
            [
                (
                    "cdp_disconnect",
                    {
                        "duration_ms": int((time.monotonic() - started) * 1000),
                        "message_count": counted,
                        "reason": reason,
                    },
                )
            ],
        )
    with contextlib.suppress(Exception):
        await websocket.close()


routes = [WebSocketRoute("/_sandbox/cdp/{session_id}", cdp)]
