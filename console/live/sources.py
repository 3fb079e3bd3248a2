"""Upstream sources for channels: the service's SSE streams, with an OPENED marker once connected, and a
cheap probe of the service for the hub's liveness check (a quiet stream, or a frozen service?)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from console.live import hub
from console.live.hub import OPENED, upstream_heard
from console.service import errors
from console.service.http import Read, Service, SSEFrame, request, sse
from console.service.sse import ServerEvent, _to_event

log = logging.getLogger("console.live")

# What the probe asks: the service's cheapest read ("who am I"), answered by the API itself.
PROBE_PATH = "/auth/context"


class Prober:
    """Whether a service answers, asked at most once at a time per service (base URL and key) in this
    process, the newest answer shared by every channel of that service: a hundred quiet streams of one
    org cost one request per probe interval, not a hundred. Any HTTP answer counts (a 401 or a 503 is a
    service that answers); a timeout or a connection that fails does not."""

    def __init__(self, svc: Service):
        self.svc = svc
        self.answered_at = float("-inf")  # event-loop time of the newest answer
        self.asking: asyncio.Task | None = None

    async def _ask(self, timeout: float) -> None:
        try:
            async with asyncio.timeout(timeout):
                await request(self.svc, "GET", PROBE_PATH, expect="none", retry=False, timeout=timeout)
        except errors.ServiceError as exc:
            if exc.status is None:
                return  # nothing answered
        except TimeoutError:
            return
        except Exception:  # (an address the console may no longer reach, a bug): no answer, said in the log
            log.warning("probing %s failed", PROBE_PATH, exc_info=True)
            return
        self.answered_at = asyncio.get_running_loop().time()

    async def answered_since(self, since: float, timeout: float) -> bool:
        """Whether the service answered after ``since`` (event-loop time), asking it if no answer that
        recent is known, within ``timeout`` seconds."""
        if self.answered_at > since:
            return True
        if self.asking is None or self.asking.done():
            self.asking = asyncio.get_running_loop().create_task(self._ask(timeout))
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(self.asking)
        except TimeoutError:
            pass
        return self.answered_at > since


_probers: dict[tuple[str, str], Prober] = {}
MAX_PROBERS = 1000  # one per org's service; past that they start over (a probe or two more, nothing lost)


def prober(svc: Service) -> Prober:
    key = (svc.base_url, svc.api_key)
    found = _probers.get(key)
    if found is None:
        if len(_probers) >= MAX_PROBERS:
            _probers.clear()
        found = _probers[key] = Prober(svc)
    return found


class ServiceStream:
    """A channel's ``open`` reading ``path`` of the service (resuming from the id it is given), and its
    ``probe``: does the service answer at all (console.live.hub calls it when the stream went quiet)."""

    def __init__(self, svc: Service, path: str, params: Mapping[str, Any] | None = None):
        self.svc, self.path, self.params = svc, path, params

    def __call__(self, last_event_id: str | None) -> AsyncIterator[Events | object]:
        return self._open(last_event_id)

    async def _open(self, last_event_id: str | None) -> AsyncIterator[Events | object]:
        heard = upstream_heard.get()
        async with sse(
            self.svc, self.path, params=self.params, last_event_id=last_event_id, on_bytes=heard, batches=True
        ) as reads:
            yield OPENED
            async for frames in reads:
                # Every event one read brought, as one batch: the hub renders them and wakes viewers once,
                # at once unless more is already waiting (``Read.more``: a burst, passed on in larger steps).
                yield Events(frames)

    async def probe(self, since: float, timeout: float) -> bool:
        return await prober(self.svc).answered_since(since, timeout)


class Events(hub.Batch):
    """The events of one read (``http.Read``), each parsed as the hub comes to it. A batch parsed at once
    kept hundreds of events' objects alive while it was rendered, long enough for the garbage collector to
    move them to its oldest generation, whose collections (a walk of every object of the process) then
    came every burst."""

    def __init__(self, frames: Read[SSEFrame]) -> None:
        super().__init__(frames, more=frames.more)

    def __iter__(self) -> Iterator[ServerEvent]:
        for frame in self.events:
            event = _to_event(frame)
            if event is not None:
                yield event


def service_stream(svc: Service, path: str, *, params: Mapping[str, Any] | None = None) -> ServiceStream:
    return ServiceStream(svc, path, params)
