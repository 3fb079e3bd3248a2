"""Computer actions on a browser session (notes §3): mouse, keyboard, scroll, drag, cursor, clipboard,
batches, and screenshots (PNG bytes).

A batch is a list of ``{type, <type>: {...}}`` actions run in order, stopping at the first error; the
service names the failing action in a detail whose code is ``actions[<index>]`` (``failed_action``).
"""

from __future__ import annotations

import re
from typing import Any

from console.service.collection import BrowserPart
from console.service.errors import ServiceError
from console.service.http import Service, request

__all__ = [
    "action",
    "batch",
    "click_mouse",
    "drag_mouse",
    "failed_action",
    "mouse_position",
    "move_mouse",
    "press_key",
    "read_clipboard",
    "screenshot",
    "scroll",
    "set_cursor",
    "type_text",
    "write_clipboard",
]

_FAILED = re.compile(r"^actions\[(\d+)\]")


COMPUTER = BrowserPart("computer")


def _clean(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


async def _post(svc: Service, session_id: str, tail: str, body: dict[str, Any]) -> None:
    await request(svc, "POST", COMPUTER.at(session_id, tail), json=_clean(body), expect="none")


async def move_mouse(svc: Service, session_id: str, x: int, y: int, *, smooth: bool | None = None) -> None:
    await _post(svc, session_id, "move_mouse", {"x": x, "y": y, "smooth": smooth})


async def click_mouse(
    svc: Service,
    session_id: str,
    x: int,
    y: int,
    *,
    button: str | None = None,
    click_type: str | None = None,
    num_clicks: int | None = None,
    hold_keys: list[str] | None = None,
) -> None:
    body = {
        "x": x,
        "y": y,
        "button": button,
        "click_type": click_type,
        "num_clicks": num_clicks,
        "hold_keys": hold_keys,
    }
    await _post(svc, session_id, "click_mouse", body)


async def type_text(svc: Service, session_id: str, text: str, *, delay: int | None = None) -> None:
    await _post(svc, session_id, "type", {"text": text, "delay": delay})


async def press_key(
    svc: Service,
    session_id: str,
    keys: list[str],
    *,
    duration: int | None = None,
    hold_keys: list[str] | None = None,
) -> None:
    await _post(svc, session_id, "press_key", {"keys": keys, "duration": duration, "hold_keys": hold_keys})


async def scroll(
    svc: Service, session_id: str, x: int, y: int, *, delta_x: int | None = None, delta_y: int | None = None
) -> None:
    await _post(svc, session_id, "scroll", {"x": x, "y": y, "delta_x": delta_x, "delta_y": delta_y})


async def drag_mouse(
    svc: Service, session_id: str, path: list[list[int]], *, button: str | None = None
) -> None:
    await _post(svc, session_id, "drag_mouse", {"path": path, "button": button})


async def set_cursor(svc: Service, session_id: str, *, hidden: bool) -> None:
    await request(svc, "POST", COMPUTER.at(session_id, "cursor"), json={"hidden": hidden}, expect="none")


def action(kind: str, **fields: Any) -> dict[str, Any]:
    """One batch action: ``action("sleep", duration_ms=5)`` → ``{"type": "sleep", "sleep": {...}}``."""
    return {"type": kind, kind: _clean(fields)}


async def batch(svc: Service, session_id: str, actions: list[dict[str, Any]]) -> None:
    """Run the actions in order; on a refusal ``failed_action(error)`` says which one failed."""
    await request(svc, "POST", COMPUTER.at(session_id, "batch"), json={"actions": actions}, expect="none")


def failed_action(error: ServiceError) -> tuple[int, str] | None:
    """(index, message) of the batch action a 400 names in its details, else None."""
    for detail in error.details:
        match = _FAILED.match(str(detail.get("code") or ""))
        if match:
            return int(match.group(1)), str(detail.get("message") or error.message)
    return None


async def screenshot(svc: Service, session_id: str, *, region: dict[str, int] | None = None) -> bytes:
    """The screen as PNG bytes (optionally a ``{x, y, width, height}`` region of it)."""
    body = {"region": region} if region else {}
    reply = await request(
        svc,
        "POST",
        COMPUTER.at(session_id, "screenshot"),
        json=body,
        headers={"Accept": "image/png"},
        expect="bytes",
    )
    return reply.content


async def mouse_position(svc: Service, session_id: str) -> tuple[int, int] | None:
    reply = await request(svc, "POST", COMPUTER.at(session_id, "get_mouse_position"), retry=True)
    data = reply.data if isinstance(reply.data, dict) else {}
    x, y = data.get("x"), data.get("y")
    return (x, y) if isinstance(x, int) and isinstance(y, int) else None


async def read_clipboard(svc: Service, session_id: str) -> str:
    reply = await request(svc, "POST", COMPUTER.at(session_id, "clipboard/read"), retry=True)
    text = (reply.data or {}).get("text") if isinstance(reply.data, dict) else None
    return text if isinstance(text, str) else ""


async def write_clipboard(svc: Service, session_id: str, text: str) -> None:
    await request(svc, "POST", COMPUTER.at(session_id, "clipboard/write"), json={"text": text}, expect="none")
