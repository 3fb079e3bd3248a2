"""Deployments (notes §13, spec: States and transitions): zip or GitHub source → a running app version.

Choices where the notes leave room:

- ``POST /deployments`` is multipart: ``file`` (a zip) or ``source[type]=github`` with ``source[url]``,
  ``source[ref]``, ``source[entrypoint]``; plus ``version`` (default ``latest``), ``entrypoint_rel_path``
  (required with a file), ``env_vars[KEY]``, ``force``, ``region`` (only ``aws.us-east-1a``).
- The app's name and actions are read from the entrypoint file, like the service's build does: a Python
  ``App("name")`` / ``@app.action("name")`` or a JS/TS ``app("name")`` / ``app.action("name", ...)``.
  Action schemas come from an optional ``actions.json`` at the archive root
  (``{"<action>": {"input_schema": {...}, "output_schema": {...}}}``), else a permissive object schema.
- A deployment moves ``queued`` → ``in_progress`` (after ``QUEUE_SECONDS``) → ``running`` (after
  ``BUILD_SECONDS`` more) on the tenant clock; it fails instead when the entrypoint file is missing from
  the archive or defines no app. Every move and log line sits on a timeline computed on read.
- Deploying an app version that already has an active deployment (queued, in_progress or running) is
  409 ``version_exists`` unless ``force`` is true; with ``force`` the older deployment is stopped.
- ``DELETE`` on an active deployment stops it at once and marks it for deletion (``status_reason`` says
  so): it leaves lists and no longer counts as a resource of its project, but stays readable by id. On a
  stopped or failed one it changes nothing and answers 204 at once.
- ``env_vars`` values are stored but always answered as ``""`` (the service redacts them for API keys).
- The deployment record also carries ``app_name`` and ``version`` once known (the service may add
  fields; the console treats them as optional).
- ``GET /deployments/{id}/events`` replays the timeline (or what follows ``since``), then follows it live
  (ticks every ``TICK_SECONDS`` of real time) and ends at ``stopped`` or ``failed``.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import re
import time
import zipfile
from datetime import datetime, timedelta

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.errors import ApiError, conflict, invalid
from console.sandbox.core.http import (
    MAX_DEPTH,
    endpoint,
    no_content,
    ok,
    paginate,
    project_of,
    record_of,
    scoped,
    sse_response,
    too_deep,
)
from console.sandbox.core.state import Tenant, new_id, parse_time, rfc3339

TABLE = "deployments"
REGION = "aws.us-east-1a"
REGIONS = (REGION,)
STATUSES = ("queued", "in_progress", "running", "failed", "stopped")
ACTIVE = ("queued", "in_progress", "running")
TERMINAL = ("stopped", "failed")
QUEUE_SECONDS = 1.0
BUILD_SECONDS = 2.0
TICK_SECONDS = 0.25
MAX_UPLOAD_BYTES = 200 * 1024 * 1024
# The most of an archive's entrypoint or actions.json the build reads (by the entry's declared size, which
# zipfile never reads past): both are read whole into memory, and a 200 MiB upload of one compressed entry
# declared 200 GiB.
MAX_SOURCE_BYTES = 16 * 1024 * 1024
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
_PY_APP = re.compile(r"""\bApp\(\s*["']([A-Za-z0-9][A-Za-z0-9_.-]*)["']""")
_JS_APP = re.compile(r"""\bapp\(\s*["']([A-Za-z0-9][A-Za-z0-9_.-]*)["']""")
_ACTION = re.compile(r"""\.action\(\s*["']([A-Za-z0-9][A-Za-z0-9_.-]*)["']""")
PERMISSIVE_SCHEMA = {"type": "object", "additionalProperties": True}


# Timelines: what happens to a record and when, computed on read ----------------------------------
#
# A record's ``_timeline`` is a list of entries {"at": datetime, "type": "state"|"log", ...}, sorted by
# time. Everything at or before the tenant's now has happened; a mutation (stop, cancel) drops the
# entries still in the future and appends its own. Invocations use the same machinery.


def state_entry(at: datetime, status: str, reason: str | None = None, **extra) -> dict:
    return {"at": at, "type": "state", "status": status, "reason": reason, **extra}


def log_entry(at: datetime, message: str) -> dict:
    return {"at": at, "type": "log", "message": message}


def past(record: dict, moment: datetime) -> list[dict]:
    return [entry for entry in record["_timeline"] if entry["at"] <= moment]


def last_state(record: dict, moment: datetime) -> dict:
    states = [e for e in past(record, moment) if e["type"] == "state"]
    return states[-1] if states else record["_timeline"][0]


def interrupt(record: dict, moment: datetime, entries: list[dict]) -> None:
    """Drop what has not happened yet and append ``entries`` (a stop, a cancel)."""
    record["_timeline"] = [e for e in record["_timeline"] if e["at"] <= moment] + entries


def parse_since(raw: str | None, now: datetime, field: str = "since") -> datetime | None:
    """``since`` as RFC 3339 or a duration such as 30s, 5m, 2h, 1d (that long ago)."""
    if raw is None or raw.strip() == "":
        return None
    match = re.fullmatch(r"\s*(\d+)\s*([smhd])\s*", raw)
    if match:
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
        return now - timedelta(seconds=int(match.group(1)) * unit)
    try:
        return parse_time(raw.strip())
    except ValueError:
        raise invalid(
            f"{field} must be an RFC 3339 timestamp or a duration like 5m",
            **{field: f"{raw!r} is neither a timestamp nor a duration (30s, 5m, 2h, 1d)"},
        ) from None


def timeline_events(
    request: Request, record: dict, table: str, snapshot, state_event: str, terminal: tuple[str, ...]
):
    """Frames of ``record``'s events stream: its timeline since the query's ``since``, then live until
    terminal.

    The record is re-read from ``table`` each tick (gone: an error event ends the stream);
    ``snapshot(record, at)`` is the public record as of ``at``. Heartbeats go out every
    ``tenant.keepalive_seconds`` of quiet.
    """
    tenant: Tenant = request.state.tenant
    record_id = record["id"]
    since = parse_since(request.query_params.get("since"), tenant.now())
    kind = state_event.removesuffix("_state")

    async def frames():
        sent = 0
        quiet_since = time.monotonic()
        first = True
        while True:
            record = tenant.table(table).get(record_id)
            now = tenant.now()
            if record is None:
                yield None, _error_event(now, "not_found", f"the {kind} no longer exists")
                return
            entries = record["_timeline"]
            if first and since is not None:
                # Start from the current state so a client that skips history still knows where it is.
                yield None, _state_event(state_event, kind, snapshot(record, now), now)
                if last_state(record, now)["status"] in terminal:
                    return
            first = False
            ended = False
            while sent < len(entries) and entries[sent]["at"] <= now:
                entry = entries[sent]
                sent += 1
                if since is not None and entry["at"] < since:
                    continue
                quiet_since = time.monotonic()
                if entry["type"] == "log":
                    yield (
                        None,
                        {"event": "log", "message": entry["message"], "timestamp": rfc3339(entry["at"])},
                    )
                else:
                    yield None, _state_event(state_event, kind, snapshot(record, entry["at"]), entry["at"])
                    for extra in entry.get("events", []):
                        yield None, {**extra, "timestamp": rfc3339(entry["at"])}
                    if entry["status"] in terminal:
                        ended = True
            if ended:
                return
            if time.monotonic() - quiet_since >= tenant.keepalive_seconds:
                quiet_since = time.monotonic()
                yield None, {"event": "sse_heartbeat", "timestamp": rfc3339(now)}
            await asyncio.sleep(TICK_SECONDS)

    return sse_response(request, frames())


def _state_event(name: str, kind: str, record: dict, at: datetime) -> dict:
    return {"event": name, kind: record, "timestamp": rfc3339(at)}


def _error_event(now: datetime, code: str, message: str) -> dict:
    return {
        "event": "error",
        "timestamp": rfc3339(now),
        "error": {"code": code, "message": message, "details": []},
    }


# Records -----------------------------------------------------------------------------------------


def view(record: dict, moment: datetime) -> dict:
    """The public deployment as of ``moment``."""
    state = last_state(record, moment)
    public = {k: v for k, v in record.items() if not k.startswith("_")}
    public["status"] = state["status"]
    public["status_reason"] = state.get("reason")
    public["updated_at"] = rfc3339(state["at"])
    public["env_vars"] = {name: "" for name in record["_env"]}
    return public


def status_at(record: dict, moment: datetime) -> str:
    return last_state(record, moment)["status"]


def app_summary(record: dict) -> dict:
    """The app version a running deployment serves (an element of ``GET /apps``)."""
    return {
        "id": record["_app_id"],
        "app_name": record["app_name"],
        "version": record["version"],
        "region": record["region"],
        "deployment": record["id"],
        "actions": [dict(a) for a in record["_actions"]],
        "env_vars": {name: "" for name in record["_env"]},
    }


def running(tenant: Tenant, project: str, moment: datetime | None = None) -> list[dict]:
    """Deployments of a project that serve their app version now, newest first."""
    moment = moment or tenant.now()
    found = [
        r
        for r in tenant.table(TABLE).values()
        if r["_project"] == project and r.get("app_name") and status_at(r, moment) == "running"
    ]
    return sorted(found, key=lambda r: r["_created"], reverse=True)


def _app_id(tenant: Tenant, project: str, app_name: str, version: str) -> str:
    for record in tenant.table(TABLE).values():
        if (record["_project"], record.get("app_name"), record.get("version")) == (
            project,
            app_name,
            version,
        ):
            return record["_app_id"]
    return new_id("app")


def inspect_archive(content: bytes, entrypoint: str) -> tuple[str | None, list[dict], str | None]:
    """(app name, actions, failure reason) from a zip, the way the service's build reads it."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except (zipfile.BadZipFile, ValueError):
        return None, [], "the uploaded file is not a zip archive"
    with archive:
        names = set(archive.namelist())
        if entrypoint not in names:
            return None, [], f"entrypoint {entrypoint} was not found in the uploaded archive"
        for name in (entrypoint, "actions.json"):
            if name in names and archive.getinfo(name).file_size > MAX_SOURCE_BYTES:
                limit = MAX_SOURCE_BYTES // (1024 * 1024)
                return None, [], f"{name} is larger than the build reads ({limit} MiB)"
        source = archive.read(entrypoint).decode("utf-8", "replace")
        schemas = {}
        if "actions.json" in names:
            try:
                schemas = json.loads(archive.read("actions.json"))
            except (ValueError, RecursionError):
                return None, [], "actions.json is not valid JSON"
            if too_deep(schemas):  # kept in the state file, whose encoder recurses
                return None, [], f"actions.json nests deeper than {MAX_DEPTH} levels"
            if not isinstance(schemas, dict):
                return None, [], "actions.json must hold a JSON object"
    match = _PY_APP.search(source) or _JS_APP.search(source)
    if match is None:
        return None, [], f'{entrypoint} defines no app: create one with App("name") (or app("name") in JS)'
    actions = []
    for name in dict.fromkeys(_ACTION.findall(source)):
        spec = schemas.get(name) if isinstance(schemas.get(name), dict) else {}
        actions.append(
            {
                "name": name,
                "input_schema": spec.get("input_schema") or PERMISSIVE_SCHEMA,
                "output_schema": spec.get("output_schema") or PERMISSIVE_SCHEMA,
            }
        )
    if not actions:
        return match.group(1), [], f"{entrypoint} defines app {match.group(1)!r} but no actions"
    return match.group(1), actions, None


def create(
    tenant: Tenant,
    project: str,
    *,
    app_name: str | None,
    version: str,
    actions: list[dict],
    entrypoint: str,
    env: dict[str, str],
    source: dict,
    failure: str | None = None,
    at: datetime | None = None,
    queue_seconds: float = QUEUE_SECONDS,
    build_seconds: float = BUILD_SECONDS,
    size: int | None = None,
) -> dict:
    """Store a deployment and schedule its build on the timeline."""
    start = at or tenant.now()
    record = {
        "id": new_id("dep"),
        "created_at": rfc3339(start),
        "updated_at": rfc3339(start),
        "region": REGION,
        "status": "queued",
        "status_reason": None,
        "entrypoint_rel_path": entrypoint,
        "env_vars": {},
        **source,
        "app_name": app_name,
        "version": version,
        "_project": project,
        "_created": start,
        "_env": dict(env),
        "_actions": actions,
        "_app_id": _app_id(tenant, project, app_name, version) if app_name else new_id("app"),
    }
    build = start + timedelta(seconds=queue_seconds)
    done = build + timedelta(seconds=build_seconds)
    what = source.get("source_url") or "uploaded archive"
    timeline = [
        state_entry(start, "queued", "waiting for a build slot"),
        log_entry(start, f"Deployment {record['id']} queued (version {version})"),
        state_entry(build, "in_progress", "building"),
        log_entry(build, f"Fetching source from {what}" + (f" ({size} bytes)" if size else "")),
        log_entry(build + timedelta(seconds=build_seconds * 0.25), "Installing dependencies"),
    ]
    if failure:
        timeline += [
            log_entry(done, f"Build failed: {failure}"),
            state_entry(done, "failed", failure),
        ]
    else:
        names = ", ".join(a["name"] for a in actions)
        timeline += [
            log_entry(build + timedelta(seconds=build_seconds * 0.6), f"Registering actions: {names}"),
            log_entry(done, f"App {app_name} version {version} is live in {REGION}"),
            state_entry(
                done,
                "running",
                None,
                events=[{"event": "app_version_summary", **_summary_event(record)}],
            ),
        ]
    record["_timeline"] = timeline
    tenant.table(TABLE)[record["id"]] = record
    return record


def _summary_event(record: dict) -> dict:
    summary = app_summary(record)
    summary.pop("deployment")
    summary["env_vars"] = {}  # not populated in the stream (notes §13)
    return summary


def stop(tenant: Tenant, record: dict, reason: str) -> bool:
    """Stop an active deployment now (True), or leave a terminal one alone (False)."""
    now = tenant.now()
    if status_at(record, now) in TERMINAL:
        return False
    interrupt(record, now, [log_entry(now, f"Stopping: {reason}"), state_entry(now, "stopped", reason)])
    return True


def _get(request: Request, deployment_id: str) -> dict:
    tenant, project = request.state.tenant, project_of(request)
    return record_of(tenant, TABLE, deployment_id, "deployment", gone=lambda r: r["_project"] != project)


# Endpoints ---------------------------------------------------------------------------------------


@endpoint
async def list_deployments(request: Request):
    tenant: Tenant = request.state.tenant
    params = request.query_params
    items = sorted(scoped(request, TABLE), key=lambda r: r["_created"], reverse=True)
    app_name = params.get("app_name")
    app_version = params.get("app_version")
    if app_version and not app_name:
        raise invalid("app_version needs app_name", app_version="filter by app_name as well")
    if app_name:
        items = [r for r in items if (r.get("app_name") or "") == app_name]
    if app_version:
        items = [r for r in items if r.get("version") == app_version]
    query = (params.get("query") or "").strip().casefold()
    if query:
        items = [
            r
            for r in items
            if r["id"] == query
            or query in (r.get("app_name") or "").casefold()
            or query in (r.get("version") or "").casefold()
            or query in (r.get("source_url") or "").casefold()
        ]
    now = tenant.now()
    return paginate(request, items, render=lambda r: view(r, now))


@endpoint
async def get_deployment(request: Request):
    record = _get(request, request.path_params["id"])
    return ok(view(record, request.state.tenant.now()))


@endpoint
async def delete_deployment(request: Request):
    record = _get(request, request.path_params["id"])
    if stop(request.state.tenant, record, "stopped and marked for deletion"):
        # Marked for deletion: gone from lists (and from the project's resources), still readable by id.
        record["_deleted"] = True
    return no_content()


@endpoint
async def deployment_events(request: Request):
    record = _get(request, request.path_params["id"])
    return timeline_events(request, record, TABLE, view, "deployment_state", TERMINAL)


@endpoint
async def create_deployment(request: Request):
    tenant: Tenant = request.state.tenant
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise invalid("send multipart/form-data", file="upload the zip as the multipart field 'file'")
    try:
        form = await request.form(max_files=1, max_fields=500)
    except (HTTPException, MultiPartException) as exc:
        why = str(getattr(exc, "detail", None) or getattr(exc, "message", None) or exc)[:200]
        raise invalid(
            "the multipart body could not be read", file=why or "malformed multipart body"
        ) from None
    try:
        fields = {k: v for k, v in form.multi_items() if isinstance(v, str)}
        upload = form.get("file")
        content = await upload.read() if isinstance(upload, UploadFile) else None
    finally:
        await form.close()
    project = project_of(request)
    errors: dict[str, str] = {}
    version = (fields.get("version") or "latest").strip()
    if not _VERSION.match(version):
        errors["version"] = "1-64 letters, digits, dots, dashes, underscores or plus signs"
    region = fields.get("region") or REGION
    if region not in REGIONS:
        errors["region"] = f"must be one of {', '.join(REGIONS)}"
    force = (fields.get("force") or "").lower() in ("true", "1", "on", "yes")
    env = {}
    for key, value in fields.items():
        match = re.fullmatch(r"env_vars\[(.*)\]", key)
        if match is None:
            continue
        name = match.group(1)
        if not _ENV_NAME.match(name):
            errors[f"env_vars[{name}]"] = (
                "names are letters, digits and underscores, not starting with a digit"
            )
        env[name] = value
    source_type = fields.get("source[type]")
    if source_type is not None and content is not None:
        errors["file"] = "give either a file or a source, not both"
    if source_type is None and content is None:
        errors["file"] = "upload the app as a zip in the field 'file' (or give source[type]=github)"
    if errors:
        raise invalid("the deployment request is not valid", **errors)

    if source_type is not None:
        record = _create_from_github(tenant, project, fields, version, env, force)
        return ok(view(record, tenant.now()), status=201)

    entrypoint = (fields.get("entrypoint_rel_path") or "").strip()
    if not entrypoint:
        raise invalid("entrypoint_rel_path is required", entrypoint_rel_path="the file that defines the app")
    if len(content) > MAX_UPLOAD_BYTES:
        raise ApiError(413, "file_too_large", "the archive exceeds the 200 MiB upload limit")
    if not zipfile.is_zipfile(io.BytesIO(content)):
        raise invalid("file is not a zip archive", file="upload a .zip of the app's source")
    app_name, actions, failure = inspect_archive(content, entrypoint)
    if app_name and not failure:
        _replace_or_refuse(tenant, project, app_name, version, force)
    source = {"source_type": "file", "source_checksum": hashlib.sha256(content).hexdigest()}
    record = create(
        tenant,
        project,
        app_name=app_name,
        version=version,
        actions=actions,
        entrypoint=entrypoint,
        env=env,
        source=source,
        failure=failure,
        size=len(content),
    )
    return ok(view(record, tenant.now()), status=201)


def _create_from_github(tenant, project, fields, version, env, force) -> dict:
    errors = {}
    if fields.get("source[type]") != "github":
        errors["source[type]"] = "must be github"
    for part in ("url", "ref", "entrypoint"):
        if not (fields.get(f"source[{part}]") or "").strip():
            errors[f"source[{part}]"] = "required for a GitHub source"
    url = fields.get("source[url]") or ""
    if url and not re.match(r"^https://github\.com/[\w.-]+/[\w.-]+/?$", url):
        errors["source[url]"] = "a https://github.com/<owner>/<repo> URL"
    if errors:
        raise invalid("the GitHub source is not valid", **errors)
    app_name = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    _replace_or_refuse(tenant, project, app_name, version, force)
    source = {
        "source_type": "github",
        "source_url": url,
        "source_ref": fields["source[ref]"],
        "source_path": fields.get("source[path]") or None,
    }
    actions = [{"name": "run", "input_schema": PERMISSIVE_SCHEMA, "output_schema": PERMISSIVE_SCHEMA}]
    return create(
        tenant,
        project,
        app_name=app_name,
        version=version,
        actions=actions,
        entrypoint=fields["source[entrypoint]"],
        env=env,
        source=source,
    )


def _replace_or_refuse(tenant: Tenant, project: str, app_name: str, version: str, force: bool) -> None:
    now = tenant.now()
    for record in tenant.table(TABLE).values():
        same = (record["_project"], record.get("app_name"), record.get("version")) == (
            project,
            app_name,
            version,
        )
        if same and status_at(record, now) in ACTIVE:
            if not force:
                raise conflict(
                    f"{app_name} version {version} is already deployed ({record['id']}); "
                    "deploy another version or set force to replace it",
                    code="version_exists",
                )
            stop(tenant, record, "replaced by a forced deployment of the same version")


# Demo data ---------------------------------------------------------------------------------------

URL_INPUT = {
    "type": "object",
    "required": ["url"],
    "properties": {
        "url": {"type": "string", "format": "uri", "description": "Page to open"},
        "wait_until": {
            "type": "string",
            "enum": ["load", "domcontentloaded", "networkidle"],
            "default": "load",
            "description": "When the page counts as loaded",
        },
        "timeout_ms": {"type": "integer", "minimum": 1000, "maximum": 120000, "default": 30000},
    },
}

DEMO_ACTIONS = {
    "web-scraper": [
        {
            "name": "get-page-title",
            "input_schema": URL_INPUT,
            "output_schema": {
                "type": "object",
                "properties": {"title": {"type": "string"}, "url": {"type": "string", "format": "uri"}},
            },
        },
        {
            "name": "extract-links",
            "input_schema": {
                "type": "object",
                "required": ["url"],
                "properties": {
                    "url": {"type": "string", "format": "uri", "description": "Page to read links from"},
                    "max_links": {"type": "integer", "minimum": 1, "maximum": 500, "default": 20},
                    "same_domain": {
                        "type": "boolean",
                        "default": True,
                        "description": "Only links on the page's own domain",
                    },
                },
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "links": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"href": {"type": "string"}, "text": {"type": "string"}},
                        },
                    },
                    "count": {"type": "integer"},
                },
            },
        },
    ],
    "checkout-bot": [
        {
            "name": "place-order",
            "input_schema": {
                "type": "object",
                "required": ["sku", "quantity"],
                "properties": {
                    "sku": {
                        "type": "string",
                        "pattern": "^[A-Z]{3}-[0-9]{4}$",
                        "description": "e.g. ABC-1234",
                    },
                    "quantity": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                    "shipping": {
                        "type": "string",
                        "enum": ["standard", "express", "overnight"],
                        "default": "standard",
                    },
                    "gift_wrap": {"type": "boolean", "default": False},
                    "coupon_codes": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
                    "notes": {"type": "string", "maxLength": 200},
                },
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "total": {"type": "number"},
                    "currency": {"type": "string"},
                },
            },
        },
        {
            "name": "check-stock",
            "input_schema": {
                "type": "object",
                "required": ["sku"],
                "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}},
            },
            "output_schema": {
                "type": "object",
                "properties": {"in_stock": {"type": "boolean"}, "quantity": {"type": "integer"}},
            },
        },
    ],
    "report-builder": [
        {
            "name": "build-report",
            "input_schema": {
                "type": "object",
                "required": ["format"],
                "properties": {
                    "format": {"type": "string", "enum": ["csv", "json", "pdf"]},
                    "period": {
                        "type": "object",
                        "description": "Reporting window",
                        "properties": {
                            "from": {"type": "string", "format": "date"},
                            "to": {"type": "string", "format": "date"},
                        },
                    },
                    "rows": {"type": "integer", "minimum": 1, "maximum": 5000, "default": 50},
                },
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "rows": {"type": "array", "items": {"type": "object"}},
                    "format": {"type": "string"},
                },
            },
        },
        {
            "name": "run-query",
            # A schema the console's form cannot render field by field: it falls back to raw JSON.
            "input_schema": {
                "oneOf": [
                    {"type": "object", "required": ["sql"], "properties": {"sql": {"type": "string"}}},
                    {
                        "type": "object",
                        "required": ["saved_query"],
                        "properties": {"saved_query": {"type": "string"}},
                    },
                ]
            },
            "output_schema": {"type": "object"},
        },
    ],
}


def seed(tenant: Tenant) -> None:
    project = tenant.default_project_id
    now = tenant.now()
    ago = lambda **kw: now - timedelta(**kw)  # noqa: E731

    def deploy(
        app, version, when, *, env=None, failure=None, queue=QUEUE_SECONDS, build=BUILD_SECONDS, repo=None
    ):
        source = (
            {"source_type": "github", "source_url": repo, "source_ref": "main", "source_path": None}
            if repo
            else {
                "source_type": "file",
                "source_checksum": hashlib.sha256(f"{app}@{version}".encode()).hexdigest(),
            }
        )
        return create(
            tenant,
            project,
            app_name=app,
            version=version,
            actions=DEMO_ACTIONS[app] if not failure else [],
            entrypoint="main.py" if not repo else "src/index.ts",
            env=env or {},
            source=source,
            failure=failure,
            at=when,
            queue_seconds=queue,
            build_seconds=build,
            size=48_213,
        )

    scraper_env = {"SCRAPER_API_TOKEN": "demo-token", "USER_AGENT": "Mozilla/5.0", "LOG_LEVEL": "info"}
    old = deploy("web-scraper", "1.0.0", ago(days=30), env=scraper_env)
    old_stop = old["_created"] + timedelta(days=9)
    interrupt(old, old_stop, [state_entry(old_stop, "stopped", "stopped and marked for deletion")])
    old["_deleted"] = True
    deploy("web-scraper", "1.1.0", ago(days=21), env=scraper_env)
    deploy("web-scraper", "1.2.0", ago(days=3), env=scraper_env)
    deploy(
        "checkout-bot",
        "0.9.0",
        ago(days=14),
        env={"STORE_URL": "https://shop.example.com", "STORE_PASSWORD": "x"},
    )
    deploy(
        "checkout-bot",
        "1.0.0",
        ago(days=2),
        env={"STORE_URL": "https://shop.example.com", "STORE_PASSWORD": "x"},
        repo="https://github.com/acme/checkout-bot",
    )
    replaced = deploy("report-builder", "latest", ago(days=20), env={"DATABASE_URL": "postgres://demo"})
    when = ago(days=6)
    reason = "replaced by a forced deployment of the same version"
    interrupt(replaced, when, [log_entry(when, f"Stopping: {reason}"), state_entry(when, "stopped", reason)])
    deploy("report-builder", "latest", when, env={"DATABASE_URL": "postgres://demo"})
    deploy(
        "report-builder",
        "2.0.0-rc1",
        ago(hours=5),
        failure="entrypoint main.py was not found in the uploaded archive",
    )
    # Still building on the tenant clock: slow builds so the demo shows every state for a while.
    deploy("report-builder", "2.0.0", ago(seconds=30), queue=10, build=900)
    deploy("checkout-bot", "1.1.0", ago(seconds=5), queue=600, build=120)


routes = [
    Route("/deployments", list_deployments, methods=["GET"]),
    Route("/deployments", create_deployment, methods=["POST"]),
    Route("/deployments/{id}", get_deployment, methods=["GET"]),
    Route("/deployments/{id}", delete_deployment, methods=["DELETE"]),
    Route("/deployments/{id}/events", deployment_events, methods=["GET"]),
]
