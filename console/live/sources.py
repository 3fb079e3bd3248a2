"""Upstream sources for channels: the service's SSE streams, with an OPENED marker once connected."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from console.live.hub import OPENED, upstream_heard
from console.service.http import Service, sse
from console.service.sse import ServerEvent, _to_event


def service_stream(
    svc: Service, path: str, *, params: Mapping[str, Any] | None = None
) -> Callable[[str | None], AsyncIterator[Any]]:
    """A channel's ``open``: reads ``path`` of the service, resuming from the id it is given."""

    async def open_stream(last_event_id: str | None) -> AsyncIterator[ServerEvent | object]:
        heard = upstream_heard.get()
        async with sse(svc, path, params=params, last_event_id=last_event_id, on_bytes=heard) as frames:
            yield OPENED
            async for frame in frames:
                event = _to_event(frame)
                if event is not None:
                    yield event

    return open_stream
