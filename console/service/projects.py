"""Projects, project limits, org limits and the auth context (notes §1, §15).

Only the ``/org/projects`` routes are used; the deprecated ``/projects/...`` routes are removed on
2026-11-24 (service-interface.md, Versioning).
"""

from __future__ import annotations

from typing import Any

from console.service.contract import PROJECT_LIMIT_FIELDS
from console.service.http import Service, path_segment, request
from console.service.pagination import Page, fetch_page
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


def _project_path(id_or_name: str) -> str:
    return f"/org/projects/{path_segment(id_or_name)}"


async def list_projects(
    svc: Service, *, limit: int = 20, offset: int = 0, name: str | None = None, query: str | None = None
) -> Page[Project]:
    return await fetch_page(
        svc, "/org/projects", Project, limit=limit, offset=offset, params={"name": name, "query": query}
    )


async def get_project(svc: Service, id_or_name: str) -> Project:
    return Project.from_json((await request(svc, "GET", _project_path(id_or_name))).data)


async def create_project(svc: Service, name: str) -> Project:
    return Project.from_json((await request(svc, "POST", "/org/projects", json={"name": name})).data)


async def update_project(
    svc: Service, id_or_name: str, *, name: str | None = None, status: str | None = None
) -> Project:
    """Rename, archive (``status="archived"``) or restore (``status="active"``)."""
    body = {k: v for k, v in {"name": name, "status": status}.items() if v is not None}
    return Project.from_json((await request(svc, "PATCH", _project_path(id_or_name), json=body)).data)


async def delete_project(svc: Service, id_or_name: str) -> None:
    """Soft delete; the service refuses (409) a project that still has active resources."""
    await request(svc, "DELETE", _project_path(id_or_name), expect="none")


async def get_limits(svc: Service, id_or_name: str) -> ProjectLimits:
    return ProjectLimits.from_json((await request(svc, "GET", _project_path(id_or_name) + "/limits")).data)


async def update_limits(svc: Service, id_or_name: str, **fields: int | None) -> ProjectLimits:
    """Change only the given caps; 0 removes a cap. ``max_pooled_sessions`` is never sent (→ 400)."""
    unknown = set(fields) - set(PROJECT_LIMIT_FIELDS) - {"max_pooled_sessions"}
    if unknown:
        raise TypeError(f"unknown project limit(s): {', '.join(sorted(unknown))}")
    body = {k: v for k, v in fields.items() if k in PROJECT_LIMIT_FIELDS}
    reply = await request(svc, "PATCH", _project_path(id_or_name) + "/limits", json=body)
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
