"""Browser sessions (notes §2): create, get, update, list, soft delete, and the inactivity timeout.

Choices where the notes leave room (the lead copies them into the docs):

- The record has no ``status``; a session is "ended" once it has ``deleted_at``: after ``DELETE``, after the
  control route ``POST /_sandbox/browsers/{id}/end``, or when the tenant clock passes its last activity plus
  ``timeout_seconds``. Activity is the session's creation and every call that drives it (``PATCH`` and the
  computer, filesystem and process operations, which call ``touch``). Reading it (GET, lists, telemetry
  pages and streams) is not activity: an operator watching a session must not keep it alive (the real
  service counts CDP and live-view connections, which the sandbox does not model).
- The timeout is computed when state is read, so ``POST /_sandbox/clock`` moves it deterministically; an
  ended session's ``deleted_at`` is the moment it ended, not the moment it was noticed.
- Lists are newest first. ``query`` matches the name, session id, profile name or id, proxy id and pool
  name (case-insensitive substring; ids exactly or as substrings).
- On-demand sessions count against the project's ``max_concurrent_sessions`` (else the org's
  ``default_project_max_concurrent_sessions``, else the org ceiling) together with its pools' sizes: one
  more is 409 ``session_limit_exceeded`` naming the numbers, as for pools.
- ``gpu: true`` is refused (the demo plan's entitlements have ``gpu`` disabled); ``memory`` only on headful
  sessions; ``profile``, ``extensions`` and ``proxy`` must name live records of the project (400 otherwise).
- ``telemetry``: capture is on when ``enabled`` is true, or when ``browser`` categories are given without
  ``enabled``; ``{}``, null or omitted means no capture; ``enabled: false`` with categories is refused. The
  record echoes all nine configurable categories with their ``enabled`` flag.
- Live view: headful sessions get ``browser_live_view_url`` served by the sandbox itself
  (``/_sandbox/live/{session_id}``, see ``console/sandbox/resources/live_view.py``), so the console can link
  to or embed it offline, and a view-only link in ``sandbox.read_only_live_view_url``.
- Engine (``console/sandbox/chromium/engine.py``): a session runs in the engine the sandbox ran when it was
  created. Under Chromium its ``cdp_ws_url`` is the sandbox's guarded CDP proxy
  (``ws://<sandbox>/_sandbox/cdp/{session_id}?jwt=…``, see ``cdp_proxy``); the record carries a sandbox-only
  ``sandbox: {engine, browser}`` field (``browser``: ``running``, ``standby``, ``crashed`` or ``simulated``),
  which the service's record does not have. Create waits for the browser to start and navigate (best effort);
  delete waits for it to close.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.chromium import engine
from console.sandbox.core.errors import conflict, invalid
from console.sandbox.core.fields import Bad, Body, Context, Field, is_int, optional_string
from console.sandbox.core.http import endpoint, no_content, ok, paginate, project_of, read_json
from console.sandbox.core.state import Tenant, new_id, parse_time, rfc3339
from console.sandbox.resources import caps, sessions, telemetry, telemetry_destinations

REGIONS = ("us-east", "eu-west")
MEMORY = ("8GiB", "16GiB")
STATUSES = ("active", "deleted", "all")
DEFAULT_TIMEOUT = 60
MIN_TIMEOUT = 10
MAX_TIMEOUT = 259_200
DEFAULT_VIEWPORT = {"width": 1920, "height": 1080, "refresh_rate": 25}
MAX_TAGS = 50
NAME_MAX = 255
PROFILE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,255}$")
PROXY_MODES = ("direct", "default")
# Kernel manages these itself (extensions, proxy, CDP); a session's chrome_policy cannot set them.
BLOCKED_POLICIES = (
    "ExtensionInstallForcelist",
    "ExtensionInstallAllowlist",
    "ExtensionInstallBlocklist",
    "ExtensionSettings",
    "ProxySettings",
    "ProxyMode",
    "ProxyServer",
    "ProxyPacUrl",
    "ProxyBypassList",
    "RemoteDebuggingAllowed",
    "DeveloperToolsAvailability",
)
# §6.3: operational categories are on whenever telemetry is; CDP ones and screenshots are opt-in.
OPERATIONAL = ("control", "connection", "system", "captcha")
OPT_IN = ("console", "network", "page", "interaction", "screenshot")
CATEGORIES = OPERATIONAL + OPT_IN
# Records ------------------------------------------------------------------------------------------


def new_browser_record(tenant: Tenant, project: str, **config) -> dict:
    """Create a session from already-validated configuration (pools and invocations call this).

    ``config`` holds create-body fields in their record shape: ``headless``, ``stealth``, ``kiosk_mode``,
    ``memory``, ``region``, ``timeout_seconds``, ``viewport``, ``name``, ``tags``, ``start_url``,
    ``chrome_policy``, ``network``, ``invocation_id``, ``profile`` (a profile record dict),
    ``profile_save_changes``, ``proxy`` (``{id?, name?, mode?}``), ``extensions`` (``[{id, name}]``),
    ``pool`` (``{id, name}``), ``telemetry`` (a set of enabled categories, or None for no capture).
    """
    now = tenant.now()
    session_id = new_id(length=24)
    headless = bool(config.get("headless", False))
    record: dict = {
        "session_id": session_id,
        "created_at": rfc3339(now),
        "headless": headless,
        "stealth": bool(config.get("stealth", False)),
        "kiosk_mode": bool(config.get("kiosk_mode", False)),
        "gpu": False,
        "memory": config.get("memory") or ("8GiB" if not headless else "2GiB"),
        "region": config.get("region") or "us-east",
        "timeout_seconds": int(config.get("timeout_seconds") or DEFAULT_TIMEOUT),
        "viewport": dict(config.get("viewport") or DEFAULT_VIEWPORT),
        "cdp_ws_url": "",
        "webdriver_ws_url": "",
        "base_url": f"https://{session_id}.vm.sandbox.invalid/api",
        "_project": project,
        "_tenant": tenant.id,
        "_jwt": new_id(length=40),
        # Its own token: a live-view link must not carry the CDP token (full control of the browser).
        "_live_token": new_id(length=40),
        "_live_view_token": new_id(length=40),
        "_last_activity": now,
        "_ended_at": None,
        "_ended_reason": None,
        "_engine": engine.get().name,
    }
    for key in ("name", "start_url", "chrome_policy", "network", "invocation_id", "pool"):
        if config.get(key):
            record[key] = config[key]
    record["tags"] = dict(config.get("tags") or {})
    profile = config.get("profile")
    if profile:
        record["profile"] = _profile_ref(profile)
        record["profile_save_changes"] = bool(config.get("profile_save_changes", False))
    if config.get("proxy"):
        record["proxy"] = dict(config["proxy"])
        if config["proxy"].get("id"):
            record["proxy_id"] = config["proxy"]["id"]
    elif record["stealth"]:
        record["proxy"] = {"mode": "default"}
    if config.get("extensions"):
        record["extensions"] = [dict(e) for e in config["extensions"]]
    record["_categories"] = set(config["telemetry"]) if config.get("telemetry") is not None else None
    record["cdp_ws_url"] = f"wss://{session_id}.vm.sandbox.invalid/cdp?jwt={record['_jwt']}"
    record["webdriver_ws_url"] = f"wss://{session_id}.vm.sandbox.invalid/session?jwt={record['_jwt']}"
    tenant.table(sessions.TABLE)[session_id] = record
    telemetry.start(tenant, record)
    return record


def _profile_ref(profile: dict) -> dict:
    ref = {"id": profile["id"], "name": profile.get("name"), "created_at": profile.get("created_at")}
    for key in ("updated_at", "last_used_at"):
        if profile.get(key):
            ref[key] = profile[key]
    return ref


def render(record: dict, tenant: Tenant, base: str = "") -> dict:
    """The BrowserSession record as the service sends it (private keys dropped, usage computed)."""
    body = {k: v for k, v in record.items() if not k.startswith("_")}
    end_moment = sessions.ended_at(tenant, record)
    created = parse_time(record["created_at"])
    until = end_moment or tenant.now()
    body["usage"] = {"uptime_ms": max(0, int((until - created).total_seconds() * 1000))}
    if base:
        # Where the SDK sends the session's sub-resources directly, with ?jwt= (browser_vm.py).
        body["base_url"] = f"{base.rstrip('/')}/_vm/{record['session_id']}"
    cats = sessions.categories(record)
    if cats is not None:
        body["telemetry"] = {"browser": {name: {"enabled": name in cats} for name in CATEGORIES}}
    if record.get("_otlp_export"):
        body.setdefault("telemetry", {})["export"] = {"otlp": dict(record["_otlp_export"])}
    body["sandbox"] = {
        "engine": record.get("_engine", "simulated"),
        "browser": engine.get().session_state(record),
        **engine.get().applied(record),
    }
    if record.get("_engine") == "chromium" and base:
        ws_base = "ws" + base.rstrip("/").removeprefix("http")
        body["cdp_ws_url"] = f"{ws_base}/_sandbox/cdp/{record['session_id']}?jwt={record['_jwt']}"
    if not record["headless"] and end_moment is None:
        live = f"{base.rstrip('/')}/_sandbox/live/{record['session_id']}"
        body["browser_live_view_url"] = f"{live}?jwt={record['_live_token']}"
        body["sandbox"]["read_only_live_view_url"] = f"{live}?jwt={record['_live_view_token']}&readOnly=true"
    if not body.get("tags"):
        body.pop("tags", None)
    return body


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


# Validation ---------------------------------------------------------------------------------------
# Each check takes a field's value (None when absent) and answers what the configuration keeps, or
# raises ``Bad`` with why; ``CREATE`` and ``UPDATE`` below are the two bodies as tables.

_UNCHANGED = object()  # an update that leaves the setting as it is


def _flag(value, context: Context) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise Bad("must be true or false")
    return value


def _name(value, context: Context) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.strip():
        raise Bad("must be a non-empty string")
    if len(value) > NAME_MAX:
        raise Bad(f"at most {NAME_MAX} characters")
    return value.strip()


def _tags(value, context: Context) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise Bad("must map strings to strings")
    if len(value) > MAX_TAGS:
        raise Bad(f"at most {MAX_TAGS} tags")
    if any(not k.strip() for k in value):
        raise Bad("tag keys cannot be empty")
    return {k.strip(): v for k, v in value.items()}


def _viewport(value, context: Context) -> dict | None:
    """A create's viewport, or an update's (which may say ``force``)."""
    if value is None:
        return None
    allowed = {"width", "height", "refresh_rate"} | (set() if context.creating else {"force"})
    if not isinstance(value, dict) or set(value) - allowed:
        raise Bad("must be an object with width, height and optionally refresh_rate")
    width, height, rate = value.get("width"), value.get("height"), value.get("refresh_rate")
    if not is_int(width) or not is_int(height):
        raise Bad("width and height are required integers")
    if not (240 <= width <= 7680 and 240 <= height <= 4320):
        raise Bad("width must be 240 to 7680 and height 240 to 4320 pixels")
    if rate is not None and (not is_int(rate) or not 1 <= rate <= 60):
        raise Bad("refresh_rate must be an integer from 1 to 60")
    return {"width": width, "height": height, "refresh_rate": rate or 25}


def _timeout(value, context: Context) -> int:
    if value is None:
        return DEFAULT_TIMEOUT
    if not is_int(value) or not MIN_TIMEOUT <= value <= MAX_TIMEOUT:
        raise Bad(f"must be an integer from {MIN_TIMEOUT} to {MAX_TIMEOUT} (72 hours)")
    return value


def _find_named(tenant: Tenant, table: str, project: str, ref) -> dict | None:
    key = (ref.get("id") or ref.get("name")) if isinstance(ref, dict) else ref
    if not isinstance(key, str) or not key:
        return None
    live = [r for r in tenant.table(table).values() if r.get("_project") == project and not r.get("_deleted")]
    return next((r for r in live if r.get("id") == key), None) or next(
        (r for r in live if (r.get("name") or "") == key), None
    )


def _profile(value, context: Context) -> tuple[dict | None, bool]:
    """The profile record and ``save_changes``."""
    if value is None:
        return None, False
    if not isinstance(value, dict) or not (value.get("id") or value.get("name")):
        raise Bad("give the profile's id or name")
    if value.get("name") and not PROFILE_NAME.match(str(value["name"])):
        raise Bad("a profile name is 1 to 255 letters, digits, dots, underscores or hyphens")
    save = value.get("save_changes", False)
    if not isinstance(save, bool):
        raise Bad("save_changes must be true or false")
    found = _find_named(context.tenant, "profiles", context.project, value)
    if found is None:
        raise Bad(f"no profile {value.get('id') or value.get('name')!r} in this project")
    return found, save


def _extensions(value, context: Context) -> list[dict]:
    """``[{id, name}]`` of the extensions named (each one's ``last_used_at`` moves)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise Bad("must be a list of {id} or {name} objects")
    found = []
    for ref in value:
        record = _find_named(context.tenant, "extensions", context.project, ref)
        if record is None:
            raise Bad(f"no extension {ref.get('id') or ref.get('name')!r} in this project")
        found.append({"id": record["id"], "name": record.get("name")})
        record["last_used_at"] = rfc3339(context.tenant.now())
    return found


def _proxy(value, context: Context) -> dict | None:
    """``proxy`` (``{mode}``, ``{id}`` or ``{name}``), or the deprecated ``proxy_id`` of the same body. A
    ``mode: direct`` is kept; any other mode is ``default`` unless the session is stealth."""
    legacy = context.body.get("proxy_id")
    if value is not None and legacy:
        raise Bad("give proxy or the deprecated proxy_id, not both")
    if legacy:
        value = {"id": legacy}
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) != 1:
        raise Bad("exactly one of mode, id or name")
    if "mode" in value:
        if value["mode"] not in PROXY_MODES:
            raise Bad("mode must be direct or default")
        stealth = context.extra.get("stealth", context.kept.get("stealth", False))
        return {"mode": value["mode"]} if value["mode"] == "direct" or stealth else {"mode": "default"}
    if set(value) - {"id", "name"}:
        raise Bad("exactly one of mode, id or name")
    record = _find_named(context.tenant, "proxies", context.project, value)
    if record is None:
        raise Bad(f"no proxy {value.get('id') or value.get('name')!r} in this project")
    return {"id": record["id"], "name": record.get("name")}


def _telemetry(value, context: Context) -> set[str] | None:
    """The categories to capture from a create body's ``telemetry`` (None = no capture)."""
    if value is None or value == {}:
        return None
    if not isinstance(value, dict) or set(value) - {"enabled", "browser", "export"}:
        raise Bad("must be an object with enabled, browser and export")
    enabled = value.get("enabled")
    browser = value.get("browser") or {}
    if enabled is not None and not isinstance(enabled, bool):
        raise Bad("enabled must be true or false")
    if enabled is False:
        if browser:
            raise Bad("enabled: false cannot be combined with categories")
        return None
    overrides = _categories(browser)
    if enabled is None and not browser:
        return None
    chosen = set(OPERATIONAL)
    for name, on in overrides.items():
        (chosen.add if on else chosen.discard)(name)
    return chosen


def _categories(browser) -> dict[str, bool]:
    if not isinstance(browser, dict):
        raise Bad("browser must map categories to {enabled}")
    result = {}
    for name, entry in browser.items():
        if name not in CATEGORIES:
            raise Bad(f"unknown category {name!r}; one of {', '.join(CATEGORIES)}")
        if entry is None:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("enabled", True), bool):
            raise Bad(f"{name} must be {{enabled: true|false}}")
        result[name] = entry.get("enabled", True)
    return result


def _updated_categories(value, context: Context):
    """§2 update rules: null/{} unchanged; enabled:true rebuilds; enabled:false stops; browser merges."""
    if not isinstance(value, dict) or set(value) - {"enabled", "browser", "export"}:
        raise Bad("must be an object with enabled, browser and export")
    enabled, browser = value.get("enabled"), value.get("browser") or {}
    if enabled is False:
        if browser:
            raise Bad("enabled: false cannot be combined with categories")
        return None
    overrides = _categories(browser)
    if enabled is True:
        chosen = set(OPERATIONAL)
    elif browser:
        chosen = set(sessions.categories(context.record) or OPERATIONAL)
    else:
        return _UNCHANGED
    for name, on in overrides.items():
        (chosen.add if on else chosen.discard)(name)
    return chosen


def _chrome_policy(value, context: Context) -> dict | None:
    if value is None:
        return None
    problem = chrome_policy_problem(value)
    if problem:
        raise Bad(problem)
    return value or None


MAX_POLICY_BYTES = 5 * 1024 * 1024
_POLICY_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,99}$")


def chrome_policy_problem(value) -> str | None:
    """Why ``value`` cannot be a session's (or a pool's) ``chrome_policy``, else None: a JSON object of at
    most 5 MiB whose keys are policy names (as Chromium's managed policy file has them), none of those
    the service manages itself."""
    if not isinstance(value, dict):
        return "must be a JSON object of Chrome enterprise policies"
    bad = next((key for key in value if not _POLICY_NAME.match(key)), None)
    if bad is not None:
        return f"{bad[:60]!r} is not a Chrome policy name (letters and digits, such as URLBlocklist)"
    blocked = sorted(set(value) & set(BLOCKED_POLICIES))
    if blocked:
        return f"managed by the service and cannot be set: {', '.join(blocked)}"
    if len(json.dumps(value).encode()) > MAX_POLICY_BYTES:
        return "must be at most 5 MiB"
    return None


def _start_url(value, context: Context) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not re.match(r"^(https?|about|chrome|data):", value):
        raise Bad("must be an http or https URL")
    return value


def _network(value, context: Context) -> dict | None:
    if value is None:
        return None
    hosts = value.get("private_hosts") if isinstance(value, dict) else None
    if (
        not isinstance(value, dict)
        or set(value) - {"private_hosts"}
        or (hosts is not None and not (isinstance(hosts, list) and all(isinstance(h, str) for h in hosts)))
    ):
        raise Bad("must be {private_hosts: [host patterns or CIDRs]}")
    return {"private_hosts": list(hosts)} if hosts is not None else {}


def _no_gpu(value, context: Context) -> bool:
    if _flag(value, context):
        raise Bad("GPU browsers are not enabled for this organization's plan")
    return False


def _region(value, context: Context) -> str:
    region = value or "us-east"
    if region not in REGIONS:
        raise Bad("must be us-east or eu-west")
    return region


def _memory(value, context: Context) -> str | None:
    if value is None:
        return None
    if value not in MEMORY:
        raise Bad("must be 8GiB or 16GiB")
    if context.kept.get("headless", False):
        raise Bad("memory can only be chosen for headful browsers")
    return value


def _kept_unless_unchanged(key: str):
    return lambda value: {} if value is _UNCHANGED else {key: value}


# A create body → the configuration ``new_browser_record`` takes (every field: a default when absent).
CREATE = Body(
    message="the browser session configuration is not valid",
    unknown="not a browser session field",
    also=frozenset({"proxy_id"}),  # read by ``proxy``
    complete=True,
    fields=(
        Field("name", _name),
        Field("tags", _tags),
        Field("headless", _flag),
        Field("stealth", _flag),
        Field("kiosk_mode", _flag),
        Field("timeout_seconds", _timeout),
        Field("viewport", _viewport),
        Field("chrome_policy", _chrome_policy),
        Field("start_url", _start_url),
        Field("network", _network),
        Field("telemetry", _telemetry),
        Field("gpu", _no_gpu, apply=lambda value: {}),
        Field("region", _region),
        Field("memory", _memory),
        Field("invocation_id", optional_string()),
        Field("profile", _profile, apply=lambda pair: {"profile": pair[0], "profile_save_changes": pair[1]}),
        Field("extensions", _extensions),
        Field("proxy", _proxy),
    ),
)
CREATE_FIELDS = CREATE.names()
# A PATCH body → what changes (``profile``: the record and save_changes; ``categories``: capture).
UPDATE = Body(
    message="the update is not valid",
    unknown=lambda name: (
        "cannot be changed after creation" if name in CREATE_FIELDS else "not a session field"
    ),
    also=frozenset({"proxy_id", "disable_default_proxy"}),
    fields=(
        Field("name", _name, clear=(None, "")),
        Field("tags", _tags, skip=(None,)),
        Field("viewport", _viewport, skip=(None,)),
        Field("telemetry", _updated_categories, skip=(None, {}), apply=_kept_unless_unchanged("categories")),
        Field("profile", _profile, skip=(None,)),
        # Only when one is given (``proxy_id: ""`` removes the proxy: ``update_browser``).
        Field(
            "proxy", _proxy, always=True, apply=lambda proxy: {"proxy": proxy} if proxy is not None else {}
        ),
    ),
)


def _unique_name(request: Request, name: str | None, *, except_id: str | None = None) -> None:
    if not name:
        return
    tenant = request.state.tenant
    for record in sessions.in_project(request):
        if (
            record.get("name") == name
            and record["session_id"] != except_id
            and sessions.is_active(tenant, record)
        ):
            raise conflict(
                f"an active browser session named {name!r} already exists", code="browser_name_taken"
            )


def validate_create(request: Request, body: dict) -> dict:
    """A create body → configuration for ``new_browser_record`` (400 with one detail per bad field)."""
    config = CREATE.validate(body, tenant=request.state.tenant, project=project_of(request))
    _unique_name(request, config["name"])
    return config


# Endpoints ----------------------------------------------------------------------------------------


@endpoint
async def create_browser(request: Request):
    body = await read_json(request)
    config = validate_create(request, body)
    export = telemetry_destinations.export_of(request, body.get("telemetry"))
    caps.check_sessions(request.state.tenant, project_of(request))
    record = new_browser_record(request.state.tenant, project_of(request), **config)
    if export:
        record["_otlp_export"] = export
    if record["_engine"] == "chromium":
        await engine.get().live(request.state.tenant, record)
    return ok(render(record, request.state.tenant, _base(request)), status=201)


@endpoint
async def get_browser(request: Request):
    include_deleted = request.query_params.get("include_deleted", "").lower() == "true"
    record = sessions.get_session(request, request.path_params["id_or_name"], include_deleted=include_deleted)
    return ok(render(record, request.state.tenant, _base(request)))


@endpoint
async def update_browser(request: Request):
    tenant = request.state.tenant
    record = sessions.get_session(request, request.path_params["id_or_name"])
    body = await read_json(request)
    changes = UPDATE.validate(
        body,
        creating=False,
        tenant=tenant,
        project=record["_project"],
        record=record,
        stealth=record["stealth"],
    )
    profile, save = changes.get("profile", (None, False))
    if profile is not None and record.get("profile"):
        raise conflict("a profile is already loaded in this session", code="profile_already_loaded")
    if "name" in changes:
        _unique_name(request, changes["name"], except_id=record["session_id"])
        if changes["name"]:
            record["name"] = changes["name"]
        else:
            record.pop("name", None)
    if "tags" in changes:
        record["tags"] = changes["tags"]
    if "viewport" in changes:
        record["viewport"] = changes["viewport"]
        await engine.get().resize(record)
    if profile is not None:
        record["profile"] = _profile_ref(profile)
        record["profile_save_changes"] = save
        await engine.get().load_profile(tenant, record)
    proxy = changes.get("proxy")
    if proxy is not None:
        record["proxy"] = proxy
        record.pop("proxy_id", None)
        if proxy.get("id"):
            record["proxy_id"] = proxy["id"]
    elif body.get("proxy_id") == "":
        record.pop("proxy", None)
        record.pop("proxy_id", None)
    if proxy is not None or body.get("proxy_id") == "":
        await engine.get().proxy_changed(record)
    if "categories" in changes:
        # Events due so far were captured under the old categories; the new ones apply from now.
        telemetry.catch_up(tenant, record)
        record["_categories"] = changes["categories"]
        live = engine.get().lives.get(record["session_id"])
        if live is not None and live.events is not None:
            await live.events.apply()
    sessions.touch(tenant, record)
    return ok(render(record, tenant, _base(request)))


def _listed(request: Request) -> list[dict]:
    tenant = request.state.tenant
    params = request.query_params
    status = params.get("status") or "active"
    if params.get("include_deleted", "").lower() == "true" and not params.get("status"):
        status = "all"
    if status not in STATUSES:
        raise invalid("status is not valid", status="must be active, deleted or all")
    region = params.get("region")
    if region and region not in REGIONS:
        raise invalid("region is not valid", region="must be us-east or eu-west")
    wanted_tags = {}
    for key, value in params.multi_items():
        match = re.fullmatch(r"tags\[(.+)\]", key)
        if match:
            wanted_tags[match.group(1)] = value
    query = (params.get("query") or "").strip().casefold()
    items = []
    for record in sessions.in_project(request):
        active = sessions.is_active(tenant, record)
        if (status == "active" and not active) or (status == "deleted" and active):
            continue
        if region and record["region"] != region:
            continue
        tags = record.get("tags") or {}
        if any(tags.get(k) != v for k, v in wanted_tags.items()):
            continue
        if query and not any(query in str(text).casefold() for text in _searchable(record)):
            continue
        items.append(record)
    items.sort(key=lambda r: (r["created_at"], r["session_id"]), reverse=True)
    return items


def _searchable(record: dict) -> list:
    profile, proxy, pool = record.get("profile") or {}, record.get("proxy") or {}, record.get("pool") or {}
    return [
        record.get("name") or "",
        record["session_id"],
        profile.get("name") or "",
        profile.get("id") or "",
        proxy.get("id") or "",
        record.get("proxy_id") or "",
        pool.get("name") or "",
    ]


@endpoint
async def list_browsers(request: Request):
    tenant, base = request.state.tenant, _base(request)
    return paginate(request, _listed(request), render=lambda r: render(r, tenant, base))


@endpoint
async def delete_browser(request: Request):
    record = sessions.get_session(request, request.path_params["id_or_name"])
    sessions.end(request.state.tenant, record, "deleted")
    await engine.get().close(record)
    return no_content()


@endpoint
async def control_end(request: Request):
    """``POST /_sandbox/browsers/{id}/end``: the session ends as if its VM went away (reason ``ended``)."""
    record = sessions.get_session(request, request.path_params["id_or_name"])
    sessions.end(request.state.tenant, record, "ended")
    return ok({"session_id": record["session_id"], "deleted_at": record["deleted_at"]})


@endpoint
async def control_egress(request: Request):
    """``GET /_sandbox/browsers/{id}/egress``: the requests the session's proxy served, oldest first
    (``forward_proxy``: tests and operators see the path)."""
    record = sessions.get_session(request, request.path_params["id_or_name"], include_deleted=True)
    return ok(list(record.get("_egress") or []))


# Demo data ----------------------------------------------------------------------------------------


def seed(tenant: Tenant) -> None:
    """Several sessions with telemetry history: headful, headless, pooled, one deleted; tags to filter."""
    project = tenant.default_project_id
    now = tenant.now()
    profiles = [p for p in tenant.table("profiles").values() if p.get("_project") == project]
    proxies = [
        p for p in tenant.table("proxies").values() if p.get("_project") == project and not p.get("_deleted")
    ]
    pools = [p for p in tenant.table("pools").values() if p.get("_project") == project]
    full = set(CATEGORIES) - {"screenshot"}
    specs = [
        dict(
            name="checkout-smoke",
            tags={"team": "checkout", "env": "prod"},
            stealth=True,
            timeout_seconds=MAX_TIMEOUT,
            start_url="https://shop.example.com/cart",
            telemetry=full,
            profile=profiles[0] if profiles else None,
            profile_save_changes=bool(profiles),
            _age=timedelta(hours=2, minutes=14),
        ),
        dict(
            name="search-crawler-7",
            tags={"team": "search", "env": "prod"},
            headless=True,
            timeout_seconds=MAX_TIMEOUT,
            start_url="https://news.example.org/",
            telemetry=set(OPERATIONAL) | {"network", "page"},
            proxy={"id": proxies[0]["id"], "name": proxies[0].get("name")} if proxies else None,
            _age=timedelta(minutes=48),
        ),
        dict(
            name="checkout-eu-regression",
            tags={"team": "checkout", "env": "staging"},
            region="eu-west",
            memory="16GiB",
            viewport={"width": 1440, "height": 900, "refresh_rate": 25},
            timeout_seconds=MAX_TIMEOUT,
            kiosk_mode=True,
            start_url="https://shop.example.com/de/checkout",
            telemetry=set(OPERATIONAL) | {"console", "page", "interaction"},
            _age=timedelta(minutes=25),
        ),
        dict(
            name=None,
            tags={"team": "growth"},
            headless=True,
            timeout_seconds=3600,
            telemetry=None,
            _age=timedelta(minutes=6),
        ),
    ]
    if pools and not any(r.get("pool") for r in tenant.table(sessions.TABLE).values()):
        pool = pools[0]
        specs.append(
            dict(
                name=None,
                tags={"team": "checkout", "env": "prod"},
                timeout_seconds=MAX_TIMEOUT,
                pool={"id": pool["id"], "name": pool.get("name")},
                telemetry=set(OPERATIONAL) | {"console", "network"},
                _age=timedelta(minutes=90),
            )
        )
    for spec in specs:
        age = spec.pop("_age")
        record = new_browser_record(tenant, project, **{k: v for k, v in spec.items() if v is not None})
        _backdate(tenant, record, now - age)
    gone = new_browser_record(
        tenant,
        project,
        name="login-debug",
        tags={"team": "identity", "env": "prod"},
        timeout_seconds=300,
        telemetry=full,
    )
    _backdate(tenant, gone, now - timedelta(hours=5))
    telemetry.catch_up(tenant, gone, until=now - timedelta(hours=4, minutes=50))
    sessions.end(tenant, gone, "deleted", at=now - timedelta(hours=4, minutes=50))


def _backdate(tenant: Tenant, record: dict, created: datetime) -> None:
    record["created_at"] = rfc3339(created)
    record["_last_activity"] = created
    # Demo history is generated up to now even for a real session, whose own events follow it.
    record["_history_until"] = tenant.now()
    telemetry.backdate(tenant, record, created)


routes = [
    Route("/browsers", list_browsers, methods=["GET"]),
    Route("/browsers", create_browser, methods=["POST"]),
    Route("/browsers/{id_or_name}", get_browser, methods=["GET"]),
    Route("/browsers/{id_or_name}", update_browser, methods=["PATCH"]),
    Route("/browsers/{id_or_name}", delete_browser, methods=["DELETE"]),
    Route("/_sandbox/browsers/{id_or_name}/end", control_end, methods=["POST"]),
    Route("/_sandbox/browsers/{id_or_name}/egress", control_egress, methods=["GET"]),
]
