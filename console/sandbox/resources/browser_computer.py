"""Computer actions on a browser session (notes §3): mouse, keyboard, scroll, drag, cursor, clipboard,
batches and screenshots.

Under the Chromium engine (``console/sandbox/chromium/engine.py``) every action, once its body is checked, is
real input to the session's page through Playwright's mouse and keyboard (``back``/``forward`` buttons through
CDP ``Input.dispatchMouseEvent``): xdotool key names (``Return``, ``Ctrl+t``, ``Page_Down``) are mapped to
Playwright's, ``num_clicks`` is a real multi-click (2 is a double click), a wheel unit scrolls 100 px,
``hold_keys`` are held down around the action. The page itself reports clicks, keys and scrolls as interaction
telemetry (``page_events``), so nothing is synthesized. ``screenshot`` is the page's PNG at the viewport size
(or of ``region``). The pointer position is the last one sent; the clipboard stays the sandbox's own (a
headless browser has no system clipboard). A key Chromium does not know is 400 like any other bad field; a
page that fails or does not answer in time is 503 ``browser_unavailable``.

Under the simulated engine the sandbox has no real screen. It keeps what an operator can observe: the
pointer position (the middle of the viewport at first), the scroll offset, the cursor visibility, the
clipboard, the last clicks and actions, and a simple page layout (header, search box, product image,
title, "Add to cart" button, footer) that clicks land on.

Choices where the contract and the notes are silent (the lead copies them into the docs):

- Coordinates are viewport pixels: ``0 <= x < width``, ``0 <= y < height`` of the session's viewport;
  outside is 400 with an ``x`` or ``y`` detail.
- A batch runs its actions in order and stops at the first error. Actions before it have taken effect;
  the error is 400 ``batch_action_failed`` whose detail names the failing action by index,
  ``{"code": "actions[2]", "message": "click_mouse.x: ..."}``, and whose message says how many ran.
  A body that is not a list of actions is refused before anything runs (``actions`` detail).
- ``sleep`` (batch only) really waits, at most 10 s per action. ``type`` waits ``delay`` ms between keys
  only up to 2 s in total.
- Telemetry, when the session captures the category: a click is an ``interaction_click`` (with the
  element under the pointer), each key press and typed character an ``interaction_key`` (at most 100 per
  call), a scroll an ``interaction_scroll_settled``; every successful call is also an ``api_call``
  (``control``) with the operation ``computer.<action>``. A wheel unit scrolls 100 px; the page is five
  viewports tall.
- ``screenshot`` returns a real PNG at most 640x400 px, scaled from the viewport (or from ``region``):
  the page layout, the scroll position as a scrollbar, coloured marks for the last clicks (blue left,
  green right, purple middle, orange other buttons), a ring at the last action, and a red crosshair at
  the pointer unless the cursor is hidden.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import struct
import zlib
from collections import deque
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from console.sandbox.chromium import engine
from console.sandbox.core import store
from console.sandbox.core.errors import ApiError, invalid
from console.sandbox.core.http import endpoint, no_content, ok, read_json
from console.sandbox.core.state import Tenant
from console.sandbox.resources import sessions, telemetry

BUTTONS = ("left", "right", "middle", "back", "forward")
DRAG_BUTTONS = ("left", "middle", "right")
CLICK_TYPES = ("down", "up", "click")
WHEEL_PX = 100
PAGE_VIEWPORTS = 5
MAX_SLEEP_MS = 10_000
MAX_TYPE_DELAY_S = 2.0
MAX_KEY_EVENTS = 100
MAX_TEXT = 10_000
SHOT_MAX = (640, 400)
RECENT = 12

# The page layout clicks land on: (left, top, width, height) as fractions of the viewport, then the
# element's selector, tag, text and colour in screenshots. Later boxes sit on top of earlier ones.
LAYOUT = [
    ((0.0, 0.0, 1.0, 0.08), "header.site-header", "HEADER", "", (31, 41, 55)),
    ((0.03, 0.018, 0.10, 0.045), "a.logo", "A", "Shop", (96, 165, 250)),
    ((0.62, 0.018, 0.28, 0.045), "input#search", "INPUT", "", (249, 250, 251)),
    ((0.92, 0.018, 0.05, 0.045), "a.nav-link[href='/cart']", "A", "Cart", (250, 204, 21)),
    ((0.06, 0.14, 0.40, 0.56), "img.product-hero", "IMG", "", (209, 213, 219)),
    ((0.52, 0.16, 0.40, 0.06), "h1.product-title", "H1", "Sony WH-1000XM5", (75, 85, 99)),
    ((0.52, 0.26, 0.26, 0.03), "p.price", "P", "$349.99", (107, 114, 128)),
    ((0.52, 0.40, 0.20, 0.07), "button#add-to-cart", "BUTTON", "Add to cart", (234, 88, 12)),
    ((0.0, 0.92, 1.0, 0.08), "footer.site-footer", "FOOTER", "", (229, 231, 235)),
]
BODY = ("body", "BODY", "")
MARK_COLOURS = {"left": (37, 99, 235), "right": (22, 163, 74), "middle": (147, 51, 234)}
OTHER_MARK = (234, 88, 12)
POINTER = (220, 38, 38)
LAST_ACTION = (250, 204, 21)


@dataclass
class Screen:
    x: int
    y: int
    hidden: bool = False
    scroll_x: int = 0
    scroll_y: int = 0
    clipboard: str = ""
    focus: tuple[str, str, str] = BODY
    clicks: deque = field(default_factory=lambda: deque(maxlen=RECENT))  # (x, y, button)
    last_action: tuple[str, int, int] | None = None


class ActionError(Exception):
    """An action that cannot run: ``field`` names the offending field of the action's body."""

    def __init__(self, field: str, message: str, *, top: bool = False):
        super().__init__(message)
        self.field = field
        self.message = message
        self.top = top  # a field of the batch action itself, not of its sub-object


def viewport(record: dict) -> tuple[int, int]:
    size = record.get("viewport") or {}
    return int(size.get("width") or 1920), int(size.get("height") or 1080)


STORED = (store.Kind("Screen", Screen),)  # saved with its session (``app.assemble`` registers it)


def screen_of(record: dict) -> Screen:
    screen = record.get("_screen")
    if screen is None:
        width, height = viewport(record)
        screen = Screen(x=width // 2, y=height // 2)
        record["_screen"] = screen
    return screen


def element_at(record: dict, x: int, y: int) -> tuple[str, str, str]:
    width, height = viewport(record)
    found = BODY
    for (left, top, w, h), selector, tag, text, _ in LAYOUT:
        if left * width <= x < (left + w) * width and top * height <= y < (top + h) * height:
            found = (selector, tag, text)
    return found


# Telemetry -----------------------------------------------------------------------------------------


def _context(record: dict) -> dict:
    digest = hashlib.sha256(record["session_id"].encode()).hexdigest().upper()
    return {
        "target_id": digest[:32],
        "target_type": "page",
        "session_id": digest[32:64],
        "frame_id": digest[:32],
        "loader_id": digest[16:48],
        "nav_seq": 1,
        "url": record.get("start_url") or "https://shop.example.com/p/sony-wh-1000xm5",
    }


def emit(tenant: Tenant, record: dict, drafts: list[tuple[str, dict]]) -> None:
    """Append ``(type, data)`` events to the session's telemetry archive, for captured categories only."""
    allowed = telemetry._allowed(record)
    if not allowed:
        return
    kept = [(kind, data) for kind, data in drafts if telemetry.TYPES[kind][0] in allowed]
    if not kept:
        return
    telemetry.catch_up(tenant, record)
    now = tenant.now()
    telemetry.append(tenant, record, [(now, kind, data) for kind, data in kept])


def _api_call(request: Request, operation: str, status: int = 204) -> tuple[str, dict]:
    return (
        "api_call",
        {
            "operation_id": f"computer.{operation}",
            "request_id": request.state.request_id,
            "status": status,
            "duration_ms": 1,
        },
    )


# Field checks --------------------------------------------------------------------------------------


def _int(body: dict, key: str, *, required: bool = False, low: int | None = None, high: int | None = None):
    value = body.get(key)
    if value is None:
        if required:
            raise ActionError(key, "is required")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ActionError(key, "must be an integer")
    if (low is not None and value < low) or (high is not None and value > high):
        if high is None:
            bound = f"at least {low}"
        elif low is None:
            bound = f"at most {high}"
        else:
            bound = f"between {low} and {high}"
        raise ActionError(key, f"must be {bound}, got {value}")
    return value


def _point(record: dict, body: dict, xkey: str = "x", ykey: str = "y") -> tuple[int, int]:
    width, height = viewport(record)
    x = _int(body, xkey, required=True, low=0, high=width - 1)
    y = _int(body, ykey, required=True, low=0, high=height - 1)
    return x, y


def _choice(body: dict, key: str, allowed: tuple, default: str) -> str:
    value = body.get(key, default)
    if value is None:
        return default
    if value not in allowed:
        raise ActionError(key, f"must be one of {', '.join(allowed)}")
    return value


def _keys(body: dict, key: str, *, required: bool) -> list[str]:
    value = body.get(key)
    if value is None:
        if required:
            raise ActionError(key, "is required: a list of keys such as Return or Ctrl+t")
        return []
    if not isinstance(value, list) or (required and not value):
        raise ActionError(key, "must be a non-empty list of keys such as Return or Ctrl+t")
    for item in value:
        if not isinstance(item, str) or not item.strip() or len(item) > 64 or any(c.isspace() for c in item):
            raise ActionError(key, f"{item!r} is not a key name (e.g. Return, Tab, Ctrl+t)")
    return value


def _bool(body: dict, key: str, *, required: bool = False) -> bool | None:
    value = body.get(key)
    if value is None:
        if required:
            raise ActionError(key, "is required (true or false)")
        return None
    if not isinstance(value, bool):
        raise ActionError(key, "must be true or false")
    return value


def _unknown(body: dict, allowed: set[str]) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise ActionError(extra[0], "is not a field of this action")


# Real input ----------------------------------------------------------------------------------------

KEYSYMS = {
    "return": "Enter",
    "kp_enter": "Enter",
    "enter": "Enter",
    "backspace": "Backspace",
    "escape": "Escape",
    "esc": "Escape",
    "tab": "Tab",
    "space": " ",
    "delete": "Delete",
    "insert": "Insert",
    "home": "Home",
    "end": "End",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "page_up": "PageUp",
    "prior": "PageUp",
    "page_down": "PageDown",
    "next": "PageDown",
    "ctrl": "Control",
    "control": "Control",
    "control_l": "Control",
    "control_r": "Control",
    "alt": "Alt",
    "alt_l": "Alt",
    "alt_r": "Alt",
    "shift": "Shift",
    "shift_l": "Shift",
    "shift_r": "Shift",
    "super": "Meta",
    "super_l": "Meta",
    "meta": "Meta",
    "cmd": "Meta",
}
CDP_BUTTONS = {"back": "back", "forward": "forward"}
MAX_DRAG_DELAY_S = 1.0


def playwright_key(combination: str) -> str:
    """An xdotool key (``Ctrl+Shift+t``, ``Return``) as Playwright names it (``Control+Shift+t``)."""
    parts = []
    for part in combination.split("+"):
        mapped = KEYSYMS.get(part.lower())
        if mapped is None and len(part) > 1 and part[0] in "fF" and part[1:].isdigit():
            mapped = part.upper()
        parts.append(mapped or part)
    return "+".join(parts)


async def _live(request: Request, record: dict):
    """The session's running page under the Chromium engine (woken if needed), else None."""
    if record.get("_engine") != "chromium":
        return None
    live = await engine.get().live(request.state.tenant, record)
    return live


async def _keys_down(live, keys: list[str], field: str = "hold_keys") -> None:
    for key in keys:
        await _key(live.front.keyboard.down(playwright_key(key)), field, key)


async def _keys_up(live, keys: list[str]) -> None:
    for key in reversed(keys):
        with contextlib.suppress(Exception):
            await live.front.keyboard.up(playwright_key(key))


async def _key(awaitable, field: str, key: str):
    """A keyboard call whose unknown key is the caller's mistake (400), not the browser's."""
    try:
        return await engine.guarded(awaitable, "the page")
    except ApiError as exc:
        message = (exc.inner_error or {}).get("message", "")
        if "Unknown key" in message:
            raise ActionError(field, f"{key!r} is not a key name (e.g. Return, Tab, Ctrl+t)") from None
        raise


async def _held(live, body: dict, action) -> None:
    keys = body.get("hold_keys") or []
    await _keys_down(live, keys)
    try:
        await engine.guarded(action(), "the page")
    finally:
        await _keys_up(live, keys)


async def _press_button(live, x: int, y: int, button: str, kind: str, clicks: int = 1) -> None:
    """Mouse buttons Playwright has no name for (back, forward) go through CDP."""
    await live.cdp.send(
        "Input.dispatchMouseEvent",
        {"type": kind, "x": x, "y": y, "button": CDP_BUTTONS[button], "clickCount": clicks},
    )


# Actions -------------------------------------------------------------------------------------------
# Each checks its whole body first, then applies it, and returns the telemetry it produced.


async def act_move_mouse(request: Request, record: dict, body: dict) -> list:
    _unknown(body, {"x", "y", "smooth", "duration_ms", "hold_keys"})
    x, y = _point(record, body)
    _bool(body, "smooth")
    _int(body, "duration_ms", low=0, high=60_000)
    keys = _keys(body, "hold_keys", required=False)
    live = await _live(request, record)
    if live is not None:
        steps = 12 if body.get("smooth") else 1
        await _held(live, {"hold_keys": keys}, lambda: live.front.mouse.move(x, y, steps=steps))
    screen = screen_of(record)
    screen.x, screen.y = x, y
    screen.last_action = ("move_mouse", x, y)
    return []


async def act_click_mouse(request: Request, record: dict, body: dict) -> list:
    _unknown(body, {"x", "y", "button", "click_type", "hold_keys", "num_clicks"})
    x, y = _point(record, body)
    button = _choice(body, "button", BUTTONS, "left")
    click_type = _choice(body, "click_type", CLICK_TYPES, "click")
    clicks = _int(body, "num_clicks", low=1, high=10) or 1
    _keys(body, "hold_keys", required=False)
    live = await _live(request, record)
    screen = screen_of(record)
    screen.x, screen.y = x, y
    screen.last_action = ("click_mouse", x, y)
    if live is not None:
        await _held(live, body, lambda: _real_click(live, x, y, button, click_type, clicks))
        return []
    if click_type == "up":
        return []
    screen.clicks.append((x, y, button))
    selector, tag, text = element_at(record, x, y)
    screen.focus = (selector, tag, text)
    event = {**_context(record), "x": x, "y": y, "selector": selector, "tag": tag, "text": text}
    return [("interaction_click", dict(event)) for _ in range(clicks)]


async def _real_click(live, x: int, y: int, button: str, click_type: str, clicks: int) -> None:
    mouse = live.front.mouse
    if button in CDP_BUTTONS:
        await mouse.move(x, y)
        if click_type in ("down", "click"):
            await _press_button(live, x, y, button, "mousePressed")
        if click_type in ("up", "click"):
            await _press_button(live, x, y, button, "mouseReleased")
    elif click_type == "down":
        await mouse.move(x, y)
        await mouse.down(button=button)
    elif click_type == "up":
        await mouse.move(x, y)
        await mouse.up(button=button)
    else:
        await mouse.click(x, y, button=button, click_count=clicks)


def _key_events(record: dict, keys: list[str]) -> list:
    selector, tag, _ = screen_of(record).focus
    return [
        ("interaction_key", {**_context(record), "key": key, "selector": selector, "tag": tag})
        for key in keys[:MAX_KEY_EVENTS]
    ]


async def _type(request: Request, record: dict, body: dict) -> list:
    _unknown(body, {"text", "delay"})
    text = body.get("text")
    if not isinstance(text, str) or text == "":
        raise ActionError("text", "is required: the text to type")
    if len(text) > MAX_TEXT:
        raise ActionError("text", f"at most {MAX_TEXT} characters")
    delay = _int(body, "delay", low=0, high=10_000) or 0
    live = await _live(request, record)
    if live is not None:
        # At most MAX_TYPE_DELAY_S of waiting in all, however long the text.
        per_key = min(delay, MAX_TYPE_DELAY_S * 1000 / len(text))
        await engine.guarded(live.front.keyboard.type(text, delay=per_key), "the page")
        screen_of(record).last_action = ("type_text", screen_of(record).x, screen_of(record).y)
        return []
    if delay:
        await asyncio.sleep(min(delay / 1000 * len(text), MAX_TYPE_DELAY_S))
    screen = screen_of(record)
    screen.last_action = ("type_text", screen.x, screen.y)
    keys = ["Enter" if c == "\n" else "Tab" if c == "\t" else c for c in text]
    return _key_events(record, keys)


async def act_press_key(request: Request, record: dict, body: dict) -> list:
    _unknown(body, {"keys", "duration", "hold_keys"})
    keys = _keys(body, "keys", required=True)
    duration = _int(body, "duration", low=0, high=60_000) or 0
    held = _keys(body, "hold_keys", required=False)
    screen = screen_of(record)
    screen.last_action = ("press_key", screen.x, screen.y)
    live = await _live(request, record)
    if live is None:
        return _key_events(record, keys)
    await _keys_down(live, held)
    try:
        for key in keys:
            name = playwright_key(key)
            if duration:
                await _key(live.front.keyboard.down(name), "keys", key)
                await asyncio.sleep(min(duration, MAX_SLEEP_MS) / 1000)
                await _key(live.front.keyboard.up(name), "keys", key)
            else:
                await _key(live.front.keyboard.press(name), "keys", key)
    finally:
        await _keys_up(live, held)
    return []


async def act_scroll(request: Request, record: dict, body: dict) -> list:
    _unknown(body, {"x", "y", "delta_x", "delta_y", "hold_keys"})
    x, y = _point(record, body)
    dx = _int(body, "delta_x", low=-1000, high=1000) or 0
    dy = _int(body, "delta_y", low=-1000, high=1000) or 0
    _keys(body, "hold_keys", required=False)
    width, height = viewport(record)
    screen = screen_of(record)
    live = await _live(request, record)
    if live is not None:

        async def wheel() -> None:
            await live.front.mouse.move(x, y)
            await live.front.mouse.wheel(dx * WHEEL_PX, dy * WHEEL_PX)

        await _held(live, body, wheel)
        screen.x, screen.y = x, y
        screen.last_action = ("scroll", x, y)
        return []
    before = (screen.scroll_x, screen.scroll_y)
    screen.x, screen.y = x, y
    screen.scroll_x = max(0, min(screen.scroll_x + dx * WHEEL_PX, width * (PAGE_VIEWPORTS - 1)))
    screen.scroll_y = max(0, min(screen.scroll_y + dy * WHEEL_PX, height * (PAGE_VIEWPORTS - 1)))
    screen.last_action = ("scroll", x, y)
    if before == (screen.scroll_x, screen.scroll_y):
        return []
    data = {
        **_context(record),
        "from_x": before[0],
        "from_y": before[1],
        "to_x": screen.scroll_x,
        "to_y": screen.scroll_y,
        "target_selector": "html",
    }
    return [("interaction_scroll_settled", data)]


async def act_drag_mouse(request: Request, record: dict, body: dict) -> list:
    _unknown(
        body,
        {
            "path",
            "button",
            "delay",
            "duration_ms",
            "smooth",
            "step_delay_ms",
            "steps_per_segment",
            "hold_keys",
        },
    )
    path = body.get("path")
    if not isinstance(path, list) or len(path) < 2:
        raise ActionError("path", "is required: at least two [x, y] points")
    width, height = viewport(record)
    points = []
    for index, point in enumerate(path):
        if (
            not isinstance(point, list)
            or len(point) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in point)
        ):
            raise ActionError("path", f"point {index} must be [x, y] integers")
        if not (0 <= point[0] < width and 0 <= point[1] < height):
            raise ActionError("path", f"point {index} ({point[0]}, {point[1]}) is outside the viewport")
        points.append(point)
    button = _choice(body, "button", DRAG_BUTTONS, "left")
    for key in ("delay", "duration_ms", "step_delay_ms"):
        _int(body, key, low=0, high=60_000)
    steps = _int(body, "steps_per_segment", low=1, high=1000) or (10 if body.get("smooth") else 1)
    _bool(body, "smooth")
    _keys(body, "hold_keys", required=False)
    live = await _live(request, record)
    if live is not None:

        async def drag() -> None:
            mouse = live.front.mouse
            await mouse.move(*points[0])
            await mouse.down(button=button)
            await asyncio.sleep(min((body.get("delay") or 0) / 1000, MAX_DRAG_DELAY_S))
            for x, y in points[1:]:
                await mouse.move(x, y, steps=min(steps, 100))
            await mouse.up(button=button)

        await _held(live, body, drag)
    screen = screen_of(record)
    screen.x, screen.y = points[-1]
    screen.last_action = ("drag_mouse", screen.x, screen.y)
    return []


async def act_set_cursor(request: Request, record: dict, body: dict) -> list:
    _unknown(body, {"hidden"})
    screen_of(record).hidden = _bool(body, "hidden", required=True)
    return []


async def act_sleep(request: Request, record: dict, body: dict) -> list:
    _unknown(body, {"duration_ms"})
    duration = _int(body, "duration_ms", required=True, low=0, high=MAX_SLEEP_MS)
    await asyncio.sleep(duration / 1000)
    return []


BATCH_ACTIONS = {
    "click_mouse": act_click_mouse,
    "move_mouse": act_move_mouse,
    "type_text": _type,
    "press_key": act_press_key,
    "scroll": act_scroll,
    "drag_mouse": act_drag_mouse,
    "set_cursor": act_set_cursor,
    "sleep": act_sleep,
}


def single(operation: str, action):
    """An endpoint for one action: its field errors are details named after the field."""

    @endpoint
    async def handler(request: Request):
        record = sessions.of_path(request)
        body = await read_json(request)
        try:
            events = await action(request, record, body)
        except ActionError as exc:
            raise invalid(f"{operation}: {exc.field} {exc.message}", **{exc.field: exc.message}) from None
        emit(request.state.tenant, record, [*events, _api_call(request, operation)])
        return no_content()

    handler.__name__ = operation
    return handler


@endpoint
async def batch(request: Request):
    record = sessions.of_path(request)
    body = await read_json(request)
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions:
        raise invalid("actions is required", actions="a non-empty list of actions")
    if len(actions) > 100:
        raise invalid("too many actions", actions="at most 100 actions in one batch")
    events: list = []
    tenant = request.state.tenant
    for index, action in enumerate(actions):
        try:
            kind, sub = _batch_action(action)
            events += await BATCH_ACTIONS[kind](request, record, sub)
        except ActionError as exc:
            emit(tenant, record, events)
            label = (
                action.get("type")
                if isinstance(action, dict) and isinstance(action.get("type"), str)
                else "?"
            )
            where = exc.field if exc.top else f"{label}.{exc.field}"
            raise ApiError(
                400,
                "batch_action_failed",
                f"action {index} ({label}) failed: {where} {exc.message}; "
                f"{index} action(s) before it ran, the rest did not",
                details=[{"code": f"actions[{index}]", "message": f"{where}: {exc.message}"}],
            ) from None
    emit(tenant, record, [*events, _api_call(request, "batch")])
    return no_content()


def _batch_action(action) -> tuple[str, dict]:
    if not isinstance(action, dict):
        raise ActionError("type", "each action must be an object {type, <type>: {...}}", top=True)
    kind = action.get("type")
    if kind not in BATCH_ACTIONS:
        raise ActionError("type", f"must be one of {', '.join(BATCH_ACTIONS)}", top=True)
    others = sorted(k for k in action if k not in ("type", kind))
    if others:
        raise ActionError(others[0], f"the action carries only its {kind!r} object", top=True)
    sub = action.get(kind)
    if sub is None:
        sub = {}
    if not isinstance(sub, dict):
        raise ActionError(kind, "must be an object", top=True)
    return kind, sub


@endpoint
async def get_mouse_position(request: Request):
    screen = screen_of(sessions.of_path(request, activity=False))
    return ok({"x": screen.x, "y": screen.y})


@endpoint
async def set_cursor(request: Request):
    record = sessions.of_path(request)
    try:
        await act_set_cursor(request, record, await read_json(request))
    except ActionError as exc:
        raise invalid(f"cursor: {exc.field} {exc.message}", **{exc.field: exc.message}) from None
    return ok({"ok": True})


@endpoint
async def clipboard_read(request: Request):
    return ok({"text": screen_of(sessions.of_path(request)).clipboard})


@endpoint
async def clipboard_write(request: Request):
    record = sessions.of_path(request)
    body = await read_json(request)
    text = body.get("text")
    if not isinstance(text, str):
        raise invalid("text is required", text="the text to put on the clipboard")
    if len(text) > 1024 * 1024:
        raise invalid("text is too long", text="at most 1 MiB")
    screen_of(record).clipboard = text
    return no_content()


# Screenshots ---------------------------------------------------------------------------------------


def png(width: int, height: int, rgb: bytes | bytearray) -> bytes:
    """An 8-bit RGB PNG (no filtering) from ``width * height * 3`` bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    stride = width * 3
    raw = b"".join(b"\x00" + bytes(rgb[row * stride : (row + 1) * stride]) for row in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )


class Canvas:
    """Draws in viewport coordinates onto a scaled RGB pixel buffer."""

    def __init__(self, region: tuple[int, int, int, int]):
        self.rx, self.ry, rw, rh = region
        self.scale = min(SHOT_MAX[0] / rw, SHOT_MAX[1] / rh)
        self.width = max(1, round(rw * self.scale))
        self.height = max(1, round(rh * self.scale))
        self.pixels = bytearray(b"\xff" * (self.width * self.height * 3))

    def to_px(self, x: float, y: float) -> tuple[int, int]:
        return round((x - self.rx) * self.scale), round((y - self.ry) * self.scale)

    def fill_px(self, x0: int, y0: int, x1: int, y1: int, colour: tuple[int, int, int]) -> None:
        x0, x1 = max(0, x0), min(self.width, x1)
        y0, y1 = max(0, y0), min(self.height, y1)
        if x0 >= x1 or y0 >= y1:
            return
        row = bytes(colour) * (x1 - x0)
        for y in range(y0, y1):
            start = (y * self.width + x0) * 3
            self.pixels[start : start + len(row)] = row

    def fill(self, x0: float, y0: float, x1: float, y1: float, colour) -> None:
        px0, py0 = self.to_px(x0, y0)
        px1, py1 = self.to_px(x1, y1)
        self.fill_px(px0, py0, max(px1, px0 + 1), max(py1, py0 + 1), colour)

    def ring(self, cx: int, cy: int, radius: int, thickness: int, colour) -> None:
        self.fill_px(cx - radius, cy - radius, cx + radius + 1, cy - radius + thickness, colour)
        self.fill_px(cx - radius, cy + radius - thickness + 1, cx + radius + 1, cy + radius + 1, colour)
        self.fill_px(cx - radius, cy - radius, cx - radius + thickness, cy + radius + 1, colour)
        self.fill_px(cx + radius - thickness + 1, cy - radius, cx + radius + 1, cy + radius + 1, colour)


def screenshot(record: dict, region: tuple[int, int, int, int] | None = None) -> bytes:
    width, height = viewport(record)
    canvas = Canvas(region or (0, 0, width, height))
    screen = screen_of(record)
    for (left, top, w, h), _, _, _, colour in LAYOUT:
        canvas.fill(left * width, top * height, (left + w) * width, (top + h) * height, colour)
    # The scrollbar: where the viewport is on a page PAGE_VIEWPORTS tall.
    track = width - max(6, width // 160)
    canvas.fill(track, 0, width, height, (243, 244, 246))
    thumb_top = screen.scroll_y / (height * PAGE_VIEWPORTS) * height
    canvas.fill(track, thumb_top, width, thumb_top + height / PAGE_VIEWPORTS, (156, 163, 175))
    for x, y, button in screen.clicks:
        px, py = canvas.to_px(x, y)
        colour = MARK_COLOURS.get(button, OTHER_MARK)
        canvas.fill_px(px - 3, py - 3, px + 4, py + 4, colour)
        canvas.ring(px, py, 6, 1, colour)
    if screen.last_action is not None:
        _, ax, ay = screen.last_action
        px, py = canvas.to_px(ax, ay)
        canvas.ring(px, py, 10, 2, LAST_ACTION)
    if not screen.hidden:
        px, py = canvas.to_px(screen.x, screen.y)
        canvas.fill_px(px - 12, py - 1, px + 13, py + 2, POINTER)
        canvas.fill_px(px - 1, py - 12, px + 2, py + 13, POINTER)
        canvas.fill_px(px - 2, py - 2, px + 3, py + 3, (255, 255, 255))
    return png(canvas.width, canvas.height, canvas.pixels)


@endpoint
async def take_screenshot(request: Request):
    record = sessions.of_path(request, activity=False)
    body = await read_json(request)
    region = body.get("region")
    box = None
    if region is not None:
        width, height = viewport(record)
        if not isinstance(region, dict):
            raise invalid("region must be an object", region="{x, y, width, height}")
        try:
            x = _int(region, "x", required=True, low=0, high=width - 1)
            y = _int(region, "y", required=True, low=0, high=height - 1)
            w = _int(region, "width", required=True, low=1, high=width - x)
            h = _int(region, "height", required=True, low=1, high=height - y)
        except ActionError as exc:
            raise invalid(f"region.{exc.field} {exc.message}", region=f"{exc.field} {exc.message}") from None
        box = (x, y, w, h)
    if record.get("_engine") == "chromium":
        clip = {"x": box[0], "y": box[1], "width": box[2], "height": box[3]} if box else None
        image = await engine.get().on_page(
            request.state.tenant,
            record,
            lambda live: live.front.screenshot(type="png", clip=clip),
            "the page's screenshot",
        )
    else:
        image = screenshot(record, box)
    return Response(image, media_type="image/png", headers={"Cache-Control": "no-store"})


def seed(tenant: Tenant) -> None:
    """Demo sessions start with the pointer where a recent run left it, with a few clicks to show."""
    for record in tenant.table("browsers").values():
        if record.get("_deleted") or record.get("headless"):
            continue
        width, height = viewport(record)
        screen = screen_of(record)
        screen.clicks.extend(
            [
                (int(width * 0.62), int(height * 0.43), "left"),
                (int(width * 0.75), int(height * 0.04), "left"),
                (int(width * 0.30), int(height * 0.40), "right"),
            ]
        )
        screen.x, screen.y = int(width * 0.61), int(height * 0.44)
        screen.last_action = ("click_mouse", int(width * 0.62), int(height * 0.43))


def _action_routes():
    for operation, action in (
        ("move_mouse", act_move_mouse),
        ("click_mouse", act_click_mouse),
        ("type", _type),
        ("press_key", act_press_key),
        ("scroll", act_scroll),
        ("drag_mouse", act_drag_mouse),
    ):
        yield Route(f"/browsers/{{id}}/computer/{operation}", single(operation, action), methods=["POST"])


routes = [
    *_action_routes(),
    Route("/browsers/{id}/computer/batch", batch, methods=["POST"]),
    Route("/browsers/{id}/computer/screenshot", take_screenshot, methods=["POST"]),
    Route("/browsers/{id}/computer/get_mouse_position", get_mouse_position, methods=["POST"]),
    Route("/browsers/{id}/computer/cursor", set_cursor, methods=["POST"]),
    Route("/browsers/{id}/computer/clipboard/read", clipboard_read, methods=["POST"]),
    Route("/browsers/{id}/computer/clipboard/write", clipboard_write, methods=["POST"]),
]
