"""Telemetry destinations: OTLP/HTTP export targets (``/telemetry/destinations``; notes §6.6, SDK 0.131).

Choices where the SDK leaves room:

- Destinations belong to a project; names are unique in it (409 ``destination_name_taken``) and must not
  look like an id (``otlp_…``). ``{id_or_name}`` finds by id, else by name.
- ``endpoint`` is the base OTLP/HTTP URL: http(s), a public host (the same rule as proxy check targets),
  no query string, no ``/v1/…`` signal path (400 ``endpoint``).
- Header values are write-only: stored privately, answered as ``""``. Names are 1-128 of
  ``[A-Za-z0-9-]``; names and values together at most 8192 bytes.
- PATCH ``headers`` merges: a value sets that header, ``null`` removes it; other headers stay.
- DELETE and renaming answer 409 ``destination_in_use`` while a live session exports to it.
- The sandbox exports nothing: ``consecutive_failures`` stays 0 and the ``last_*`` fields null.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.errors import conflict, invalid, not_found
from console.sandbox.core.fields import Bad, Body, Context, Field, required_name
from console.sandbox.core.http import (
    endpoint,
    no_content,
    ok,
    paginate,
    project_of,
    read_json,
    scoped,
    text_filter,
)
from console.sandbox.core.state import Tenant, new_id, rfc3339
from console.sandbox.resources import sessions
from console.sandbox.resources.proxies import _target

TABLE = "telemetry_destinations"
NAME_MAX = 255
HEADERS_MAX_BYTES = 8192
_HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,128}$")
_ID_LIKE = re.compile(r"^otlp_[a-z0-9]+$")


def render(record: dict) -> dict:
    body = {k: v for k, v in record.items() if not k.startswith("_")}
    body["headers"] = {name: "" for name in record["_headers"]}
    return body


_named = required_name("give the destination a name", NAME_MAX)


def _name(value, context: Context) -> str:
    """A name of 1 to 255 characters that is not an id, unique in the project (and a destination
    sessions export to keeps its name)."""
    value = _named(value, context)
    if _ID_LIKE.match(value):
        raise Bad("must not look like an id (otlp_…)", alone="name looks like an id")
    record = None if context.creating else context.record
    for other in context.tenant.table(TABLE).values():
        if (
            other.get("_project") == context.project
            and not other.get("_deleted")
            and other["name"].casefold() == value.casefold()
            and other["id"] != (record or {}).get("id")
        ):
            raise conflict(f"a destination named {value!r} already exists", code="destination_name_taken")
    if record is not None and value != record["name"] and _in_use(context.tenant, record):
        raise conflict(
            "sessions export to this destination: it cannot be renamed now", code="destination_in_use"
        )
    return value


def _endpoint(value, context: Context) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Bad("the base OTLP/HTTP URL, e.g. https://otel.example.com", alone="endpoint is required")
    try:
        url = _target(value.strip())
    except Exception:
        raise Bad("a public http or https URL", alone="endpoint must be a public http(s) URL") from None
    parts = urlsplit(url)
    if parts.query or parts.fragment:
        raise Bad("no query string or fragment", alone="endpoint takes no query")
    if re.search(r"/v1(/|$)", parts.path):
        raise Bad("leave out /v1/traces, /v1/logs, …", alone="endpoint is the base URL")
    return url.rstrip("/")


def _headers(value, context: Context) -> dict:
    """The headers sent with every export; a PATCH merges into the current ones (null removes one)."""
    current = None if context.creating else context.record["_headers"]
    if value is None:
        return dict(current or {})
    if not isinstance(value, dict):
        raise Bad("an object of header names to values", alone="headers must be an object")
    merged = dict(current or {})
    for name, header_value in value.items():
        if not _HEADER_NAME.match(str(name)):
            raise Bad(f"{name!r}: letters, digits and hyphens", alone="a header name is not valid")
        if header_value is None and current is not None:
            merged.pop(name, None)
        elif not isinstance(header_value, str):
            raise Bad(f"{name}: a string", alone="header values must be strings")
        else:
            merged[name] = header_value
    if sum(len(k) + len(v) for k, v in merged.items()) > HEADERS_MAX_BYTES:
        raise Bad(
            f"names and values together at most {HEADERS_MAX_BYTES} bytes", alone="headers are too large"
        )
    return merged


def _destination(*, complete: bool) -> Body:
    """A destination's create (every field) or PATCH (the fields given) body; its first problem answers."""
    return Body(
        message="the destination is not valid",
        unknown="not a destination field",
        unknown_alone="unknown fields",
        complete=complete,
        fields=(
            Field("name", _name),
            Field("endpoint", _endpoint),
            Field("description", lambda value, context: value or None),
            Field("headers", _headers, key="_headers"),
        ),
    )


CREATE = _destination(complete=True)
UPDATE = _destination(complete=False)


def _find(request: Request) -> dict:
    wanted = request.path_params["id_or_name"]
    for record in scoped(request, TABLE):
        if record["id"] == wanted or record["name"] == wanted:
            return record
    raise not_found("telemetry destination", wanted)


def export_of(request: Request, telemetry) -> dict | None:
    """A session create's ``telemetry.export.otlp`` as the record keeps it: ``{enabled, destination: id}``;
    400 when it names no destination of the project."""
    otlp = (((telemetry or {}) if isinstance(telemetry, dict) else {}).get("export") or {}).get("otlp")
    if not isinstance(otlp, dict):
        return None
    target = otlp.get("destination") or {}
    wanted = target.get("id") or target.get("name") if isinstance(target, dict) else None
    if otlp.get("enabled") is False:
        if wanted:
            raise invalid(
                "export disabled with a destination", telemetry="enabled: false takes no destination"
            )
        return None
    if not wanted:
        raise invalid("export needs a destination", telemetry="export.otlp.destination: give its id or name")
    found = next((r for r in scoped(request, TABLE) if wanted in (r["id"], r["name"])), None)
    if found is None:
        raise invalid("no such telemetry destination", telemetry=f"no telemetry destination {wanted!r}")
    return {"enabled": True, "destination": found["id"]}


def _in_use(tenant: Tenant, record: dict) -> int:
    return sum(
        1
        for session in list(tenant.table("browsers").values())
        if (session.get("_otlp_export") or {}).get("destination") == record["id"]
        and sessions.is_active(tenant, session)
    )


def create(tenant: Tenant, project: str, body: dict) -> dict:
    fields = CREATE.validate(body, tenant=tenant, project=project)
    now = rfc3339(tenant.now())
    record = {
        "id": new_id("otlp"),
        "name": fields["name"],
        "endpoint": fields["endpoint"],
        "description": fields["description"],
        "created_at": now,
        "updated_at": now,
        "consecutive_failures": 0,
        "last_error": None,
        "last_error_at": None,
        "last_export_at": None,
        "_headers": fields["_headers"],
        "_project": project,
    }
    tenant.table(TABLE)[record["id"]] = record
    return record


@endpoint
async def list_destinations(request: Request):
    items = text_filter(scoped(request, TABLE), request, "name", "endpoint")
    return paginate(request, items, render=render)


@endpoint
async def create_destination(request: Request):
    body = await read_json(request)
    return ok(render(create(request.state.tenant, project_of(request), body)), status=201)


@endpoint
async def get_destination(request: Request):
    return ok(render(_find(request)))


@endpoint
async def update_destination(request: Request):
    tenant = request.state.tenant
    record = _find(request)
    body = await read_json(request)
    changes = UPDATE.validate(body, creating=False, tenant=tenant, project=project_of(request), record=record)
    record.update(changes, updated_at=rfc3339(tenant.now()))
    return ok(render(record))


@endpoint
async def delete_destination(request: Request):
    record = _find(request)
    sessions = _in_use(request.state.tenant, record)
    if sessions:
        raise conflict(
            f"{sessions} live session(s) export to this destination: end them first",
            code="destination_in_use",
        )
    record["_deleted"] = True
    return no_content()


def seed(tenant: Tenant) -> None:
    project = tenant.default_project_id
    create(
        tenant,
        project,
        {
            "name": "honeycomb",
            "endpoint": "https://api.honeycomb.io",
            "description": "Production traces",
            "headers": {"x-honeycomb-team": "demo-honeycomb-key-do-not-show"},
        },
    )
    create(tenant, project, {"name": "collector", "endpoint": "https://otel.example.com:4318"})


routes = [
    Route("/telemetry/destinations", list_destinations, methods=["GET"]),
    Route("/telemetry/destinations", create_destination, methods=["POST"]),
    Route("/telemetry/destinations/{id_or_name}", get_destination, methods=["GET"]),
    Route("/telemetry/destinations/{id_or_name}", update_destination, methods=["PATCH"]),
    Route("/telemetry/destinations/{id_or_name}", delete_destination, methods=["DELETE"]),
]
