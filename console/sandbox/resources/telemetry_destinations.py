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


def _name(value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise invalid("name is required", name="give the destination a name")
    value = value.strip()
    if len(value) > NAME_MAX:
        raise invalid("name is too long", name=f"at most {NAME_MAX} characters")
    if _ID_LIKE.match(value):
        raise invalid("name looks like an id", name="must not look like an id (otlp_…)")
    return value


def _endpoint(value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise invalid(
            "endpoint is required", endpoint="the base OTLP/HTTP URL, e.g. https://otel.example.com"
        )
    try:
        url = _target(value.strip())
    except Exception:
        raise invalid(
            "endpoint must be a public http(s) URL", endpoint="a public http or https URL"
        ) from None
    parts = urlsplit(url)
    if parts.query or parts.fragment:
        raise invalid("endpoint takes no query", endpoint="no query string or fragment")
    if re.search(r"/v1(/|$)", parts.path):
        raise invalid("endpoint is the base URL", endpoint="leave out /v1/traces, /v1/logs, …")
    return url.rstrip("/")


def _headers(value, current: dict | None = None) -> dict:
    if value is None:
        return dict(current or {})
    if not isinstance(value, dict):
        raise invalid("headers must be an object", headers="an object of header names to values")
    merged = dict(current or {})
    for name, header_value in value.items():
        if not _HEADER_NAME.match(str(name)):
            raise invalid("a header name is not valid", headers=f"{name!r}: letters, digits and hyphens")
        if header_value is None and current is not None:
            merged.pop(name, None)
        elif not isinstance(header_value, str):
            raise invalid("header values must be strings", headers=f"{name}: a string")
        else:
            merged[name] = header_value
    if sum(len(k) + len(v) for k, v in merged.items()) > HEADERS_MAX_BYTES:
        raise invalid(
            "headers are too large", headers=f"names and values together at most {HEADERS_MAX_BYTES} bytes"
        )
    return merged


def _unique(request: Request, name: str, except_id: str | None = None) -> None:
    for record in scoped(request, TABLE):
        if record["name"].casefold() == name.casefold() and record["id"] != except_id:
            raise conflict(f"a destination named {name!r} already exists", code="destination_name_taken")


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
    now = rfc3339(tenant.now())
    record = {
        "id": new_id("otlp"),
        "name": _name(body.get("name")),
        "endpoint": _endpoint(body.get("endpoint")),
        "description": body.get("description") or None,
        "created_at": now,
        "updated_at": now,
        "consecutive_failures": 0,
        "last_error": None,
        "last_error_at": None,
        "last_export_at": None,
        "_headers": _headers(body.get("headers")),
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
    unknown = sorted(set(body) - {"name", "endpoint", "description", "headers"})
    if unknown:
        raise invalid("unknown fields", **{k: "not a destination field" for k in unknown})
    _unique(request, _name(body.get("name")))
    return ok(render(create(request.state.tenant, project_of(request), body)), status=201)


@endpoint
async def get_destination(request: Request):
    return ok(render(_find(request)))


@endpoint
async def update_destination(request: Request):
    tenant = request.state.tenant
    record = _find(request)
    body = await read_json(request)
    unknown = sorted(set(body) - {"name", "endpoint", "description", "headers"})
    if unknown:
        raise invalid("unknown fields", **{k: "not a destination field" for k in unknown})
    changes = {}
    if "name" in body:
        changes["name"] = _name(body["name"])
        _unique(request, changes["name"], except_id=record["id"])
        if changes["name"] != record["name"] and _in_use(tenant, record):
            raise conflict(
                "sessions export to this destination: it cannot be renamed now", code="destination_in_use"
            )
    if "endpoint" in body:
        changes["endpoint"] = _endpoint(body["endpoint"])
    if "description" in body:
        changes["description"] = body["description"] or None
    if "headers" in body:
        changes["_headers"] = _headers(body["headers"], record["_headers"])
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
