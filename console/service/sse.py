"""Reading the service's server-sent event streams (``http.sse`` reads the bytes, ``http.EventParser`` the
events in them).

``events`` reads one connection. ``follow`` keeps reading across dropped connections by
reconnecting with ``Last-Event-ID``.

How a normal end is told from a drop: a connection that breaks mid-way (reset, incomplete chunked
body, read error) raises ``StreamDropped`` inside ``events`` — that is always a drop. A connection
the server closes cleanly after a complete frame looks the same whether the resource ended (the
telemetry stream closes when the session ends) or a proxy cut it. So ``follow`` asks the caller:
after a clean close it reconnects only if ``should_reconnect()`` (e.g. "is the session still
running?") returns True; without that callback a clean close ends ``follow``. After an abrupt drop it
reconnects unless ``should_reconnect()`` says False. At most ``max_reconnects`` reconnects in a row
without a new event; the delay grows 0.2 s · 2ⁿ up to 2 s (or the server's ``retry:`` hint).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import Any, NamedTuple

from console.service import errors
from console.service.http import INLINE_PARSE_BYTES, Service, decode_json, parse_json, sse

log = logging.getLogger("console.service")

RECONNECT_BASE = 0.2
RECONNECT_CAP = 2.0
RECONNECT_HINT_CAP = 30.0


class ServerEvent(NamedTuple):
    """One event of a stream (immutable; a named tuple, cheaper to build than a frozen dataclass: the relay
    builds one for every event it reads)."""

    id: str | None
    event: str | None
    data: Any  # parsed JSON, or the raw string when it is not JSON
    retry: int | None = None  # reconnection hint in ms, when the frame carried one

    @property
    def int_id(self) -> int | None:
        try:
            return int(self.id) if self.id is not None else None
        except ValueError:
            return None


def _to_event(frame: Any) -> ServerEvent | None:
    """The event of one frame, its data parsed here (``to_event`` parses a large one in a worker thread)."""
    if frame.data == "":
        # A bare `retry:` line, or an event with no data: nothing to deliver (SSE spec).
        return None
    try:
        data = decode_json(frame.data)
    except (ValueError, RecursionError):  # not JSON, or past the JSON bounds of http.decode_json
        data = frame.data
    return _event(frame, data)


async def to_event(frame: Any) -> ServerEvent | None:
    """``_to_event`` without holding the event loop for a large event (one may be ``MAX_EVENT``, 16 MiB)."""
    if frame.data == "" or len(frame.data) <= INLINE_PARSE_BYTES:
        return _to_event(frame)
    try:
        data = await parse_json(frame.data)
    except (ValueError, RecursionError):
        data = frame.data
    return _event(frame, data)


def _event(frame: Any, data: Any) -> ServerEvent:
    event = frame.event if frame.event and frame.event != "message" else None
    # tuple.__new__ itself, every field given: a named tuple's __new__ is a Python call, made for every event.
    return tuple.__new__(ServerEvent, (frame.id or None, event, data, frame.retry))


async def events(
    svc: Service,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    last_event_id: str | int | None = None,
) -> AsyncIterator[ServerEvent]:
    """Yield the events of one connection; stops when the server ends the stream.

    Raises a ServiceError at open (404, 401, ...) and ``StreamDropped`` if the connection breaks.
    Leaving the ``async for`` (or ``aclose()``) closes the connection.
    """
    last = None if last_event_id is None else str(last_event_id)
    async with sse(svc, path, params=params, last_event_id=last) as frames:
        async for frame in frames:
            event = await to_event(frame)
            if event is not None:
                yield event


async def follow(
    svc: Service,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    last_event_id: str | int | None = None,
    should_reconnect: Callable[[], Awaitable[bool]] | None = None,
    max_reconnects: int = 5,
) -> AsyncIterator[ServerEvent]:
    """Yield each event once across reconnects (see the module docstring for when it reconnects).

    Events whose integer id is not above the last one seen are skipped, so a server that replays
    from ``Last-Event-ID`` inclusively causes no duplicates.
    """
    last = None if last_event_id is None else str(last_event_id)
    failures = 0
    delay_hint: float | None = None
    while True:
        dropped = False
        try:
            # aclosing: when our consumer stops, the connection closes now, not at garbage collection.
            async with aclosing(events(svc, path, params=params, last_event_id=last)) as stream:
                async for event in stream:
                    if event.retry is not None:
                        delay_hint = min(event.retry / 1000, RECONNECT_HINT_CAP)
                    if _already_seen(event, last):
                        continue
                    if event.id is not None:
                        last = event.id
                    failures = 0
                    yield event
        except (errors.StreamDropped, errors.Unavailable) as exc:
            if not isinstance(exc, errors.StreamDropped) and exc.status not in (None, 502, 503, 504):
                raise
            dropped = True
            log.debug("stream %s dropped (%s); last event id %s", path, exc.message, last)
            if failures >= max_reconnects:
                raise
        if not dropped and failures >= max_reconnects:
            return
        if should_reconnect is None:
            if not dropped:
                return
        elif not await should_reconnect():
            return
        delay = delay_hint if delay_hint is not None else min(RECONNECT_BASE * 2**failures, RECONNECT_CAP)
        failures += 1
        await asyncio.sleep(delay)


def _already_seen(event: ServerEvent, last: str | None) -> bool:
    if last is None or event.int_id is None:
        return False
    try:
        return event.int_id <= int(last)
    except ValueError:
        return False
