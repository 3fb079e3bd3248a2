"""One organization's fleet, as Prometheus metric families, measured at scrape time through the client.

Per project (at most ``METRICS_MAX_PROJECTS``, the first of the project list): sessions by status (running,
standby), each pool's size, available and acquired browsers, the capacity used and the cap
(console/capacity.py: the same figures as the pages), invocations running, queued and failed in the last
hour, auth connections needing a human; per organization the capacity used and the limit. Labels: the
org's slug, project and pool names and ids (bounded by what the org creates), never a session id. A
project or an org the service does not answer for says so (``fleet_up`` 0) instead of failing the scrape.

A scrape costs one list of projects and, per project, about nine reads; its result is kept
``METRICS_FLEET_CACHE_SECONDS`` per org in this process, so several Prometheus servers scraping one console
cost no more.
"""

from __future__ import annotations

import asyncio
import hashlib
import time

from django.conf import settings
from prometheus_client.core import GaugeMetricFamily

from console import capacity
from console.service import ServiceError, auth_connections, invocations, projects
from console.service.contract import NEEDS_AUTH

_cache: dict[tuple, tuple[float, list]] = {}


def _family(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


async def _project(svc, project) -> tuple[capacity.Capacity, int, int]:
    use, failed, waiting = await asyncio.gather(
        capacity.measure(svc),
        invocations.list_invocations(svc, limit=capacity.COUNT_LIMIT, status="failed", since="1h"),
        auth_connections.list_connections(svc, limit=capacity.COUNT_LIMIT),
    )
    return use, len(failed.items), sum(1 for c in waiting.items if c.status == NEEDS_AUTH)


async def families(org) -> list:
    """The org's fleet metric families (cached a few seconds per org in this process)."""
    keep = float(getattr(settings, "METRICS_FLEET_CACHE_SECONDS", 15.0))
    # Keyed by what the figures come from too: a changed URL or key measures again at once.
    key = (org.pk, org.service_base_url, hashlib.sha256(org.api_key.encode()).hexdigest())
    cached = _cache.get(key)
    if cached is not None and time.monotonic() - cached[0] < keep:
        return cached[1]
    found = await _measure(org)
    for old in [k for k, (at, _) in _cache.items() if time.monotonic() - at >= keep]:
        del _cache[old]
    _cache[key] = (time.monotonic(), found)
    return found


async def _measure(org) -> list:
    slug = org.slug
    up = _family(
        "fleet_up",
        "1 when the service answered for the organization (0: the figures below are missing).",
        ["org"],
    )
    project_up = _family(
        "fleet_project_up", "1 when every read of the project answered.", ["org", "project", "project_id"]
    )
    sessions = _family(
        "fleet_sessions",
        "On-demand sessions holding a slot, by status (running, standby).",
        ["org", "project", "project_id", "status"],
    )
    pool = _family(
        "fleet_pool_browsers",
        "A pool's browsers: its size, and how many are available and acquired.",
        ["org", "project", "project_id", "pool", "pool_id", "state"],
    )
    used = _family(
        "fleet_capacity_used",
        "Concurrent sessions counted against the project's cap (on-demand sessions plus pool sizes).",
        ["org", "project", "project_id"],
    )
    cap = _family(
        "fleet_capacity_cap",
        "The project's concurrency cap (its own, else the org's default per project, else the org limit).",
        ["org", "project", "project_id", "source"],
    )
    org_used = _family(
        "fleet_org_capacity_used",
        "Concurrent sessions in use in every project, as the service says.",
        ["org"],
    )
    org_cap = _family("fleet_org_capacity_limit", "The organization's concurrency limit.", ["org"])
    inv = _family(
        "fleet_invocations",
        "Invocations by status: running, queued, failed (in the last hour).",
        ["org", "project", "project_id", "status"],
    )
    auth = _family(
        "fleet_auth_connections_needing_human",
        "Auth connections waiting for a person to log in.",
        ["org", "project", "project_id"],
    )
    all_families = [up, project_up, sessions, pool, used, cap, org_used, org_cap, inv, auth]
    svc = org.service()
    try:
        listed = await projects.list_projects(svc, limit=int(getattr(settings, "METRICS_MAX_PROJECTS", 20)))
        org_limits = await projects.get_org_limits(svc)
    except ServiceError:
        up.add_metric([slug], 0)
        return all_families
    up.add_metric([slug], 1)
    if org_limits.concurrent_sessions_used is not None:
        org_used.add_metric([slug], org_limits.concurrent_sessions_used)
    if org_limits.max_concurrent_sessions is not None:
        org_cap.add_metric([slug], org_limits.max_concurrent_sessions)
    gate = asyncio.Semaphore(4)
    active = [p for p in listed.items if not p.archived]

    async def one(project):
        async with gate:
            try:
                return await _project(svc.with_project(project.id), project)
            except ServiceError:
                return None

    for project, result in zip(active, await asyncio.gather(*(one(p) for p in active)), strict=True):
        labels = [slug, project.name or project.id, project.id]
        project_up.add_metric(labels, 0 if result is None else 1)
        if result is None:
            continue
        use, failed, waiting = result
        sessions.add_metric([*labels, "running"], use.running)
        sessions.add_metric([*labels, "standby"], use.standby)
        for p in use.pools:
            names = [*labels, p.name or p.id, p.id]
            pool.add_metric([*names, "size"], p.size)
            pool.add_metric([*names, "available"], p.available_count)
            pool.add_metric([*names, "acquired"], p.acquired_count)
        used.add_metric(labels, use.used)
        if use.cap is not None:
            cap.add_metric([*labels, use.cap_source], use.cap)
        inv.add_metric([*labels, "running"], use.invocations_running)
        inv.add_metric([*labels, "queued"], use.invocations_queued)
        inv.add_metric([*labels, "failed"], failed)
        auth.add_metric(labels, waiting)
    return all_families
