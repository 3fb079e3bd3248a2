"""The live view of a headful session, served by the sandbox: ``/_sandbox/live/{session_id}?jwt=…``.

- Tokens: a session has two live-view tokens, neither of them its CDP ``jwt`` (a live-view link must not
  carry full control of the browser): the interactive one in ``browser_live_view_url``, and a view-only one
  in the sandbox-only ``sandbox.read_only_live_view_url``. ``readOnly=true`` makes any link view-only; the
  view-only token stays view-only whatever its URL says, so a read-only link cannot be turned interactive
  by editing it.
- Under the Chromium engine the page shows the session's screencast (CDP ``Page.startScreencast``, JPEG
  frames at most the viewport size) over a websocket (``/_sandbox/live/{session_id}/ws``, same token), and
  an interactive view sends the viewer's mouse, wheel and keys back as real input. The websocket checks
  the token itself: a view-only connection's input is ignored. A connected viewer counts as activity and
  keeps the session out of standby; ``live_view_connect``/``live_view_disconnect`` are telemetry.
- Under the simulated engine the page is a placeholder naming the session and its viewport.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import html
import json
import logging
import secrets
import time

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from console.sandbox.chromium import engine
from console.sandbox.core.errors import ApiError
from console.sandbox.core.state import new_id, registry
from console.sandbox.resources import browser_computer, sessions

log = logging.getLogger("console.sandbox.engine")
POLICY_VIOLATION = 1008
ENDED = "<!doctype html><p>This live view has ended.</p>"


def _session(session_id: str, token: str):
    """(tenant, record, interactive) for a live-view token of an active headful session, else None."""
    if not token:
        return None
    # Compared as bytes: compare_digest raises on a str holding non-ASCII characters (``?jwt=é`` was a 500).
    given = token.encode(errors="replace")
    for tenant in registry.tenants.values():
        record = tenant.table(sessions.TABLE).get(session_id)
        if record is None:
            continue
        if record["headless"] or not sessions.is_active(tenant, record):
            return None
        if secrets.compare_digest(given, record["_live_token"].encode()):
            return tenant, record, True
        if secrets.compare_digest(given, record["_live_view_token"].encode()):
            return tenant, record, False
        return None
    return None


async def page(request: Request):
    session_id = request.path_params["session_id"]
    found = _session(session_id, request.query_params.get("jwt", ""))
    if found is None:
        return HTMLResponse(ENDED, status_code=404)
    _, record, interactive = found
    interactive = interactive and request.query_params.get("readOnly") != "true"
    title = html.escape(record.get("name") or session_id)
    mode = "interactive" if interactive else "view only"
    width, height = record["viewport"]["width"], record["viewport"]["height"]
    if record.get("_engine") != "chromium":
        return HTMLResponse(
            "<!doctype html><html><head><meta charset='utf-8'><title>Live view: "
            f"{title}</title></head><body style='margin:0;background:#111;color:#ddd;"
            "font:14px system-ui;display:grid;place-items:center;height:100vh'>"
            f"<main><h1>{title}</h1><p>Live view ({mode}) of a simulated sandbox browser, "
            f"{width}x{height}.</p></main></body></html>"
        )
    config = json.dumps({"interactive": interactive, "width": width, "height": height})
    return HTMLResponse(
        "<!doctype html><html><head><meta charset='utf-8'><title>Live view: "
        f"{title}</title><style>html,body{{margin:0;height:100%;background:#111}}"
        "img{display:block;width:100%;height:100%;object-fit:contain;outline:none}"
        "#state{position:fixed;top:4px;left:8px;color:#aaa;font:12px system-ui}</style></head><body>"
        f"<img id=screen alt='Live view of {title} ({mode})' tabindex=0><div id=state>connecting…</div>"
        f"<script>const CONFIG = {config};\n{SCRIPT}</script></body></html>",
        headers={"Cache-Control": "no-store"},
    )


SCRIPT = """
const screen = document.getElementById('screen'), state = document.getElementById('state');
let socket = null;
function connect() {
  const url = new URL(location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.pathname += '/ws';
  socket = new WebSocket(url);
  socket.binaryType = 'blob';
  socket.onopen = () => { state.textContent = ''; };
  socket.onmessage = (m) => {
    const old = screen.src;
    screen.src = URL.createObjectURL(m.data);
    if (old) URL.revokeObjectURL(old);
  };
  socket.onclose = () => { state.textContent = 'reconnecting…'; setTimeout(connect, 1000); };
}
function at(e) {
  const r = screen.getBoundingClientRect();
  const scale = Math.min(r.width / CONFIG.width, r.height / CONFIG.height);
  const left = r.left + (r.width - CONFIG.width * scale) / 2;
  const top = r.top + (r.height - CONFIG.height * scale) / 2;
  return {x: Math.round((e.clientX - left) / scale), y: Math.round((e.clientY - top) / scale)};
}
function send(message) { if (socket && socket.readyState === 1) socket.send(JSON.stringify(message)); }
if (CONFIG.interactive) {
  const buttons = ['left', 'middle', 'right'];
  const button = (e) => buttons[e.button] || 'left';
  screen.addEventListener('mousedown', (e) => {
    screen.focus();
    send({type: 'down', button: button(e), ...at(e)});
    e.preventDefault();
  });
  screen.addEventListener('mouseup', (e) => send({type: 'up', button: button(e), ...at(e)}));
  screen.addEventListener('mousemove', (e) => send({type: 'move', ...at(e)}));
  screen.addEventListener('wheel', (e) => {
    send({type: 'wheel', dx: e.deltaX, dy: e.deltaY, ...at(e)});
    e.preventDefault();
  });
  screen.addEventListener('contextmenu', (e) => e.preventDefault());
  screen.addEventListener('keydown', (e) => { send({type: 'key', key: e.key}); e.preventDefault(); });
}
connect();
"""


async def _attach(tenant, record) -> tuple:
    """The session's running ``Live``, attached, and a CDP session on its page for the screencast.

    Attached from its wake on, with no await between: another session's wake cannot put it in standby
    while the view is being set up. A page that went away under the attach (a CDP client closed it a
    moment before, and the engine had not yet seen it closed; or the session moved) is woken and tried
    once more, as ``engine.on_page`` does: the view shows the new page rather than refusing the viewer.
    """
    for attempt in (1, 2):
        live = await engine.get().live(tenant, record)
        live.attached += 1
        page = live.page
        try:
            return live, await engine.guarded(live.context.new_cdp_session(page), "the live view")
        except BaseException as error:
            live.attached -= 1
            # Moved or closed under the attach; not a browser that crashed or a session that ended.
            went_away = live.state in ("running", "standby") and (
                page is None or page.is_closed() or live.page is not page or live.state == "standby"
            )
            if not isinstance(error, ApiError) or attempt == 2 or not went_away:
                raise
            log.info(
                "live view of %s: its page went away while attaching; asking its new page", live.session_id
            )
    raise AssertionError("the second attempt returns or raises")


async def stream(websocket: WebSocket):
    session_id = websocket.path_params["session_id"]
    found = _session(session_id, websocket.query_params.get("jwt", ""))
    if found is None or found[1].get("_engine") != "chromium":
        await websocket.close(code=POLICY_VIOLATION)
        return
    tenant, record, interactive = found
    interactive = interactive and websocket.query_params.get("readOnly") != "true"
    try:
        live, cdp = await _attach(tenant, record)
    except ApiError as error:
        log.warning(
            "live view of %s refused (1013, try again): %s %s",
            session_id,
            error.message,
            error.inner_error or "",
        )
        await websocket.close(code=1013)
        return
    try:
        await websocket.accept()
    except BaseException:
        live.attached -= 1
        with contextlib.suppress(Exception):
            await cdp.detach()
        raise
    viewer = "lv_" + new_id(length=12)
    browser_computer.emit(tenant, record, [("live_view_connect", {"session_id": viewer})])
    started = time.monotonic()
    frames: asyncio.Queue = asyncio.Queue(maxsize=2)

    def on_frame(params: dict) -> None:
        # The newest frame wins: a slow viewer skips frames instead of falling behind.
        if frames.full():
            with contextlib.suppress(asyncio.QueueEmpty):
                frames.get_nowait()
        frames.put_nowait(base64.b64decode(params["data"]))
        asyncio.get_running_loop().create_task(_ack(cdp, params["sessionId"]))

    cdp.on("Page.screencastFrame", on_frame)
    size = record["viewport"]
    try:
        await cdp.send(
            "Page.startScreencast",
            {"format": "jpeg", "quality": 70, "maxWidth": size["width"], "maxHeight": size["height"]},
        )

        async def send_frames() -> None:
            while True:
                await websocket.send_bytes(await frames.get())

        async def read_input() -> None:
            while True:
                message = await websocket.receive_text()
                sessions.touch(tenant, record)
                live.last_used = time.monotonic()
                if interactive and live.page is not None:
                    with contextlib.suppress(Exception):
                        await _input(live.page, json.loads(message))

        gone = asyncio.Event()
        live.page.on("close", lambda _page: gone.set())
        live.page.on("crash", lambda _page: gone.set())

        async def watch_page() -> None:
            # The page can go away under the view (a crash, or the session moving to a process of its
            # own for a CDP client): the view ends, and the viewer's page reconnects to the new one.
            await gone.wait()

        tasks = [asyncio.create_task(job()) for job in (send_frames, read_input, watch_page)]
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        for task in done:  # a viewer leaving ends read_input with WebSocketDisconnect: retrieve it
            if not task.cancelled() and task.exception() is not None:
                log.debug("live view of %s: %r", session_id, task.exception())
    except (WebSocketDisconnect, Exception):  # the viewer left or the page went away: end the view
        log.debug("live view of %s ended", session_id, exc_info=True)
    finally:
        live.attached -= 1
        with contextlib.suppress(Exception):
            await cdp.detach()
        browser_computer.emit(
            tenant,
            record,
            [
                (
                    "live_view_disconnect",
                    {"session_id": viewer, "duration_ms": int((time.monotonic() - started) * 1000)},
                )
            ],
        )
        with contextlib.suppress(Exception):
            await websocket.close()


async def _ack(cdp, frame_session: int) -> None:
    with contextlib.suppress(Exception):
        await cdp.send("Page.screencastFrameAck", {"sessionId": frame_session})


async def _input(page, message: dict) -> None:
    kind = message.get("type")
    x, y = float(message.get("x", 0)), float(message.get("y", 0))
    button = message.get("button") if message.get("button") in ("left", "middle", "right") else "left"
    if kind == "move":
        await page.mouse.move(x, y)
    elif kind == "down":
        await page.mouse.move(x, y)
        await page.mouse.down(button=button)
    elif kind == "up":
        await page.mouse.move(x, y)
        await page.mouse.up(button=button)
    elif kind == "wheel":
        await page.mouse.move(x, y)
        await page.mouse.wheel(float(message.get("dx", 0)), float(message.get("dy", 0)))
    elif kind == "key" and isinstance(message.get("key"), str) and 0 < len(message["key"]) <= 32:
        await page.keyboard.press(message["key"])


routes = [
    Route("/_sandbox/live/{session_id}", page, methods=["GET"]),
    WebSocketRoute("/_sandbox/live/{session_id}/ws", stream),
]
