"""Invocations: run an app action, follow it, cancel it, clean up its browsers (notes §13)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

from console.service import sse
from console.service.collection import Collection, fetch_list
from console.service.contract import TERMINAL_INVOCATION_STATUSES
from console.service.http import Service, decode_json, request
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


# Newest first. ``since`` is RFC 3339 or a duration such as ``5m``.
INVOCATIONS = Collection(
    "/invocations",
    Invocation,
    filters=("app_name", "action_name", "version", "deployment_id", "status", "since", "query"),
)
list_invocations = INVOCATIONS.list
get_invocation = INVOCATIONS.get


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
    return await INVOCATIONS.create(svc, body)


async def cancel_invocation(svc: Service, invocation_id: str) -> Invocation:
    """``PATCH status=failed`` is the service's cancel; a finished invocation gives Conflict."""
    return await INVOCATIONS.update(svc, invocation_id, {"status": "failed"})


async def complete_invocation(svc: Service, invocation_id: str, output: Any = None) -> Invocation:
    body: dict[str, Any] = {"status": "succeeded"}
    if output is not None:
        body["output"] = json.dumps(output)
    return await INVOCATIONS.update(svc, invocation_id, body)


async def list_browsers(svc: Service, invocation_id: str) -> list[InvocationBrowser]:
    """The active browser sessions the invocation created."""
    path = INVOCATIONS.at(invocation_id, "/browsers")
    return await fetch_list(svc, InvocationBrowser, path, key="browsers")


async def delete_browsers(svc: Service, invocation_id: str) -> None:
    await request(svc, "DELETE", INVOCATIONS.at(invocation_id, "/browsers"), expect="none")


def events_path(invocation_id: str) -> str:
    return INVOCATIONS.at(invocation_id, "/events")


def events(svc: Service, invocation_id: str, *, since: str | None = None) -> AsyncIterator[sse.ServerEvent]:
    """The invocation's SSE stream (``log``, ``invocation_state``, ``error``, ``sse_heartbeat``; the kind
    is ``event.data["event"]``). It ends at a terminal state and is not resumable."""
    return sse.events(svc, events_path(invocation_id), params={"since": since} if since else None)
