"""Invocations: run an app action, follow it, cancel it, clean up its browsers (notes §13)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

from console.service import sse
from console.service.contract import TERMINAL_INVOCATION_STATUSES
from console.service.http import Service, decode_json, list_max_bytes, path_segment, request
from console.service.pagination import Page, fetch_page
from console.service.records import LinkName, Record, Seconds, Text

__all__ = [
    "Invocation",
    "InvocationBrowser",
    "cancel_invocation",
    "complete_invocation",
    "delete_browsers",
    "events",
    "get_invocation",
    "invoke",
    "list_browsers",
    "list_invocations",
]


def _parsed(text: Any) -> Any:
    if text is None or text == "":
        return None
    if not isinstance(text, str):  # a service that sends the value itself rather than its JSON text
        return text
    try:
        return decode_json(text)  # within the bounds of any answer (objects, depth)
    except (ValueError, RecursionError):
        return text


class Invocation(Record):
    id: str
    # Path segments of the app pages' URLs.
    app_name: LinkName | None = None
    version: LinkName | None = None
    action_name: LinkName | None = None
    payload: Any = None  # a JSON string (a value of another type is shown as it is)
    output: Any = None  # a JSON string (likewise)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    status: str | None = None  # queued | running | succeeded | failed
    status_reason: Text | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_INVOCATION_STATUSES

    @property
    def payload_value(self) -> Any:
        return _parsed(self.payload)

    @property
    def output_value(self) -> Any:
        return _parsed(self.output)

    @property
    def duration(self) -> timedelta | None:
        if isinstance(self.started_at, datetime) and isinstance(self.finished_at, datetime):
            return self.finished_at - self.started_at
        return None


class InvocationBrowser(Record):
    """The part of a browser session record (notes §2) the invocation page shows."""

    session_id: str
    name: str | None = None
    created_at: datetime | None = None
    headless: bool | None = None
    stealth: bool | None = None
    region: str | None = None
    timeout_seconds: Seconds | None = None


def _path(invocation_id: str, rest: str = "") -> str:
    return f"/invocations/{path_segment(invocation_id)}{rest}"


async def list_invocations(
    svc: Service,
    *,
    limit: int = 20,
    offset: int = 0,
    app_name: str | None = None,
    action_name: str | None = None,
    version: str | None = None,
    deployment_id: str | None = None,
    status: str | None = None,
    since: str | None = None,
    query: str | None = None,
) -> Page[Invocation]:
    """Newest first. ``since`` is RFC 3339 or a duration such as ``5m``."""
    params = {
        "app_name": app_name,
        "action_name": action_name,
        "version": version,
        "deployment_id": deployment_id,
        "status": status,
        "since": since,
        "query": query,
    }
    params = {k: v for k, v in params.items() if v}
    return await fetch_page(svc, "/invocations", Invocation, limit=limit, offset=offset, params=params)


async def get_invocation(svc: Service, invocation_id: str) -> Invocation:
    return Invocation.from_json((await request(svc, "GET", _path(invocation_id))).data)


async def invoke(
    svc: Service,
    *,
    app_name: str,
    action_name: str,
    version: str,
    payload: Any = None,
    run_async: bool = True,
    async_timeout_seconds: int | None = None,
) -> Invocation:
    """Start an invocation; asynchronous by default (202, status ``queued``).

    ``payload`` is any JSON value; it travels as a JSON string. The answer holds only ``id``,
    ``action_name``, ``status`` (and maybe ``status_reason``/``output``): fetch the rest when needed.
    """
    body: dict[str, Any] = {
        "app_name": app_name,
        "action_name": action_name,
        "version": version,
        "async": run_async,
    }
    if payload is not None:
        body["payload"] = json.dumps(payload)
    if async_timeout_seconds is not None:
        body["async_timeout_seconds"] = async_timeout_seconds
    return Invocation.from_json((await request(svc, "POST", "/invocations", json=body)).data)


async def cancel_invocation(svc: Service, invocation_id: str) -> Invocation:
    """``PATCH status=failed`` is the service's cancel; a finished invocation gives Conflict."""
    reply = await request(svc, "PATCH", _path(invocation_id), json={"status": "failed"})
    return Invocation.from_json(reply.data)


async def complete_invocation(svc: Service, invocation_id: str, output: Any = None) -> Invocation:
    body: dict[str, Any] = {"status": "succeeded"}
    if output is not None:
        body["output"] = json.dumps(output)
    return Invocation.from_json((await request(svc, "PATCH", _path(invocation_id), json=body)).data)


async def list_browsers(svc: Service, invocation_id: str) -> list[InvocationBrowser]:
    """The active browser sessions the invocation created."""
    data = (
        await request(svc, "GET", _path(invocation_id, "/browsers"), max_bytes=list_max_bytes())
    ).data or {}
    return InvocationBrowser.list_from_json(data.get("browsers") if isinstance(data, dict) else None)


async def delete_browsers(svc: Service, invocation_id: str) -> None:
    await request(svc, "DELETE", _path(invocation_id, "/browsers"), expect="none")


def events_path(invocation_id: str) -> str:
    return _path(invocation_id, "/events")


def events(svc: Service, invocation_id: str, *, since: str | None = None) -> AsyncIterator[sse.ServerEvent]:
    """The invocation's SSE stream (``log``, ``invocation_state``, ``error``, ``sse_heartbeat``; the kind
    is ``event.data["event"]``). It ends at a terminal state and is not resumable."""
    return sse.events(svc, events_path(invocation_id), params={"since": since} if since else None)
