"""Projects, project limits, org limits and the auth context (notes §1, §15).

Only the ``/org/projects`` routes are used; the deprecated ``/projects/...`` routes are removed on
2026-11-24 (service-interface.md, Versioning).
"""

from __future__ import annotations

from typing import Any

from console.service.collection import Collection, given
from console.service.contract import PROJECT_LIMIT_FIELDS
from console.service.http import Service, request
from console.service.records import AuthContext, OrgEntitlements, OrgLimits, Project, ProjectLimits

__all__ = [
    "AuthContext",
    "OrgEntitlements",
    "OrgLimits",
    "Project",
    "ProjectLimits",
    "create_project",
    "delete_project",
    "get_auth_context",
    "get_entitlements",
    "get_limits",
    "get_org_limits",
    "get_project",
    "list_projects",
    "update_limits",
    "update_org_limits",
    "update_project",
]


PROJECTS = Collection("/org/projects", Project, filters=("name", "query"))
list_projects = PROJECTS.list
get_project = PROJECTS.get


async def create_project(svc: Service, name: str) -> Project:
    return await PROJECTS.create(svc, {"name": name})


async def update_project(
    svc: Service, id_or_name: str, *, name: str | None = None, status: str | None = None
) -> Project:
    """Rename, archive (``status="archived"``) or restore (``status="active"``)."""
    return await PROJECTS.update(svc, id_or_name, given(name=name, status=status))


async def delete_project(svc: Service, id_or_name: str) -> None:
    """Soft delete; the service refuses (409) a project that still has active resources."""
    await PROJECTS.delete(svc, id_or_name)


async def get_limits(svc: Service, id_or_name: str) -> ProjectLimits:
    return ProjectLimits.from_json((await request(svc, "GET", PROJECTS.at(id_or_name, "/limits"))).data)


async def update_limits(svc: Service, id_or_name: str, **fields: int | None) -> ProjectLimits:
    """Change only the given caps; 0 removes a cap. ``max_pooled_sessions`` is never sent (→ 400)."""
    unknown = set(fields) - set(PROJECT_LIMIT_FIELDS) - {"max_pooled_sessions"}
    if unknown:
        raise TypeError(f"unknown project limit(s): {', '.join(sorted(unknown))}")
    body = {k: v for k, v in fields.items() if k in PROJECT_LIMIT_FIELDS}
    reply = await request(svc, "PATCH", PROJECTS.at(id_or_name, "/limits"), json=body)
    return ProjectLimits.from_json(reply.data)


async def get_org_limits(svc: Service) -> OrgLimits:
    return OrgLimits.from_json((await request(svc, "GET", "/org/limits")).data)


async def update_org_limits(
    svc: Service, *, default_project_max_concurrent_sessions: int | None
) -> OrgLimits:
    """0 removes the org default; it cannot exceed the org's own ceiling."""
    body: dict[str, Any] = {
        "default_project_max_concurrent_sessions": default_project_max_concurrent_sessions
    }
    return OrgLimits.from_json((await request(svc, "PATCH", "/org/limits", json=body)).data)


async def get_entitlements(svc: Service) -> OrgEntitlements:
    return OrgEntitlements.from_json((await request(svc, "GET", "/org/entitlements")).data)


async def get_auth_context(svc: Service) -> AuthContext:
    """``GET /auth/context``: who the key is and its scope; the console's "test connection"."""
    return AuthContext.from_json((await request(svc, "GET", "/auth/context")).data)
