"""The service's own audit log (``/audit-logs``; notes §0 pagination, §15; SDK 0.131).

Choices where the SDK leaves room:

- Every request a tenant makes to the service routes (not ``/_sandbox/…``) becomes an entry: its time,
  method, path, route template, status, duration, client address, host, user agent and who made it (the
  API key's id, ``auth_strategy`` ``api_key``; the demo seeds dashboard users too). The newest
  ``MAX_ENTRIES`` are kept.
- ``GET /audit-logs``: ``start`` and ``end`` (RFC 3339) are required, ``end`` after ``start`` and at most 30
  days apart (400); newest first; ``limit`` 1..100 (default 50); ``page_token`` is opaque and answered in
  ``X-Next-Page-Token`` with ``X-Has-More``. Filters: ``method`` (exact), ``exclude_method`` (list),
  ``auth_strategy``, ``service`` (the first path segment, e.g. ``browsers``), ``search`` (substring of path,
  email or user agent), ``search_user_id`` (list).
- ``GET /audit-logs/export/chunk``: the same window and filters, ``cursor`` and ``limit`` (1..10000, default
  1000), ``format`` ``jsonl`` (default) or ``jsonl.gz``; answers the rows as JSON lines, oldest first, with
  ``X-Next-Cursor`` and ``X-Has-More`` (when more), ``X-Row-Count`` and ``X-Content-Sha256`` (of the body
  as sent).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import time
from collections import deque
from datetime import timedelta

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from console.sandbox.core import store
from console.sandbox.core.errors import invalid
from console.sandbox.core.http import endpoint, int_param, ok
from console.sandbox.core.state import Tenant, parse_time, rfc3339
from console.sandbox.resources import api_keys

MAX_ENTRIES = 20_000
MAX_WINDOW = timedelta(days=30)
DEMO_USERS = [
    ("user_ada", "ada@example.com", "dashboard"),
    ("user_grace", "grace@example.com", "dashboard"),
    ("key_ci", "", "api_key"),
]


def new_log() -> deque:
    """A tenant's empty audit log: its newest ``MAX_ENTRIES`` are kept (the store loads into one)."""
    return deque(maxlen=MAX_ENTRIES)


def _log(tenant: Tenant) -> deque:
    log = tenant.settings.get(store.AUDIT)
    if log is None:
        log = tenant.settings[store.AUDIT] = new_log()
    return log


def record(tenant: Tenant, request: Request, status: int) -> None:
    """Called for every service request of the tenant (``console.sandbox.core.http``)."""
    if request.url.path.startswith(("/_sandbox/", "/_vm/")):
        return
    route = request.scope.get("route")
    started = getattr(request.state, "started", None)
    token = request.headers.get("authorization", "").partition(" ")[2].strip()
    key = api_keys.of_token(tenant, token) if token else None
    _log(tenant).append(
        {
            "timestamp": rfc3339(tenant.now()),
            "method": request.method,
            "path": request.url.path,
            "route": getattr(route, "path", request.url.path),
            "status": status,
            "duration_ms": int((time.monotonic() - started) * 1000) if started else 0,
            "client_ip": request.client.host if request.client else "",
            "domain": request.url.hostname or "",
            "user_agent": request.headers.get("user-agent", ""),
            "user_id": key["id"] if key else "key_" + tenant.id[4:],
            "email": key["created_by"]["email"] if key else "",
            "auth_strategy": "api_key",
        }
    )


def _list(request: Request, name: str) -> list[str]:
    return [p.strip() for v in request.query_params.getlist(name) for p in v.split(",") if p.strip()]


def _window(request: Request) -> tuple:
    errors = {}
    moments = {}
    for name in ("start", "end"):
        raw = request.query_params.get(name)
        if not raw:
            errors[name] = "required: an RFC 3339 time"
            continue
        try:
            moments[name] = parse_time(raw)
        except ValueError:
            errors[name] = "an RFC 3339 time with a zone"
    if errors:
        raise invalid("start and end are required", **errors)
    if moments["end"] <= moments["start"]:
        raise invalid("end must be after start", end="after start")
    if moments["end"] - moments["start"] > MAX_WINDOW:
        raise invalid("the window is at most 30 days", end="at most 30 days after start")
    return moments["start"], moments["end"]


def _matching(request: Request) -> list[dict]:
    """Entries in the window that pass the filters, newest first."""
    start, end = _window(request)
    params = request.query_params
    method = (params.get("method") or "").upper()
    excluded = {m.upper() for m in _list(request, "exclude_method")}
    strategy = params.get("auth_strategy")
    service = params.get("service")
    search = (params.get("search") or "").casefold()
    users = set(_list(request, "search_user_id"))
    found = []
    for entry in reversed(_log(request.state.tenant)):
        moment = parse_time(entry["timestamp"])
        if not start <= moment < end:
            continue
        if (method and entry["method"] != method) or entry["method"] in excluded:
            continue
        if strategy and entry["auth_strategy"] != strategy:
            continue
        if service and entry["path"].strip("/").split("/")[0] != service:
            continue
        haystack = f"{entry['path']} {entry['email']} {entry['user_agent']}".casefold()
        if (search and search not in haystack) or (users and entry["user_id"] not in users):
            continue
        found.append(entry)
    return found


def _position(raw: str | None, name: str) -> int:
    if not raw:
        return 0
    try:
        return int(base64.urlsafe_b64decode(raw.encode()).decode().removeprefix("p"))
    except (ValueError, UnicodeDecodeError):
        raise invalid(f"{name} is not valid", **{name: "pass the value the previous response gave"}) from None


def _token(position: int) -> str:
    return base64.urlsafe_b64encode(f"p{position}".encode()).decode()


@endpoint
async def list_entries(request: Request):
    entries = _matching(request)
    limit = int_param(request, "limit", 50, low=1, high=100)
    begin = _position(request.query_params.get("page_token"), "page_token")
    page = entries[begin : begin + limit]
    more = begin + limit < len(entries)
    headers = {"X-Has-More": "true" if more else "false"}
    if more:
        headers["X-Next-Page-Token"] = _token(begin + limit)
    return ok(page, headers=headers)


@endpoint
async def export_chunk(request: Request):
    entries = list(reversed(_matching(request)))  # oldest first: an export reads forward
    limit = int_param(request, "limit", 1000, low=1, high=10_000)
    fmt = request.query_params.get("format") or "jsonl"
    if fmt not in ("jsonl", "jsonl.gz"):
        raise invalid("format is not valid", format="jsonl or jsonl.gz")
    begin = _position(request.query_params.get("cursor"), "cursor")
    rows = entries[begin : begin + limit]
    body = "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows).encode()
    if fmt == "jsonl.gz":
        body = gzip.compress(body, mtime=0)
    more = begin + limit < len(entries)
    headers = {
        "X-Has-More": "true" if more else "false",
        "X-Row-Count": str(len(rows)),
        "X-Content-Sha256": hashlib.sha256(body).hexdigest(),
    }
    if more:
        headers["X-Next-Cursor"] = _token(begin + limit)
    media = "application/gzip" if fmt == "jsonl.gz" else "application/x-ndjson"
    return Response(body, media_type=media, headers=headers)


def seed(tenant: Tenant) -> None:
    """A week of dashboard and API traffic, so the demo's audit log has something to page through."""
    now = tenant.now()
    paths = [
        ("GET", "/browsers", "/browsers", 200),
        ("POST", "/browsers", "/browsers", 201),
        ("DELETE", "/browsers/abc123", "/browsers/{id_or_name}", 204),
        ("PATCH", "/org/projects/default/limits", "/org/projects/{id_or_name}/limits", 200),
        ("POST", "/credentials", "/credentials", 400),
        ("GET", "/proxies", "/proxies", 200),
        ("POST", "/org/api_keys", "/org/api_keys", 201),
    ]
    log = _log(tenant)
    for n in range(400):
        method, path, route, status = paths[n % len(paths)]
        user_id, email, strategy = DEMO_USERS[n % len(DEMO_USERS)]
        log.append(
            {
                "timestamp": rfc3339(now - timedelta(minutes=25 * (400 - n))),
                "method": method,
                "path": path,
                "route": route,
                "status": status,
                "duration_ms": 20 + n % 180,
                "client_ip": f"203.0.113.{n % 200 + 1}",
                "domain": "api.onkernel.com",
                "user_agent": "Mozilla/5.0 dashboard" if strategy == "dashboard" else "Kernel/Python 0.131.0",
                "user_id": user_id,
                "email": email,
                "auth_strategy": strategy,
            }
        )


routes = [
    Route("/audit-logs", list_entries, methods=["GET"]),
    Route("/audit-logs/export/chunk", export_chunk, methods=["GET"]),
]
