"""The usage sampler: every ``USAGE_SAMPLE_SECONDS`` each organization's projects are measured through the
client and one ``Sample`` per project is written for the interval that just ended (console/usage/tasks.py
schedules it on the worker's clock: django-tasks, console/worker/periodic.py).

What a sample holds comes from the service as it is at sampling time: the capacity model
(console/capacity.py) for what stands (sessions running and in standby, pools, capacity used and the cap),
the sessions list (``status=all``, newest first, within ``capacity.MAX_PAGES`` pages) for sessions started
and ended in the interval and the browser seconds they ran in it (headful and headless apart), the
invocations started since the interval's start for those that finished in it, and the console's own
record of refusals at the cap (``Refusal``). The service's clock dates sessions and invocations; the
interval is the console's. Nothing is estimated: an interval no worker sampled has no row, and the page
says so.

Two workers never write one interval twice: the clock enqueues one task per slot (a unique ``Beat``), and
the unique (org, project, resolution, interval start) refuses a second row whatever happens.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from console import capacity
from console.service import ServiceError, browsers, invocations, projects
from console.service.pagination import walk
from console.usage.models import Refusal, Sample

log = logging.getLogger("console.usage")


def interval_seconds() -> int:
    return max(1, int(getattr(settings, "USAGE_SAMPLE_SECONDS", 60)))


def interval_of(slot: int) -> datetime:
    """The start of the interval that ended when ``slot`` began (the slot's clock: seconds since 1970)."""
    return datetime.fromtimestamp((slot - 1) * interval_seconds(), tz=UTC)


def _overlap(start: datetime, end: datetime, begin: datetime | None, finish: datetime | None) -> float:
    if begin is None:
        return 0.0
    low, high = max(start, begin), min(end, finish or end)
    return max(0.0, (high - low).total_seconds())


async def _project_figures(svc, start: datetime, end: datetime, refusals: int) -> dict:
    use, sessions, started = await asyncio.gather(
        capacity.measure(svc),
        walk(
            svc,
            "/browsers",
            browsers.Session,
            limit=capacity.COUNT_LIMIT,
            max_pages=capacity.MAX_PAGES,
            params={"status": "all"},
        ),
        invocations.list_invocations(svc, limit=capacity.COUNT_LIMIT, since=start.isoformat()),
    )
    headful = headless = 0.0
    for s in sessions.items:
        ran = _overlap(start, end, s.created_at, s.deleted_at)
        if s.headless:
            headless += ran
        else:
            headful += ran
    finished = [i for i in started.items if i.finished_at is not None and start <= i.finished_at < end]
    return {
        "sessions_started": sum(1 for s in sessions.items if s.created_at and start <= s.created_at < end),
        "sessions_ended": sum(1 for s in sessions.items if s.deleted_at and start <= s.deleted_at < end),
        "headful_seconds": round(headful, 1),
        "headless_seconds": round(headless, 1),
        "invocations_succeeded": sum(1 for i in finished if i.status == "succeeded"),
        "invocations_failed": sum(1 for i in finished if i.status == "failed"),
        "refusals": refusals,
        "running": use.running,
        "standby": use.standby,
        "capacity_used": use.used,
        "cap": use.cap,
        "pool_size": use.pooled,
        "pool_acquired": use.pool_acquired,
        "invocations_running": use.invocations_running,
        "complete": use.complete and sessions.complete and not started.has_more,
    }


async def sample_org(org, start: datetime) -> int:
    """Measure every project of ``org`` (the first ``USAGE_MAX_PROJECTS``) for the interval from ``start``;
    the rows written (0 when another worker wrote them, or the service did not answer)."""
    seconds = interval_seconds()
    end = start + timedelta(seconds=seconds)
    svc = org.service()
    try:
        listed = await projects.list_projects(svc, limit=int(getattr(settings, "USAGE_MAX_PROJECTS", 20)))
    except ServiceError as exc:
        log.warning("usage of %s not sampled for %s: %s", org.slug, start, exc)
        return 0
    written = 0
    for project in [p for p in listed.items if not p.archived]:
        if await Sample.objects.filter(
            org=org, project_id=project.id, resolution=Sample.Resolution.RAW, interval_start=start
        ).aexists():
            continue
        refusals = await Refusal.objects.filter(
            org=org, project_id=project.id, at__gte=start, at__lt=end
        ).acount()
        try:
            figures = await _project_figures(svc.with_project(project.id), start, end, refusals)
        except ServiceError as exc:
            log.warning("usage of %s/%s not sampled for %s: %s", org.slug, project.id, start, exc)
            continue
        try:
            await Sample.objects.acreate(
                org=org, project_id=project.id, interval_start=start, seconds=seconds, **figures
            )
        except IntegrityError:  # another worker wrote this interval first
            continue
        written += 1
    return written


# Downsampling and retention ---------------------------------------------------------------------------

SUMMED = (
    "sessions_started",
    "sessions_ended",
    "headful_seconds",
    "headless_seconds",
    "invocations_succeeded",
    "invocations_failed",
    "refusals",
)
AVERAGED = ("running", "standby", "pool_size", "pool_acquired", "invocations_running")


def fold(rows: list[Sample]) -> dict:
    """One hour's figures from its raw samples: sums of what happened, the peak capacity used and the
    highest cap, the mean (rounded) of what stood."""
    values = {name: sum(getattr(r, name) for r in rows) for name in SUMMED}
    values.update({name: round(sum(getattr(r, name) for r in rows) / len(rows)) for name in AVERAGED})
    values["capacity_used"] = max(r.capacity_used for r in rows)
    caps = [r.cap for r in rows if r.cap is not None]
    values["cap"] = max(caps) if caps else None
    values["complete"] = all(r.complete for r in rows)
    values["seconds"] = sum(r.seconds for r in rows)
    return values


def prune(now: datetime | None = None) -> tuple[int, int]:
    """Fold raw samples older than ``USAGE_RAW_HOURS`` into hour samples and delete what is older than
    ``USAGE_RETENTION_DAYS``: (raw samples folded, rows deleted). Runs on one worker at a time (its
    periodic job) and in one transaction per hour, so a crash leaves each hour folded or not."""
    now = now or timezone.now()
    cutoff = (now - timedelta(hours=float(getattr(settings, "USAGE_RAW_HOURS", 48)))).replace(
        minute=0, second=0, microsecond=0
    )
    groups: dict[tuple, list[Sample]] = defaultdict(list)
    for row in Sample.objects.filter(resolution=Sample.Resolution.RAW, interval_start__lt=cutoff).iterator():
        hour = row.interval_start.replace(minute=0, second=0, microsecond=0)
        groups[(row.org_id, row.project_id, hour)].append(row)
    folded = 0
    for (org_id, project_id, hour), rows in groups.items():
        with transaction.atomic():
            existing = (
                Sample.objects.select_for_update()
                .filter(
                    org_id=org_id,
                    project_id=project_id,
                    resolution=Sample.Resolution.HOUR,
                    interval_start=hour,
                )
                .first()
            )
            if existing is not None:  # an hour folded in two goes (raw rows that came late)
                rows = [existing, *rows]
                existing.delete()
            Sample.objects.create(
                org_id=org_id,
                project_id=project_id,
                resolution=Sample.Resolution.HOUR,
                interval_start=hour,
                **fold(rows),
            )
            Sample.objects.filter(
                pk__in=[r.pk for r in rows if r.resolution == Sample.Resolution.RAW]
            ).delete()
        folded += len(rows)
    oldest = now - timedelta(days=float(getattr(settings, "USAGE_RETENTION_DAYS", 90)))
    deleted, _ = Sample.objects.filter(interval_start__lt=oldest).delete()
    gone, _ = Refusal.objects.filter(at__lt=oldest).delete()
    return folded, deleted + gone
