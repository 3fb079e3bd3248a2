"""Projects, project limits, org limits, entitlements and the auth context (notes §1 and §15).

The deprecated ``/projects/{id}`` routes answer with Deprecation and Sunset headers until the tenant's
clock reaches the sunset (2026-11-24, spec: Versioning); after that they answer 410 Gone.
"""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.errors import ApiError, conflict, invalid, not_found
from console.sandbox.core.fields import Bad, Body, Context, Field
from console.sandbox.core.http import (
    endpoint,
    http_date,
    no_content,
    ok,
    paginate,
    public,
    read_json,
    text_filter,
)
from console.sandbox.core.state import Tenant, new_id, rfc3339
from console.sandbox.resources import caps
from console.sandbox.resources.caps import ORG_MAX_CONCURRENT_SESSIONS

SUNSET = datetime(2026, 11, 24, tzinfo=UTC)
LIMIT_FIELDS = ("max_concurrent_sessions", "max_concurrent_invocations")
MAX_CAP = 100_000
ORG_MAX_CONCURRENT_INVOCATIONS = 50


def _new_project(tenant: Tenant, name: str, *, status: str = "active") -> dict:
    now = rfc3339(tenant.now())
    record = {
        "id": new_id("proj"),
        "name": name,
        "status": status,
        "created_at": now,
        "updated_at": now,
        "_limits": {"max_concurrent_sessions": None, "max_concurrent_invocations": None},
    }
    tenant.table("projects")[record["id"]] = record
    return record


def create_default(tenant: Tenant) -> None:
    tenant.default_project_id = _new_project(tenant, "default")["id"]
    tenant.settings.setdefault("org_limits", {"default_project_max_concurrent_sessions": None})


def _projects(tenant: Tenant) -> list[dict]:
    return [p for p in tenant.table("projects").values() if not p.get("_deleted")]


def _project(tenant: Tenant, id_or_name: str) -> dict:
    for project in _projects(tenant):
        if project["id"] == id_or_name:
            return project
    for project in _projects(tenant):
        if project["name"].casefold() == id_or_name.casefold():
            return project
    raise not_found("project", id_or_name)


def _path_project(request: Request) -> dict:
    """The project the path names (``{id_or_name}``)."""
    return _project(request.state.tenant, request.path_params["id_or_name"])


def _valid_name(value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise invalid("name is required", name="a project needs a name")
    if len(value) > 255:
        raise invalid("name is too long", name="at most 255 characters")
    if "/" in value or "%" in value:
        raise invalid("name has a forbidden character", name="a project name cannot contain / or %")
    return value.strip()


def _unique_name(tenant: Tenant, name: str, *, except_id: str | None = None) -> None:
    for project in _projects(tenant):
        if project["name"].casefold() == name.casefold() and project["id"] != except_id:
            raise conflict(f"a project named {name!r} already exists", code="project_name_taken")


@endpoint
async def list_projects(request: Request):
    tenant = request.state.tenant
    return paginate(request, text_filter(_projects(tenant), request, "name"))


@endpoint
async def create_project(request: Request):
    tenant = request.state.tenant
    body = await read_json(request)
    name = _valid_name(body.get("name"))
    _unique_name(tenant, name)
    return ok(public(_new_project(tenant, name)), status=201)


@endpoint
async def get_project(request: Request):
    return ok(public(_path_project(request)))


@endpoint
async def update_project(request: Request):
    tenant = request.state.tenant
    project = _path_project(request)
    body = await read_json(request)
    changes = {}
    if "name" in body:
        changes["name"] = _valid_name(body["name"])
        _unique_name(tenant, changes["name"], except_id=project["id"])
    if "status" in body:
        if body["status"] not in ("active", "archived"):
            raise invalid("status is not valid", status="must be active or archived")
        changes["status"] = body["status"]
    project.update(changes, updated_at=rfc3339(tenant.now()))
    return ok(public(project))


def _delete(tenant: Tenant, id_or_name: str) -> None:
    project = _project(tenant, id_or_name)
    if project["id"] == tenant.default_project_id:
        raise conflict("the default project cannot be deleted", code="project_is_default")
    active = tenant.active_records(project["id"])
    if active:
        kinds = sorted({kind for kind, _ in active})
        raise conflict(
            f"project {project['name']!r} is not empty: it still has {len(active)} active "
            f"resource(s) ({', '.join(kinds)}); delete or move them first",
            code="project_not_empty",
        )
    project["_deleted"] = True
    project["updated_at"] = rfc3339(tenant.now())


@endpoint
async def delete_project(request: Request):
    _delete(request.state.tenant, request.path_params["id_or_name"])
    return no_content()


def _limits_body(project: dict) -> dict:
    return {**project["_limits"], "max_pooled_sessions": None}


def _cap(value, context: Context) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise Bad("must be an integer or null")
    if value is not None and value < 0:
        raise Bad("must be 0 (remove the cap) or a positive integer")
    if value is not None and value > MAX_CAP:
        raise Bad(f"must be at most {MAX_CAP}")
    return value


# A project's limits PATCH (spec: PATCH rules): each cap an integer, 0 or null to remove it.
LIMITS = Body(
    message="invalid limits",
    refused={
        "max_pooled_sessions": Bad(
            "deprecated: pooled browsers count against max_concurrent_sessions",
            alone="max_pooled_sessions is deprecated and cannot be set",
        )
    },
    unknown="not a project limit",
    unknown_alone="unknown limit fields",
    fields=tuple(Field(name, _cap) for name in LIMIT_FIELDS),
)


def _patch_limits(project: dict, body: dict) -> dict:
    for name, value in LIMITS.validate(body).items():
        # 0 removes the cap (spec: PATCH rules); an explicit null does the same here.
        project["_limits"][name] = value or None
    return _limits_body(project)


@endpoint
async def get_limits(request: Request):
    return ok(_limits_body(_path_project(request)))


@endpoint
async def update_limits(request: Request):
    tenant = request.state.tenant
    project = _path_project(request)
    body = await read_json(request)
    result = _patch_limits(project, body)
    project["updated_at"] = rfc3339(tenant.now())
    return ok(result)


# Deprecated /projects routes ---------------------------------------------------------------------


def _deprecated(handler):
    """Answers like the replacement route, with Deprecation/Sunset headers, until the sunset; then 410."""

    async def wrapped(request: Request):
        tenant: Tenant = request.state.tenant
        if tenant.now() >= SUNSET:
            raise ApiError(
                410,
                "route_removed",
                f"{request.url.path} was removed on 2026-11-24; use /org{request.url.path} instead",
            )
        response = await handler(request)
        response.headers["Deprecation"] = "@" + str(int(datetime(2026, 5, 24, tzinfo=UTC).timestamp()))
        response.headers["Sunset"] = http_date(SUNSET)
        response.headers["Link"] = f'</org{request.url.path}>; rel="successor-version"'
        return response

    return wrapped


@endpoint
@_deprecated
async def old_get_limits(request: Request):
    return ok(_limits_body(_path_project(request)))


@endpoint
@_deprecated
async def old_update_limits(request: Request):
    project = _path_project(request)
    return ok(_patch_limits(project, await read_json(request)))


@endpoint
@_deprecated
async def old_get_project(request: Request):
    return ok(public(_path_project(request)))


@endpoint
@_deprecated
async def old_delete_project(request: Request):
    _delete(request.state.tenant, request.path_params["id_or_name"])
    return no_content()


# Org-level reads ---------------------------------------------------------------------------------


MAX_VAULTS = 20


def org_limits(tenant: Tenant) -> dict:
    managed = tenant.table("auth_connections").values()
    used = caps.sessions_used(tenant, None)
    return {
        "auth_connections_used": sum(1 for c in managed if not c.get("_deleted")),
        "max_auth_connections": 50,
        "min_health_check_interval_seconds": 300,
        # SDK 0.131 additions (docs/service-changes.md §1).
        "concurrent_sessions_used": used,
        "concurrent_sessions_available": max(0, ORG_MAX_CONCURRENT_SESSIONS - used),
        "max_vaults": MAX_VAULTS,
        "vaults_used": sum(1 for v in tenant.table("vaults").values() if not v.get("_deleted")),
        "default_project_max_concurrent_sessions": tenant.settings["org_limits"][
            "default_project_max_concurrent_sessions"
        ],
        "max_concurrent_sessions": ORG_MAX_CONCURRENT_SESSIONS,
    }


@endpoint
async def get_org_limits(request: Request):
    return ok(org_limits(request.state.tenant))


@endpoint
async def update_org_limits(request: Request):
    tenant = request.state.tenant
    body = await read_json(request)
    name = "default_project_max_concurrent_sessions"
    if set(body) - {name}:
        raise invalid("unknown org limit fields", **{k: "not settable" for k in set(body) - {name}})
    if name in body:
        value = body[name]
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise invalid("invalid org limit", **{name: "must be a non-negative integer or null"})
        if value and value > ORG_MAX_CONCURRENT_SESSIONS:
            raise invalid("invalid org limit", **{name: f"cannot exceed {ORG_MAX_CONCURRENT_SESSIONS}"})
        tenant.settings["org_limits"][name] = value or None
    return ok(org_limits(tenant))


@endpoint
async def get_entitlements(request: Request):
    feature = {"enabled": True}
    return ok(
        {
            "features": {
                "browser_extensions": {**feature, "max_stored_per_org": 100},
                "browser_pools": feature,
                "browser_replays": {**feature, "retention_days": 30},
                "credential_providers": feature,
                "credentials": feature,
                "custom_proxies": feature,
                "file_io": feature,
                "gpu": {"enabled": False},
                "managed_auth": {
                    **feature,
                    "health_check_interval_default_seconds": 3600,
                    "health_check_interval_min_seconds": 300,
                    "health_check_interval_max_seconds": 86400,
                    "max_connections": 50,
                },
                "managed_proxies": feature,
                "profiles": feature,
                "proxy_bypass_hosts": feature,
                "search": feature,
                "vaults": feature,
            },
            "limits": {
                "default_max_concurrent_invocations_per_app": 10,
                "max_concurrent_browsers": ORG_MAX_CONCURRENT_SESSIONS,
                "max_concurrent_invocations": ORG_MAX_CONCURRENT_INVOCATIONS,
                "max_vaults": MAX_VAULTS,
            },
            "plan": {
                "id": "ENTERPRISE",
                "effective_id": "ENTERPRISE",
                "is_trialing": False,
                "status": "ACTIVE",
                "trial_ends_at": None,
            },
        }
    )


@endpoint
async def get_auth_context(request: Request):
    tenant: Tenant = request.state.tenant
    return ok(
        {
            "principal": {"id": "key_" + tenant.id[4:], "type": "api_key"},
            "organization": {"id": tenant.id},
            "authentication": {"method": "api_key", "source": "api_key"},
            "authorization": {
                "credential_scope": {"project_id": None},
                "effective_scope": {"project_id": None},
            },
        }
    )


def seed(tenant: Tenant) -> None:
    checkout = _new_project(tenant, "checkout-flows")
    checkout["_limits"]["max_concurrent_sessions"] = 40
    scraping = _new_project(tenant, "scraping-prod")
    scraping["_limits"].update(max_concurrent_sessions=200, max_concurrent_invocations=25)
    _new_project(tenant, "qa-staging")
    _new_project(tenant, "holiday-campaign-2025", status="archived")
    tenant.settings["org_limits"]["default_project_max_concurrent_sessions"] = 100


routes = [
    Route("/org/projects", list_projects, methods=["GET"]),
    Route("/org/projects", create_project, methods=["POST"]),
    Route("/org/projects/{id_or_name}", get_project, methods=["GET"]),
    Route("/org/projects/{id_or_name}", update_project, methods=["PATCH"]),
    Route("/org/projects/{id_or_name}", delete_project, methods=["DELETE"]),
    Route("/org/projects/{id_or_name}/limits", get_limits, methods=["GET"]),
    Route("/org/projects/{id_or_name}/limits", update_limits, methods=["PATCH"]),
    Route("/projects/{id_or_name}", old_get_project, methods=["GET"]),
    Route("/projects/{id_or_name}", old_delete_project, methods=["DELETE"]),
    Route("/projects/{id_or_name}/limits", old_get_limits, methods=["GET"]),
    Route("/projects/{id_or_name}/limits", old_update_limits, methods=["PATCH"]),
    Route("/org/limits", get_org_limits, methods=["GET"]),
    Route("/org/limits", update_org_limits, methods=["PATCH"]),
    Route("/org/entitlements", get_entitlements, methods=["GET"]),
    Route("/auth/context", get_auth_context, methods=["GET"]),
]
