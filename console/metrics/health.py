"""The console's own health, as Prometheus metrics (prometheus-client): requests, latency, live viewers,
upstream streams, errors by kind.

Counted per console process, in the client's default registry. Several processes behind one address (uvicorn
``--workers``, replicas behind a load balancer) each count their own: scrape each process (its own port or
pod), or set ``PROMETHEUS_MULTIPROC_DIR`` (prometheus-client's multiprocess mode: every process writes its
values to files in that folder, and a scrape adds them up; the folder must be emptied when the console
starts). Labels are bounded by the URL configuration: the section of a route (``pools``, ``browsers``…),
never a path, an id or a user.
"""

from __future__ import annotations

import os
import time

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from console.browsers.panes import screen
from console.live.response import hub
from console.web.inline import AsyncMiddleware

REQUESTS = Counter(
    "console_http_requests",
    "Requests the console answered, by method, section and status class.",
    ["method", "section", "status"],
)
LATENCY = Histogram(
    "console_http_request_duration_seconds",
    "Time to the response's start (an event stream: to its first byte), by section.",
    ["section"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
ERRORS = Counter(
    "console_errors",
    "Failed requests by kind: the service's error class (Unavailable, NoAnswer, Unauthorized, CapReached…), "
    "exception (a crash) or http_5xx.",
    ["kind"],
)
# Shown at 0 from the start (a rate of a series that appears only at its first error is hard to alert on).
for _kind in (
    "exception",
    "http_5xx",
    "Unavailable",
    "NoAnswer",
    "Unauthorized",
    "RateLimited",
    "CapReached",
):
    ERRORS.labels(_kind)
VIEWERS = Gauge(
    "console_live_viewers",
    "Browsers watching a live pane (events) or a screen, in this process.",
    ["kind"],
    multiprocess_mode="livesum",
)
UPSTREAMS = Gauge(
    "console_upstream_streams",
    "Connections to the service this process holds for live panes and screens.",
    ["kind"],
    multiprocess_mode="livesum",
)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _section(request) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    return (match.namespace or match.url_name or "other")[:40]


def observe_live() -> None:
    """The live figures of this process, now (every request refreshes them, and every scrape)."""
    VIEWERS.labels("events").set(hub.viewers())
    UPSTREAMS.labels("events").set(hub.upstreams())
    screens = list(screen.hub.screens.values())
    VIEWERS.labels("screen").set(sum(len(s.viewers) for s in screens))
    UPSTREAMS.labels("screen").set(sum(1 for s in screens if s.task is not None and not s.task.done()))


class RequestMetricsMiddleware(AsyncMiddleware):
    """Counts and times every request (after the probes, before everything else)."""

    async def __call__(self, request):
        started = time.perf_counter()
        try:
            response = await self.get_response(request)
        except Exception:
            ERRORS.labels("exception").inc()
            raise
        section = _section(request)
        method = request.method if request.method in METHODS else "other"
        REQUESTS.labels(method, section, f"{response.status_code // 100}xx").inc()
        LATENCY.labels(section).observe(time.perf_counter() - started)
        kind = getattr(request, "service_error_kind", "")
        if kind:
            ERRORS.labels(kind).inc()
        elif response.status_code >= 500:
            ERRORS.labels("http_5xx").inc()
        observe_live()
        return response


def exposition() -> bytes:
    """The health metrics in the text format: this process's, or every process's in multiprocess mode."""
    observe_live()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(REGISTRY)
