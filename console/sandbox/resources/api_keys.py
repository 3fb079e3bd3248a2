"""API keys (``/org/api_keys``; notes §15, SDK 0.131 in docs/service-changes.md §11).

Choices where the SDK leaves room:

- Keys belong to the organization (the tenant), not to a project: ``project_id`` (null = org-wide) scopes
  what the key may reach; it must name a live project (400 ``project_id``).
- A created or rotated key really works: its digest (``key_digest``, SHA-256) is added to the sandbox's key
  registry for this tenant, and it is returned once (``CreatedAPIKey.key``); every later response carries
  ``masked_key``. The sandbox keeps the digest only (``_key_sha256``), as a service would.
- ``days_to_expire`` is 1..3650 (null = never); ``expires_at`` (RFC 3339, in the future) may be given
  instead. A key past its ``expires_at`` and a deleted key are refused with 401.
- Rotate issues a new key with the old one's name and project and sets the old key's ``expires_at`` to
  now + ``expire_in_days`` (default 7; 0 = at once), unless it already expires sooner.
- DELETE is soft (``deleted_at``; GET needs ``include_deleted``); a key cannot delete itself (409
  ``cannot_delete_current_key``).
- Lists: ``status`` active (default) | deleted | all, ``sort_by`` created_at (default) | name | expires_at,
  ``sort_direction`` desc (default) | asc, ``name`` (exact), ``query`` (substring of name or masked key).
"""

from __future__ import annotations

from datetime import timedelta

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.errors import conflict, invalid
from console.sandbox.core.fields import Bad, Body, Context, Field, required_name
from console.sandbox.core.http import endpoint, no_content, ok, paginate, read_json, record_of
from console.sandbox.core.state import Tenant, key_digest, new_id, parse_time, registry, rfc3339

TABLE = "api_keys"
NAME_MAX = 255
MAX_DAYS = 3650
DEFAULT_GRACE_DAYS = 7
STATUSES = ("active", "deleted", "all")
SORTS = ("created_at", "name", "expires_at")
CREATOR = {"id": "user_sandbox", "email": "owner@example.com", "name": "Sandbox Owner"}


def _mask(key: str) -> str:
    return f"{key[:3]}…{key[-4:]}"


def render(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith("_")}


def of_token(tenant: Tenant, token: str) -> dict | None:
    """The record of the key ``token`` if this module made it (None for the tenant's own key)."""
    digest = key_digest(token)
    return next((r for r in tenant.table(TABLE).values() if r["_key_sha256"] == digest), None)


def is_refused(tenant: Tenant, token: str) -> bool:
    """A key this module made that was deleted or is past its expiry (the tenant's own key never is)."""
    record = of_token(tenant, token)
    if record is None:
        return False
    if record.get("deleted_at"):
        return True
    expires = record.get("expires_at")
    return bool(expires) and parse_time(expires) <= tenant.now()


def _project(value, context: Context) -> tuple[str | None, str | None]:
    """The key's project, (id, name), or (None, None) for the whole organization."""
    if value in (None, ""):
        return None, None
    project = context.tenant.table("projects").get(value) if isinstance(value, str) else None
    if project is None or project.get("_deleted"):
        raise Bad(f"no project {value!r}", alone="project_id does not name a project")
    return project["id"], project["name"]


def _days(name: str, *, low: int):
    """A number of days from ``low`` to ``MAX_DAYS``, or null."""

    def check(value, context: Context) -> int | None:
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or not low <= value <= MAX_DAYS
        ):
            raise Bad(f"an integer from {low} to {MAX_DAYS}, or null", alone=f"{name} is not valid")
        return value

    return check


def _expires_at(value, context: Context) -> str | None:
    """When the key expires: ``days_to_expire`` from now if given, else ``expires_at`` (the future)."""
    days = context.kept["days_to_expire"]
    if days is not None:
        return rfc3339(context.tenant.now() + timedelta(days=days))
    if value in (None, ""):
        return None
    try:
        moment = parse_time(str(value))
    except ValueError:
        raise Bad("an RFC 3339 time", alone="expires_at is not a time") from None
    if moment <= context.tenant.now():
        raise Bad("must be in the future", alone="expires_at is in the past")
    return rfc3339(moment)


_name = required_name("give the key a name", NAME_MAX)


# A key's create body (its first problem answers alone), and its PATCH: the name and nothing else.
CREATE = Body(
    message="the API key is not valid",
    unknown="not an API key field",
    unknown_alone="unknown fields",
    complete=True,
    fields=(
        Field("name", _name),
        Field("days_to_expire", _days("days_to_expire", low=1)),
        Field("expires_at", _expires_at),
        Field("project_id", _project, key="project"),
        Field("policy", lambda value, context: value if isinstance(value, dict) else None),
    ),
)
UPDATE = Body(
    message="only the name of a key can change",
    unknown="cannot be changed",
    unknown_alone="only the name of a key can change",
    complete=True,
    fields=(Field("name", _name),),
)
# A rotation: the new key's lifetime, and how long the old one keeps working.
ROTATE = Body(
    message="the rotation is not valid",
    unknown="not a rotate field",
    unknown_alone="unknown fields",
    complete=True,
    fields=(
        Field("days_to_expire", _days("days_to_expire", low=1)),
        Field("expire_in_days", _days("expire_in_days", low=0)),
    ),
)


def issue(
    tenant: Tenant, name: str, project: tuple[str | None, str | None], expires_at: str | None, *, creator=None
) -> tuple[dict, str]:
    """A new key record and its plaintext (its digest registered for the tenant; the plaintext is said
    once, by the caller, and kept nowhere)."""
    secret = "sk_" + new_id(length=40)
    record = {
        "id": new_id("key"),
        "name": name,
        "masked_key": _mask(secret),
        "created_at": rfc3339(tenant.now()),
        "created_by": dict(creator or CREATOR),
        "expires_at": expires_at,
        "deleted_at": None,
        "project_id": project[0],
        "project_name": project[1],
        "_key_sha256": key_digest(secret),
    }
    tenant.table(TABLE)[record["id"]] = record
    registry.tenants[record["_key_sha256"]] = tenant
    return record, secret


def _get(request: Request, *, include_deleted: bool = False) -> dict:
    deleted = None if include_deleted else (lambda record: bool(record.get("deleted_at")))
    return record_of(request.state.tenant, TABLE, request.path_params["id"], "api key", gone=deleted)


@endpoint
async def create_api_key(request: Request):
    tenant = request.state.tenant
    fields = CREATE.validate(await read_json(request), tenant=tenant)
    record, secret = issue(tenant, fields["name"], fields["project"], fields["expires_at"])
    if fields["policy"] is not None:
        record["policy"] = fields["policy"]
    return ok({**render(record), "key": secret}, status=201)


@endpoint
async def list_api_keys(request: Request):
    params = request.query_params
    status = params.get("status") or ("all" if params.get("include_deleted") == "true" else "active")
    if status not in STATUSES:
        raise invalid("status is not valid", status="one of active, deleted, all")
    sort_by = params.get("sort_by") or "created_at"
    if sort_by not in SORTS:
        raise invalid("sort_by is not valid", sort_by="one of created_at, name, expires_at")
    direction = params.get("sort_direction") or "desc"
    if direction not in ("asc", "desc"):
        raise invalid("sort_direction is not valid", sort_direction="asc or desc")
    items = list(request.state.tenant.table(TABLE).values())
    if status != "all":
        items = [r for r in items if bool(r.get("deleted_at")) == (status == "deleted")]
    if params.get("name"):
        items = [r for r in items if r["name"].casefold() == params["name"].casefold()]
    query = (params.get("query") or "").strip().casefold()
    if query:
        items = [
            r for r in items if r["id"] == query or query in r["name"].casefold() or query in r["masked_key"]
        ]
    # Records without the sort key (no expiry) go last either way.
    with_key = sorted(
        (r for r in items if r.get(sort_by)), key=lambda r: r[sort_by], reverse=direction == "desc"
    )
    items = with_key + [r for r in items if not r.get(sort_by)]
    return paginate(request, items, render=render)


@endpoint
async def get_api_key(request: Request):
    include = request.query_params.get("include_deleted") == "true"
    return ok(render(_get(request, include_deleted=include)))


@endpoint
async def update_api_key(request: Request):
    record = _get(request)
    record["name"] = UPDATE.validate(await read_json(request))["name"]
    return ok(render(record))


@endpoint
async def delete_api_key(request: Request):
    record = _get(request)
    token = request.headers.get("authorization", "").partition(" ")[2].strip()
    if of_token(request.state.tenant, token) is record:
        raise conflict(
            "a key cannot delete itself: use another key to delete this one", code="cannot_delete_current_key"
        )
    record["deleted_at"] = rfc3339(request.state.tenant.now())
    return no_content()


@endpoint
async def rotate_api_key(request: Request):
    tenant = request.state.tenant
    old = _get(request)
    fields = ROTATE.validate(await read_json(request))
    days, grace = fields["days_to_expire"], fields["expire_in_days"]
    grace = DEFAULT_GRACE_DAYS if grace is None else grace
    if days is not None:
        expires_at = rfc3339(tenant.now() + timedelta(days=days))
    elif old.get("expires_at"):
        # The rotated key's original lifetime, counted from now.
        lifetime = parse_time(old["expires_at"]) - parse_time(old["created_at"])
        expires_at = rfc3339(tenant.now() + lifetime)
    else:
        expires_at = None
    record, secret = issue(
        tenant, old["name"], (old["project_id"], old["project_name"]), expires_at, creator=old["created_by"]
    )
    ends = tenant.now() + timedelta(days=grace)
    if not old.get("expires_at") or parse_time(old["expires_at"]) > ends:
        old["expires_at"] = rfc3339(ends)
    return ok({**render(record), "key": secret}, status=201)


def seed(tenant: Tenant) -> None:
    now = tenant.now()
    issue(tenant, "ci-pipeline", (None, None), rfc3339(now + timedelta(days=90)))
    issue(tenant, "local-dev", (tenant.default_project_id, "default"), None)
    old, _ = issue(tenant, "retired-laptop", (None, None), None)
    old["deleted_at"] = rfc3339(now - timedelta(days=3))


routes = [
    Route("/org/api_keys", list_api_keys, methods=["GET"]),
    Route("/org/api_keys", create_api_key, methods=["POST"]),
    Route("/org/api_keys/{id}", get_api_key, methods=["GET"]),
    Route("/org/api_keys/{id}", update_api_key, methods=["PATCH"]),
    Route("/org/api_keys/{id}", delete_api_key, methods=["DELETE"]),
    Route("/org/api_keys/{id}/rotate", rotate_api_key, methods=["POST"]),
]
