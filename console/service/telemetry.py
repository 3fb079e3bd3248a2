"""Browser telemetry (spec: Telemetry page query parameters, Telemetry stream; notes §6).

Pages: ``offset`` is an opaque cursor from ``X-Next-Offset`` (never a seq); ``since`` is ignored once a
cursor is given; ``order="desc"`` reads newest first and cannot be combined with ``since`` (400);
categories are sent comma-joined (as the SDK does). The category filter applies within a page, so a page
can be empty while ``has_more`` is true.

Stream: ``GET /browsers/{id}/telemetry/stream``; each frame is one envelope with ``id: <seq>``; resume
with ``Last-Event-ID``; ``replay=all`` starts at the oldest retained event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from console import redaction
from console.service.collection import browser_path
from console.service.http import Service
from console.service.pagination import Page, fetch_page
from console.service.records import Record
from console.service.sse import ServerEvent, events

__all__ = [
    "Envelope",
    "TelemetryEvent",
    "envelope_from_event",
    "list_events",
    "moment",
    "stream",
    "stream_path",
]


class TelemetryEvent(Record):
    ts: int | None = None  # Unix microseconds
    type: str | None = None
    category: str | None = None
    source: dict[str, Any] | None = None
    data: dict[str, Any] | None = None
    truncated: bool = False

    # Redacted as it is read (console.redaction): the service may send what a page posted or was sent,
    # credentials included, and every pane, stream frame and card is built from this record (an envelope's
    # event too: nested records are built through here). The function itself, not a method calling it.
    _prepare = staticmethod(redaction.event)

    @property
    def time(self) -> datetime | None:
        return moment(self.ts)

    @property
    def fields(self) -> dict[str, Any]:
        return self.data if isinstance(self.data, dict) else {}


def moment(ts: Any) -> datetime | None:
    """An event's ``ts`` (Unix microseconds) as an aware datetime (None when it has none)."""
    if not isinstance(ts, int | float):
        return None
    return datetime.fromtimestamp(ts / 1_000_000, tz=UTC)


class Envelope(Record):
    seq: int | None = None
    event: TelemetryEvent | None = None

    @classmethod
    def _prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        # The event redacts itself; fields the service adds are shown raw too, so they are redacted here (a
        # number, the seq, holds nothing to redact).
        prepared = {}  # (a loop: a comprehension is a function made and called, for two fields)
        for key, value in data.items():
            prepared[key] = value if key == "event" or type(value) is int else redaction.walk(value)
        return prepared

    @property
    def kind(self) -> str:
        return (self.event.type if self.event else None) or "unknown"

    @property
    def category(self) -> str:
        return (self.event.category if self.event else None) or "unknown"


def _events_path(session_id: str) -> str:
    return browser_path(session_id, "telemetry", "events")


def stream_path(session_id: str) -> str:
    return browser_path(session_id, "telemetry", "stream")


async def list_events(
    svc: Service,
    session_id: str,
    *,
    limit: int = 20,
    offset: int | str | None = None,
    since: str | None = None,
    until: str | None = None,
    categories: list[str] | tuple[str, ...] | None = None,
    types: list[str] | tuple[str, ...] | None = None,
    order: str = "asc",
) -> Page[Envelope]:
    """One page of archived events; ``since``/``until`` take RFC 3339 or a duration such as ``5m``.

    ``types`` (SDK 0.131) filters by event type on the service, like ``categories`` within the page; with
    both, an event must match both.
    """
    params = {
        "since": since or None,
        "until": until or None,
        "category": list(categories) if categories else None,
        "type": list(types) if types else None,
        "order": order,
    }
    return await fetch_page(
        svc, _events_path(session_id), Envelope, limit=limit, offset=offset or None, params=params
    )


def envelope_from_event(event: ServerEvent) -> Envelope | None:
    """The envelope in one stream frame (None for a frame that is not one)."""
    if not isinstance(event.data, dict):
        return None
    envelope = Envelope.from_json(event.data)
    if envelope.seq is None and event.int_id is not None:
        envelope = Envelope.from_json({**event.data, "seq": event.int_id})
    return envelope


async def stream(
    svc: Service, session_id: str, *, last_event_id: str | int | None = None, replay: bool = False
) -> AsyncIterator[Envelope]:
    """The live events of one connection (ends when the session ends; ``StreamDropped`` on a drop)."""
    params = {"replay": "all"} if replay else None
    async for event in events(svc, stream_path(session_id), params=params, last_event_id=last_event_id):
        envelope = envelope_from_event(event)
        if envelope is not None:
            yield envelope
