"""Project caps, enforced where resources are created (docs/service-changes.md, "Caps").

SDK 0.131 documents a concurrency rejection as 429 with the shared error body, and that pool reservations
count toward ``max_concurrent_sessions``. The sandbox therefore answers, when a create would go over:

- sessions (``POST /browsers``, pool create and resize): 429 ``concurrent_sessions_limit_exceeded``, one
  detail ``{"code": "max_concurrent_sessions", "message": "<used> of <cap> in use"}``; the cap is the
  project's own, else the org's ``default_project_max_concurrent_sessions``, else the org ceiling;
- invocations (``POST /invocations``): 429 ``concurrent_invocations_limit_exceeded`` with detail code
  ``max_concurrent_invocations`` while queued + running invocations of the project reach its cap.

``max_pooled_sessions`` stays deprecated (SDK 0.93 and 0.131: setting it is a 400): pooled browsers are
capped through ``max_concurrent_sessions``. No ``Retry-After``: only ending something frees a slot.
Each create path calls one function here, so the rule lives in one place.
"""

from __future__ import annotations

from collections.abc import Callable

from console.sandbox.core.errors import ApiError
from console.sandbox.core.state import Tenant
from console.sandbox.resources import sessions

ORG_MAX_CONCURRENT_SESSIONS = 500  # the org ceiling of the demo plan (``/org/limits``)


def session_cap(tenant: Tenant, project: str) -> tuple[int, str]:
    """The project's effective concurrency cap and where it comes from."""
    limits = tenant.table("projects")[project]["_limits"]
    if limits.get("max_concurrent_sessions"):
        return limits["max_concurrent_sessions"], "the project's max_concurrent_sessions"
    default = tenant.settings.get("org_limits", {}).get("default_project_max_concurrent_sessions")
    if default:
        return default, "the org's default_project_max_concurrent_sessions"
    return ORG_MAX_CONCURRENT_SESSIONS, "the org's max_concurrent_sessions"


def sessions_used(tenant: Tenant, project: str | None, *, except_pool: str | None = None) -> int:
    """Live on-demand sessions plus pool reservations (pool sizes), in a project or (None) the org."""
    on_demand = sum(
        1
        for s in list(tenant.table("browsers").values())
        if (project is None or s.get("_project") == project)
        and not (s.get("_pool") or s.get("pool"))
        and sessions.is_active(tenant, s)
    )
    reserved = sum(
        p["_config"]["size"]
        for p in tenant.table("pools").values()
        if not p.get("_deleted") and p["id"] != except_pool and (project is None or p["_project"] == project)
    )
    return on_demand + reserved


def check_sessions(tenant: Tenant, project: str, adding: int = 1, *, except_pool: str | None = None) -> None:
    """429 when ``adding`` more sessions (or reserved pool browsers) would go over a cap."""
    cap, source = session_cap(tenant, project)
    used = sessions_used(tenant, project, except_pool=except_pool)
    if used + adding > cap:
        _refuse("concurrent_sessions_limit_exceeded", "max_concurrent_sessions", used, cap, adding, source)
    org_used = sessions_used(tenant, None, except_pool=except_pool)
    if org_used + adding > ORG_MAX_CONCURRENT_SESSIONS:
        _refuse(
            "concurrent_sessions_limit_exceeded",
            "max_concurrent_sessions",
            org_used,
            ORG_MAX_CONCURRENT_SESSIONS,
            adding,
            "the org's max_concurrent_sessions",
        )


def check_invocations(tenant: Tenant, project: str, in_flight: Callable[[], int]) -> None:
    """429 when the project already runs as many invocations as its ``max_concurrent_invocations``
    (``in_flight()``: its queued and running ones, as ``invocations`` counts them)."""
    cap = tenant.table("projects")[project]["_limits"].get("max_concurrent_invocations")
    if not cap:
        return
    used = in_flight()
    if used + 1 > cap:
        _refuse(
            "concurrent_invocations_limit_exceeded",
            "max_concurrent_invocations",
            used,
            cap,
            1,
            "the project's max_concurrent_invocations",
        )


def _refuse(code: str, field: str, used: int, cap: int, adding: int, source: str) -> None:
    noun = "invocations" if "invocations" in field else "sessions"
    raise ApiError(
        429,
        code,
        f"{used + adding} concurrent {noun} would exceed {source} of {cap} ({used} in use); "
        f"end some, or raise the limit",
        details=[{"code": field, "message": f"{used} of {cap} in use"}],
    )
