"""The overview an operator leaves open: is the fleet healthy? (issue 14)

Each card is a deferred part (console/web/deferred.py) with its own service calls: a slow or failing
resource shows its own error and Retry while the other cards fill in, and every card refreshes itself on the
page's light poll (``data-poll``, static/js/pools.js, paused while the tab is hidden). Every figure links to
the filtered list behind it. Counts come from one bounded list page (COUNT_LIMIT): past that, "100+".
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from console.accounts.models import AuditLog
from console.auth.views import reauth_words
from console.browsers import presenters
from console.dashboard import charts
from console.service import (
    ServiceError,
    auth_connections,
    browsers,
    deployments,
    invocations,
    pools,
    projects,
)
from console.service import telemetry as telemetry_service
from console.service.contract import (
    BUILDING_DEPLOYMENT_STATUSES,
    FAILED_FLOW_STATUSES,
    FLOW_IN_PROGRESS,
    NEEDS_AUTH,
)
from console.web import deferred
from console.web.decorators import load_memberships, org_view
from console.web.pages import org_reverse
from console.web.render import render

POLL_SECONDS = 10
COUNT_LIMIT = 100
# Usage charts read at most this many records of the last day (the newest first).
USAGE_LIMIT = 100
# Telemetry errors: the few most recent active sessions, each asked with a short timeout.
TELEMETRY_SESSIONS = 5
TELEMETRY_TIMEOUT = 2.0
TELEMETRY_WINDOW = "1h"
TELEMETRY_ROWS = 8
AUDIT_ROWS = 8


@require_http_methods(["GET"])
async def home(request):
    """Straight to the first organization; a short explanation for users without one."""
    memberships = await load_memberships(request)
    if not request.user.is_authenticated:
        return redirect("login")
    if memberships:
        return redirect("dashboard", org_slug=memberships[0].org.slug)
    return render(request, "dashboard/no_org.html")


def _count(page) -> str:
    return f"{len(page.items)}+" if page.has_more else str(len(page.items))


@require_http_methods(["GET"])
@org_view("viewer")
async def dashboard(request):
    parts = [
        deferred.Part("card-sessions", lambda: _sessions(request), poll=True),
        deferred.Part("card-pools", lambda: _pools(request), poll=True),
        deferred.Part("card-auth", lambda: _auth(request), poll=True),
        deferred.Part("card-invocations", lambda: _invocations(request), poll=True),
        deferred.Part("card-deployments", lambda: _deployments(request), poll=True),
        deferred.Part("card-telemetry", lambda: _telemetry(request), poll=True),
        deferred.Part("card-usage", lambda: _usage(request), poll=True),
    ]
    if request.membership.has_role("admin"):
        parts.append(deferred.Part("card-audit", lambda: _audit(request), poll=True))
    context = {"poll_seconds": POLL_SECONDS, "show_audit": request.membership.has_role("admin")}
    return await deferred.page(request, "dashboard/index.html", context, parts)


async def _cap(svc) -> dict:
    """The concurrency cap of the current project (its own, else the org's default per project) and the
    org's limit."""
    org_limits, limits = await asyncio.gather(
        projects.get_org_limits(svc),
        projects.get_limits(svc, svc.project) if svc.project else _none(),
    )
    project_cap = limits.max_concurrent_sessions if limits is not None else None
    if project_cap:
        source = "project cap"
    else:
        project_cap, source = org_limits.default_project_max_concurrent_sessions, "default project cap"
    return {
        "project_cap": project_cap or None,
        "cap_source": source,
        "org_cap": org_limits.max_concurrent_sessions,
    }


async def _none():
    return None


def _permille(value: int, of: int | None) -> int:
    return min(1000, round(1000 * value / of)) if of else 0


async def _sessions(request) -> dict:
    page, cap = await asyncio.gather(
        browsers.list_sessions(request.service, limit=COUNT_LIMIT, status="active"), _cap(request.service)
    )
    running = len(page.items)
    limit = cap["project_cap"] or cap["org_cap"]
    return {
        "running": _count(page),
        "running_url": org_reverse(request, "browsers:list", "status=active"),
        **cap,
        "fill": _permille(running, limit),
        "state": "error"
        if limit and running >= limit
        else "warn"
        if limit and running >= 0.8 * limit
        else "ok",
        "limits_url": org_reverse(request, "projects:list"),
    }


async def _pools(request) -> dict:
    page = await pools.list_pools(request.service, limit=COUNT_LIMIT)
    rows = [
        {"pool": pool, "url": org_reverse(request, "pools:detail", pool_id=pool.id)} for pool in page.items
    ]
    return {"pool_rows": rows, "pools_more": page.has_more, "pools_url": org_reverse(request, "pools:list")}


async def _auth(request) -> dict:
    page = await auth_connections.list_connections(request.service, limit=COUNT_LIMIT)
    waiting = [c for c in page.items if c.status == NEEDS_AUTH]
    rows = [
        {
            "connection": c,
            "url": org_reverse(request, "auth:detail", connection_id=c.id),
            "reason": _auth_reason(c),
        }
        for c in waiting
    ]
    return {
        "auth_rows": rows,
        "auth_more": page.has_more,
        "auth_url": org_reverse(request, "auth:list", "status=NEEDS_AUTH"),
    }


def _auth_reason(connection) -> str:
    if connection.flow_status == FLOW_IN_PROGRESS:
        step = (connection.flow_step or "").replace("_", " ").lower()
        return f"Login in progress{': ' + step if step else ''}."
    if connection.flow_status in FAILED_FLOW_STATUSES:
        return f"Last login {connection.flow_status.lower()}" + (
            f": {connection.error_message}" if connection.error_message else "."
        )
    return reauth_words(connection)


async def _invocations(request) -> dict:
    svc = request.service
    running, failed = await asyncio.gather(
        invocations.list_invocations(svc, limit=COUNT_LIMIT, status="running"),
        invocations.list_invocations(svc, limit=COUNT_LIMIT, status="failed", since="1h"),
    )
    return {
        "running_invocations": _count(running),
        "running_invocations_url": org_reverse(request, "invocations:list", "status=running"),
        "failed_invocations": _count(failed),
        "failed_invocations_url": org_reverse(request, "invocations:list", "since=1h&status=failed"),
        "failed_rows": [
            {"inv": i, "url": org_reverse(request, "invocations:detail", invocation_id=i.id)}
            for i in failed.items[:5]
        ],
    }


async def _deployments(request) -> dict:
    page = await deployments.list_deployments(request.service, limit=COUNT_LIMIT)
    busy = [d for d in page.items if d.status in BUILDING_DEPLOYMENT_STATUSES]
    return {
        "deploy_rows": [
            {"deployment": d, "url": org_reverse(request, "deployments:detail", deployment_id=d.id)}
            for d in busy[:5]
        ],
        "deploy_count": f"{len(busy)}+" if page.has_more and busy else str(len(busy)),
        "deploy_url": org_reverse(request, "deployments:list", "status=in_progress"),
    }


async def _telemetry(request) -> dict:
    """Console errors and failed requests of the most recent active sessions, newest first."""
    svc = request.service
    page = await browsers.list_sessions(svc, limit=TELEMETRY_SESSIONS, status="active")
    sessions = sorted(
        page.items, key=lambda s: s.created_at or datetime.min.replace(tzinfo=UTC), reverse=True
    )
    sessions = sessions[:TELEMETRY_SESSIONS]

    async def errors_of(session) -> tuple[object, list, bool]:
        try:
            events = await asyncio.wait_for(
                telemetry_service.list_events(
                    svc,
                    session.session_id,
                    order="desc",
                    limit=100,
                    categories=["console", "network"],
                    until=None,
                ),
                TELEMETRY_TIMEOUT,
            )
        except (TimeoutError, ServiceError):
            return session, [], False
        rows = [presenters.row(e) for e in events.items if e.kind in presenters.ERROR_TYPES]
        return session, [r for r in rows if r.severity in ("error", "warn")], True

    found = await asyncio.gather(*(errors_of(s) for s in sessions))
    rows, unanswered = [], []
    for session, session_rows, answered in found:
        if not answered:
            unanswered.append(session.session_id)
        link = org_reverse(
            request,
            "browsers:detail",
            "type=" + ",".join(presenters.ERROR_TYPES),
            session_id=session.session_id,
        )
        rows += [{"row": r, "session": session, "url": link} for r in session_rows]
    rows.sort(key=lambda item: item["row"].time or datetime.min.replace(tzinfo=UTC), reverse=True)
    return {
        "telemetry_rows": rows[:TELEMETRY_ROWS],
        "telemetry_sessions": len(sessions),
        "telemetry_unanswered": unanswered,
        "telemetry_timeout": TELEMETRY_TIMEOUT,
    }


async def _usage(request) -> dict:
    """Sessions alive and invocations started per hour over the last 24 h, from the newest records."""
    svc = request.service
    session_page, invocation_page = await asyncio.gather(
        browsers.list_sessions(svc, limit=USAGE_LIMIT, status="all"),
        invocations.list_invocations(svc, limit=USAGE_LIMIT, since="24h"),
    )
    now = datetime.now(UTC)
    hours = charts.hours(now)
    alive = [charts.alive_during(session_page.items, start) for start in hours]
    started = [charts.started_during(invocation_page.items, start) for start in hours]
    failed = [charts.started_during(invocation_page.items, start, status="failed") for start in hours]
    return {
        "sessions_chart": charts.bars(hours, alive, "sessions"),
        "invocations_chart": charts.bars(hours, started, "invocations", highlight=failed),
        "usage_partial": session_page.has_more or invocation_page.has_more,
        "usage_limit": USAGE_LIMIT,
    }


async def _audit(request) -> dict:
    entries = [e async for e in AuditLog.objects.filter(org=request.org)[:AUDIT_ROWS]]
    return {"audit_entries": entries, "audit_url": org_reverse(request, "audit")}
