"""A browser session as every resource that starts, drives, watches or ends one sees it: its record in the
tenant's ``browsers`` table, its lookup by id or name, and its life on the tenant clock (notes §2).

The ``browsers`` module is the resource itself (create, update, list, delete, demo data); this one is
what it shares with the session's sub-resources (telemetry, processes, files, computer, replays, tools,
the VM routes, the CDP proxy and the live view), pools, invocations, login flows and caps, so that none
of them imports another to know whether a session is still there. See ``browsers`` for the rules: a
session ends when deleted, when ended through the control interface, or when the tenant clock passes its
last activity plus ``timeout_seconds`` (computed when read, so a clock move ends it deterministically).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from starlette.requests import Request

from console.sandbox.chromium import engine
from console.sandbox.core.errors import not_found
from console.sandbox.core.hooks import Listeners
from console.sandbox.core.http import project_of
from console.sandbox.core.state import Tenant, parse_time, rfc3339

TABLE = "browsers"

# Handed in by ``app.assemble``: what ends with a session besides its browser (its telemetry streams
# close, its recordings stop: ``telemetry``, ``browser_replays``).
ended = Listeners("sessions.ended(tenant, record)")


def ended_at(tenant: Tenant, record: dict) -> datetime | None:
    """When the session ended (deleted, ended, or timed out on the tenant clock), else None."""
    if record.get("_ended_at") is not None:
        return record["_ended_at"]
    if record.get("_deleted"):
        return parse_time(record.get("deleted_at") or record["created_at"])
    deadline = record.get("_last_activity", parse_time(record["created_at"])) + timedelta(
        seconds=record["timeout_seconds"]
    )
    if tenant.now() >= deadline:
        end(tenant, record, "timeout", at=deadline)
        return deadline
    return None


def is_active(tenant: Tenant, record: dict) -> bool:
    return ended_at(tenant, record) is None


def end(tenant: Tenant, record: dict, reason: str, *, at: datetime | None = None) -> None:
    """Mark the session ended (a soft delete): its telemetry streams close, its recordings stop
    (``ended``) and its browser closes."""
    if record.get("_ended_at") is not None:
        return
    moment = at or tenant.now()
    record["_ended_at"] = moment
    record["_ended_reason"] = reason
    record["_deleted"] = True
    record["deleted_at"] = rfc3339(moment)
    ended(tenant, record)
    engine.get().discard(record)


def touch(tenant: Tenant, record: dict) -> None:
    """Count a call that drives the session as activity (resets the inactivity timeout)."""
    if is_active(tenant, record):
        record["_last_activity"] = tenant.now()


def categories(record: dict) -> set[str] | None:
    """The enabled telemetry categories, or None when capture is off."""
    return record.get("_categories")


# Lookup -------------------------------------------------------------------------------------------


def in_project(request: Request) -> list[dict]:
    project = project_of(request)
    return [r for r in request.state.tenant.table(TABLE).values() if r.get("_project") == project]


def get_session(request: Request, id_or_name: str, *, include_deleted: bool = False) -> dict:
    """A session of the request's project by id or (active) name; 404 when absent or ended."""
    tenant = request.state.tenant
    records = in_project(request)
    for record in records:
        if record["session_id"] == id_or_name and (include_deleted or is_active(tenant, record)):
            return record
    for record in records:
        if record.get("name") == id_or_name and is_active(tenant, record):
            return record
    if include_deleted:
        for record in sorted(records, key=lambda r: r["created_at"], reverse=True):
            if record.get("name") == id_or_name:
                return record
    raise not_found("browser session", id_or_name)


def of_path(request: Request, *, activity: bool = True) -> dict:
    """The session of the path (``{id}``); a call that drives it counts as activity, a read does not."""
    record = get_session(request, request.path_params["id"])
    if activity:
        touch(request.state.tenant, record)
    return record
