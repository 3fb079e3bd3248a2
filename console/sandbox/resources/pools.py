"""Browser pools (spec: Browser pool; notes §7): warm, identically configured browsers to lease.

How the sandbox models a pool (choices where the notes leave room):

- ``size`` is the pool's total: available (idle, warm) plus acquired (leased) browsers.
- Filling is computed from the tenant clock when read: idle browsers grow by ``fill_rate_per_minute``
  percent of ``size`` per minute until idle + leased reaches ``size``. A pool starts empty.
- The sum of pool sizes in a project, plus the project's on-demand sessions, may not exceed the
  project's effective ``max_concurrent_sessions`` (its own cap, else the org's
  ``default_project_max_concurrent_sessions``, else the org ceiling); the sum over the whole org may not
  exceed the org ceiling. Going over answers 429 ``concurrent_sessions_limit_exceeded`` (``caps.py``).
- Acquire long-polls in real time (re-checking every 0.1 s and at once when the tenant clock moves) for
  up to ``acquire_timeout_seconds`` (default: the time to fill the whole pool at its fill rate), then
  answers 204. Every lease is a new BrowserSession in the ``browsers`` table with ``pool: {id, name}``.
- Release ends the lease (the session gets ``deleted_at``); with ``reuse`` (default) the browser goes
  back to the idle set, otherwise it is destroyed and the pool refills at its fill rate. The next lease
  of a reused browser gets a fresh session id.
- Flush destroys idle browsers only. Delete refuses (409 ``pool_in_use``) while browsers are leased,
  unless ``{"force": true}``, which ends those leases.
- Pooled browsers load their profile read-only: ``profile.save_changes`` is accepted and ignored.
- ``gpu``, ``memory`` and a ``proxy`` object do not exist on pools: sending them is a 400 field error.
- A profile, extension or proxy that is not a live record of the project is a 400 field error.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
from datetime import timedelta
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from console.sandbox.core.errors import ApiError, conflict, invalid, not_found
from console.sandbox.core.fields import Bad, Body, Context, Field, boolean, integer, is_int, one_of
from console.sandbox.core.http import (
    endpoint,
    find,
    no_content,
    ok,
    paginate,
    project_of,
    read_json,
    scoped,
    text_filter,
)
from console.sandbox.core.state import Tenant, new_id, rfc3339
from console.sandbox.resources import browsers, caps, extensions, sessions
from console.sandbox.resources import profiles as profile_store
from console.sandbox.resources.caps import ORG_MAX_CONCURRENT_SESSIONS

TABLE = "pools"
CATEGORIES = (
    "console",
    "page",
    "interaction",
    "network",
    "control",
    "connection",
    "system",
    "screenshot",
    "captcha",
)
# Operational categories are on by default when telemetry is enabled (notes §6.3).
DEFAULT_ON = frozenset({"control", "connection", "system", "captcha"})
REGIONS = ("us-east", "eu-west")
DEFAULT_FILL_RATE = 25
DEFAULT_TIMEOUT = 600
TIMEOUT_RANGE = (10, 259_200)
FILL_RATE_RANGE = (1, 100)
MAX_ACQUIRE_TIMEOUT = 3600
MAX_TAGS = 50
POLL_SECONDS = 0.1


# Browser sessions ---------------------------------------------------------------------------------
# Leases are sessions of the browsers module (notes §2); a leased session also keeps ``_pool``.


def _active(tenant: Tenant, session: dict) -> bool:
    return sessions.is_active(tenant, session)


def _end_session(tenant: Tenant, session: dict, reason: str) -> None:
    sessions.end(tenant, session, reason)


def render_session(request: Request, session: dict) -> dict:
    return browsers.render(session, request.state.tenant, str(request.base_url))


def _pool_of(session: dict) -> str | None:
    return session.get("_pool") or (session.get("pool") or {}).get("id")


def _leased(tenant: Tenant, pool: dict) -> list[dict]:
    return [
        s for s in list(tenant.table("browsers").values()) if _pool_of(s) == pool["id"] and _active(tenant, s)
    ]


# Filling ------------------------------------------------------------------------------------------


def _idle_now(tenant: Tenant, pool: dict, leased: int | None = None) -> float:
    """Warm idle browsers at the tenant's current time (fractional: the next one is on its way)."""
    config = pool["_config"]
    size = config["size"]
    if leased is None:
        leased = len(_leased(tenant, pool))
    room = max(0, size - leased)
    elapsed = max(0.0, (tenant.now() - pool["_anchor"]).total_seconds())
    per_second = size * config["fill_rate_per_minute"] / 100 / 60
    return min(float(room), pool["_idle"] + elapsed * per_second)


def _settle(tenant: Tenant, pool: dict) -> None:
    """Fix the fill computed so far, before a change (lease, release, flush, resize)."""
    pool["_idle"] = _idle_now(tenant, pool)
    pool["_anchor"] = tenant.now()


def _available(tenant: Tenant, pool: dict, leased: int | None = None) -> int:
    return math.floor(_idle_now(tenant, pool, leased) + 1e-9)


def _flush(tenant: Tenant, pool: dict) -> None:
    pool["_idle"] = 0.0
    pool["_anchor"] = tenant.now()


def profile_updated(tenant: Tenant, profile: dict) -> None:
    """Pools that follow this profile discard their idle browsers, which warm again with the new state."""
    for pool in tenant.table(TABLE).values():
        config = pool["_config"]
        if (
            not pool.get("_deleted")
            and pool.get("_project") == profile.get("_project")
            and config.get("profile_id") == profile["id"]
            and config.get("refresh_on_profile_update")
        ):
            _flush(tenant, pool)


# Rendering ----------------------------------------------------------------------------------------


def _profile_ref(tenant: Tenant, profile_id: str | None) -> dict | None:
    if not profile_id:
        return None
    profile = tenant.table("profiles").get(profile_id) or {}
    return {"id": profile_id, "name": profile.get("name")}


def _extension_refs(tenant: Tenant, ids: list[str]) -> list[dict]:
    table = tenant.table("extensions")
    return [{"id": i, "name": (table.get(i) or {}).get("name")} for i in ids]


def render(tenant: Tenant, pool: dict) -> dict:
    config = pool["_config"]
    leased = len(_leased(tenant, pool))
    shown = {
        "size": config["size"],
        "name": pool.get("name"),
        "fill_rate_per_minute": config["fill_rate_per_minute"],
        "timeout_seconds": config["timeout_seconds"],
        "stealth": config["stealth"],
        "headless": config["headless"],
        "kiosk_mode": config["kiosk_mode"],
        "profile": _profile_ref(tenant, config.get("profile_id")),
        "refresh_on_profile_update": config["refresh_on_profile_update"],
        "extensions": _extension_refs(tenant, config["extension_ids"]),
        "proxy_id": config.get("proxy_id"),
        "viewport": config.get("viewport"),
        "chrome_policy": config.get("chrome_policy"),
        "start_url": config.get("start_url"),
        "network": config.get("network"),
        "telemetry": config["telemetry"],
    }
    return {
        "id": pool["id"],
        "name": pool.get("name"),
        "region": pool["region"],
        "created_at": pool["created_at"],
        "acquired_count": leased,
        "available_count": _available(tenant, pool, leased),
        "browser_pool_config": {k: v for k, v in shown.items() if v is not None},
        "profile_id": config.get("profile_id"),
        "extension_ids": list(config["extension_ids"]),
    }


# Validation ---------------------------------------------------------------------------------------


def _live(tenant: Tenant, table: str, project: str) -> list[dict]:
    return [r for r in tenant.table(table).values() if r.get("_project") == project and not r.get("_deleted")]


def _by_ref(records: list[dict], ref) -> dict | None:
    key = (ref.get("id") or ref.get("name")) if isinstance(ref, dict) else ref
    if not isinstance(key, str) or not key:
        return None
    return next((r for r in records if r.get("id") == key), None) or next(
        (r for r in records if r.get("name") and r["name"] == key), None
    )


def telemetry_config(value, errors: dict, field: str = "telemetry") -> dict | None:
    """``{enabled, browser: {<category>: {enabled}}}`` for all nine categories, or None if invalid."""
    if value is None or value == {}:
        value = {"enabled": False}
    if not isinstance(value, dict):
        errors[field] = "must be an object with enabled and browser.<category>.enabled"
        return None
    browser = value.get("browser") or {}
    enabled = value.get("enabled", bool(browser))
    if not isinstance(enabled, bool):
        errors[f"{field}.enabled"] = "must be true or false"
        return None
    if not isinstance(browser, dict):
        errors[f"{field}.browser"] = "must map categories to {enabled: bool}"
        return None
    if not enabled and browser:
        errors[f"{field}.browser"] = "categories cannot be set while telemetry is disabled"
        return None
    categories = {c: {"enabled": enabled and c in DEFAULT_ON} for c in CATEGORIES}
    for name, setting in browser.items():
        if name not in CATEGORIES:
            errors[f"{field}.browser.{name}"] = f"unknown category; one of {', '.join(CATEGORIES)}"
            continue
        if not isinstance(setting, dict) or not isinstance(setting.get("enabled", True), bool):
            errors[f"{field}.browser.{name}"] = "must be {enabled: true|false}"
            continue
        categories[name] = {"enabled": setting.get("enabled", True)}
    return {"enabled": enabled, "browser": categories}


NAME_FORBIDDEN = re.compile(r"[/%]")


def _name(value, context: Context) -> str:
    if not isinstance(value, str) or len(value) > 255 or not value.strip() or NAME_FORBIDDEN.search(value):
        raise Bad("1 to 255 characters, without / or %")
    return value.strip()


def _profile(ref, context: Context) -> str | None:
    """The profile's id; None clears it (``null``, or ``{id: ""}``: notes §7)."""
    if ref is None or (isinstance(ref, dict) and not (ref.get("id") or ref.get("name"))):
        return None
    if not isinstance(ref, dict):
        raise Bad("must be an object with id or name")
    # save_changes is ignored, not rejected: pooled browsers load profiles read-only.
    profile = profile_store.lookup(context.tenant, context.project, ref)
    if profile is None:
        raise Bad(f"no profile {ref.get('id') or ref.get('name')!r} in this project")
    return profile["id"]


def _profile_changes(profile_id: str | None) -> dict:
    if profile_id is None:  # a pool without a profile follows none
        return {"profile_id": None, "refresh_on_profile_update": False}
    return {"profile_id": profile_id}


def _extension_ids(refs, context: Context) -> list[str]:
    if not isinstance(refs, list):
        raise Bad("must be a list of {id} or {name} objects")
    records = _live(context.tenant, "extensions", context.project)
    ids: list[str] = []
    missing = []
    for ref in refs:
        found = _by_ref(records, ref)
        if found is None:
            missing.append(ref.get("id") or ref.get("name") if isinstance(ref, dict) else ref)
        elif found["id"] not in ids:
            ids.append(found["id"])
    if missing:
        raise Bad("no such extension(s) in this project: " + ", ".join(repr(m) for m in missing))
    return ids


def _proxy_id(proxy_id, context: Context) -> str:
    if (
        not isinstance(proxy_id, str)
        or _by_ref(_live(context.tenant, "proxies", context.project), {"id": proxy_id}) is None
    ):
        raise Bad(f"no proxy {proxy_id!r} in this project")
    return proxy_id


VIEWPORT = (("width", 320, 7680, True), ("height", 240, 4320, True), ("refresh_rate", 1, 240, False))


def _viewport(viewport, context: Context) -> dict:
    if not isinstance(viewport, dict):
        raise Bad("must be an object with width, height and optional refresh_rate")
    shaped, errors = {}, {}
    for key, low, high, required in VIEWPORT:
        value = viewport.get(key)
        if value is None and not required:
            continue
        if not is_int(value) or not low <= value <= high:
            errors[f"viewport.{key}"] = f"must be an integer between {low} and {high}"
        else:
            shaped[key] = value
    if errors:
        raise Bad(errors)
    return shaped


def _chrome_policy(policy, context: Context) -> dict:
    if problem := browsers.chrome_policy_problem(policy):
        raise Bad(problem)
    return policy


def url(value, context: Context) -> str | None:
    """An http(s) URL; ``""`` is none."""
    if not isinstance(value, str):
        raise Bad("must be a URL string")
    if value == "":
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Bad("must be an http or https URL")
    return value


def _network(network, context: Context) -> dict:
    if not isinstance(network, dict) or not isinstance(network.get("private_hosts", []), list):
        raise Bad("must be {private_hosts: [host patterns or private CIDRs]}")
    return {"private_hosts": [str(h) for h in network.get("private_hosts", [])]}


def telemetry(value, context: Context) -> dict:
    errors: dict[str, str] = {}
    config = telemetry_config(value, errors)
    if errors:
        raise Bad(errors)
    return config


# A pool's create and PATCH bodies (notes §7): what changes, and a 400 naming every offending field.
POOL = Body(
    message="the pool configuration is not valid",
    refused={
        "gpu": "pools have no gpu setting",
        "memory": "pools have no memory setting",
        "proxy": "pools take proxy_id only, not a proxy object",
    },
    fields=(
        Field(
            "size",
            integer(1, ORG_MAX_CONCURRENT_SESSIONS),
            required="required: how many browsers the pool keeps warm",
        ),
        Field("name", _name, skip=(None, "")),
        Field(
            "region",
            one_of(REGIONS, "must be us-east or eu-west"),
            fixed="the region is fixed when the pool is created",
        ),
        Field("fill_rate_per_minute", integer(*FILL_RATE_RANGE)),
        Field("timeout_seconds", integer(*TIMEOUT_RANGE)),
        Field("stealth", boolean),
        Field("headless", boolean),
        Field("kiosk_mode", boolean),
        Field("refresh_on_profile_update", boolean),
        Field("profile", _profile, apply=_profile_changes),
        Field("extensions", _extension_ids, key="extension_ids"),
        Field("proxy_id", _proxy_id, clear=(None, "")),
        Field("viewport", _viewport, clear=(None, {})),
        Field("chrome_policy", _chrome_policy, clear=(None, {})),
        Field("start_url", url, clear=(None,)),
        Field("network", _network, clear=(None, {})),
        Field("telemetry", telemetry),
    ),
)


def validate(tenant: Tenant, project: str, body: dict, *, current: dict | None) -> dict:
    """A create body (``current`` None) or a PATCH body checked against ``POOL``: the changed config
    keys, or one 400 with a detail per offending field."""
    return POOL.validate(body, creating=current is None, tenant=tenant, project=project)


def _defaults(changes: dict) -> dict:
    config = {
        "size": changes["size"],
        "fill_rate_per_minute": DEFAULT_FILL_RATE,
        "timeout_seconds": DEFAULT_TIMEOUT,
        "stealth": False,
        "headless": False,
        "kiosk_mode": False,
        "profile_id": None,
        "refresh_on_profile_update": False,
        "extension_ids": [],
        "proxy_id": None,
        "viewport": None,
        "chrome_policy": None,
        "start_url": None,
        "network": None,
        "telemetry": {"enabled": False, "browser": {c: {"enabled": False} for c in CATEGORIES}},
    }
    config.update({k: v for k, v in changes.items() if k not in ("name", "region")})
    if changes.get("profile_id") and "refresh_on_profile_update" not in changes:
        config["refresh_on_profile_update"] = True  # the default when a profile is set (notes §7)
    return config


def _unique_name(tenant: Tenant, project: str, name: str, *, except_id: str | None = None) -> None:
    for pool in _live(tenant, TABLE, project):
        if (pool.get("name") or "").casefold() == name.casefold() and pool["id"] != except_id:
            raise conflict(f"a pool named {name!r} already exists in this project", code="pool_name_taken")


def create(tenant: Tenant, project: str, body: dict) -> dict:
    changes = validate(tenant, project, body, current=None)
    if changes.get("name"):
        _unique_name(tenant, project, changes["name"])
    caps.check_sessions(tenant, project, changes["size"])
    pool = {
        "id": new_id("pool"),
        "name": changes.get("name"),
        "region": changes.get("region", "us-east"),
        "created_at": rfc3339(tenant.now()),
        "_project": project,
        "_config": _defaults(changes),
        "_idle": 0.0,
        "_anchor": tenant.now(),
    }
    tenant.table(TABLE)[pool["id"]] = pool
    return pool


# Endpoints ----------------------------------------------------------------------------------------


def _pool(request: Request) -> dict:
    return find(request, TABLE, request.path_params["id_or_name"], "browser pool")


@endpoint
async def list_pools(request: Request):
    tenant = request.state.tenant
    pools = text_filter(scoped(request, TABLE), request, "name")
    region = request.query_params.get("region")
    if region:
        if region not in REGIONS:
            raise invalid("region is not valid", region="must be us-east or eu-west")
        pools = [p for p in pools if p["region"] == region]
    return paginate(request, pools, render=lambda p: render(tenant, p))


@endpoint
async def create_pool(request: Request):
    tenant = request.state.tenant
    pool = create(tenant, project_of(request), await read_json(request))
    return ok(render(tenant, pool), status=201)


@endpoint
async def get_pool(request: Request):
    return ok(render(request.state.tenant, _pool(request)))


@endpoint
async def update_pool(request: Request):
    tenant = request.state.tenant
    pool = _pool(request)
    project = project_of(request)
    body = await read_json(request)
    discard = body.pop("discard_all_idle", False)
    if not isinstance(discard, bool):
        raise invalid("discard_all_idle must be a boolean", discard_all_idle="must be true or false")
    changes = validate(tenant, project, body, current=pool["_config"])
    if changes.get("name"):
        _unique_name(tenant, project, changes["name"], except_id=pool["id"])
    if "size" in changes:
        caps.check_sessions(tenant, project, changes["size"], except_pool=pool["id"])
    _settle(tenant, pool)
    if "name" in changes:
        pool["name"] = changes.pop("name")
    pool["_config"].update(changes)
    if "profile_id" in changes and "refresh_on_profile_update" not in body:
        # Setting a profile turns refresh on by default; clearing it turns refresh off (notes §7).
        pool["_config"]["refresh_on_profile_update"] = bool(changes["profile_id"])
    pool["_idle"] = min(pool["_idle"], float(max(0, pool["_config"]["size"] - len(_leased(tenant, pool)))))
    if discard:
        # Config changes reach only newly warmed browsers, unless idle ones are discarded (notes §7).
        _flush(tenant, pool)
    return ok(render(tenant, pool))


@endpoint
async def delete_pool(request: Request):
    tenant = request.state.tenant
    pool = _pool(request)
    body = await read_json(request)
    force = body.get("force", False)
    if not isinstance(force, bool):
        raise invalid("force must be a boolean", force="must be true or false")
    leased = _leased(tenant, pool)
    if leased and not force:
        raise conflict(
            f"pool {pool.get('name') or pool['id']!r} has {len(leased)} leased browser(s); release them "
            "first, or delete with force to terminate them",
            code="pool_in_use",
        )
    for session in leased:
        _end_session(tenant, session, "pool_deleted")
    pool["_deleted"] = True
    return no_content()


def _lease_name(name, context: Context) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 255:
        raise Bad("1 to 255 characters")
    if any(s.get("name") == name for s in _live(context.tenant, "browsers", context.project)):
        raise conflict(f"an active browser session is already named {name!r}", code="name_taken")
    return name


def _tags(tags, context: Context) -> dict:
    if not isinstance(tags, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in tags.items()
    ):
        raise Bad("must map strings to strings")
    if len(tags) > MAX_TAGS:
        raise Bad(f"at most {MAX_TAGS} pairs")
    return tags


# An acquire body: how long to wait, and what the leased session gets of its own.
ACQUIRE = Body(
    message="the acquire request is not valid",
    fields=(
        Field("acquire_timeout_seconds", integer(0, MAX_ACQUIRE_TIMEOUT), skip=(None,)),
        Field("name", _lease_name, skip=(None,)),
        Field("tags", _tags, skip=(None,)),
        Field("start_url", url, skip=(None,), apply=lambda kept: {"start_url": kept} if kept else {}),
        Field("telemetry", telemetry, skip=(None,)),
    ),
)


def _acquire_options(tenant: Tenant, project: str, body: dict, pool: dict) -> tuple[float, dict]:
    lease = ACQUIRE.validate(body, tenant=tenant, project=project)
    # By default, the time to fill the pool (notes §7).
    timeout = lease.pop("acquire_timeout_seconds", 60 * 100 / pool["_config"]["fill_rate_per_minute"])
    return float(timeout), lease


def lease(tenant: Tenant, pool: dict, **overrides) -> dict:
    """Take one idle browser from the pool (the caller checked one is available)."""
    config = pool["_config"]
    project = pool["_project"]
    _settle(tenant, pool)
    pool["_idle"] = max(0.0, pool["_idle"] - 1)
    profile = tenant.table("profiles").get(config["profile_id"]) if config.get("profile_id") else None
    if profile is not None:
        profile["last_used_at"] = rfc3339(tenant.now())
    extensions = _extension_refs(tenant, config["extension_ids"])
    _mark_extensions_used(tenant, config["extension_ids"])
    proxy = None
    if config.get("proxy_id"):
        proxy = {
            "id": config["proxy_id"],
            "name": (tenant.table("proxies").get(config["proxy_id"]) or {}).get("name"),
        }
    telemetry = overrides.get("telemetry") or config["telemetry"]
    session = browsers.new_browser_record(
        tenant,
        project,
        headless=config["headless"],
        stealth=config["stealth"],
        kiosk_mode=config["kiosk_mode"],
        region=pool["region"],
        timeout_seconds=config["timeout_seconds"],
        viewport=config.get("viewport"),
        chrome_policy=config.get("chrome_policy"),
        network=config.get("network"),
        start_url=overrides.get("start_url") or config.get("start_url"),
        name=overrides.get("name"),
        tags=overrides.get("tags"),
        telemetry=_enabled_categories(telemetry),
        profile=profile,
        profile_save_changes=False,  # pooled browsers never write back to their profile
        proxy=proxy,
        extensions=extensions,
        pool={"id": pool["id"], "name": pool.get("name")},
    )
    session["_pool"] = pool["id"]
    return session


def _enabled_categories(telemetry: dict) -> set[str] | None:
    if not telemetry.get("enabled"):
        return None
    return {name for name, setting in telemetry["browser"].items() if setting.get("enabled")}


def _mark_extensions_used(tenant: Tenant, ids: list[str]) -> None:
    for extension_id in ids:
        extensions.mark_used(tenant, extension_id)


@endpoint
async def acquire(request: Request):
    tenant: Tenant = request.state.tenant
    pool = _pool(request)
    timeout, overrides = _acquire_options(tenant, project_of(request), await read_json(request), pool)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    clock = tenant.topic("clock").subscribe()
    try:
        while True:
            if pool.get("_deleted"):
                raise not_found("browser pool", pool["id"])
            if _available(tenant, pool) >= 1:
                return ok(render_session(request, lease(tenant, pool, **overrides)))
            remaining = deadline - loop.time()
            if remaining <= 0:
                return Response(status_code=204, headers={"X-Request-Id": request.state.request_id})
            if await request.is_disconnected():
                return Response(status_code=204)
            # Real time fills the pool too, so re-check often; a clock move wakes us at once.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(clock.get(), timeout=min(POLL_SECONDS, remaining))
    finally:
        tenant.topic("clock").unsubscribe(clock)


def _leased_id(session_id, context: Context) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise Bad("required: the session_id returned by acquire")
    return session_id


RELEASE = Body(
    message="the release request is not valid",
    fields=(Field("session_id", _leased_id, always=True), Field("reuse", boolean, default=True)),
)


@endpoint
async def release(request: Request):
    tenant: Tenant = request.state.tenant
    pool = _pool(request)
    body = RELEASE.validate(await read_json(request))
    session_id, reuse = body["session_id"], body["reuse"]
    session = next((s for s in _leased(tenant, pool) if s["session_id"] == session_id), None)
    if session is None:
        raise not_found(f"leased browser of pool {pool.get('name') or pool['id']!r}", session_id)
    _settle(tenant, pool)
    _end_session(tenant, session, "released")
    if reuse:
        pool["_idle"] += 1
    return no_content()


@endpoint
async def flush(request: Request):
    tenant: Tenant = request.state.tenant
    _flush(tenant, _pool(request))
    return no_content()


# Demo data ----------------------------------------------------------------------------------------

DEMO_POOLS = [
    # name, size, fill rate, options, minutes since creation, leases (long timeouts keep the demo's
    # leases alive for a day's demo; the inactivity timeout runs on the tenant clock)
    (
        "checkout-warm",
        10,
        25,
        {
            "profile": {"name": "checkout-bot"},
            "stealth": True,
            "timeout_seconds": 14_400,
            "start_url": "https://shop.example.com/cart",
            "telemetry": {"enabled": True, "browser": {"console": {"enabled": True}}},
        },
        120,
        3,
    ),
    (
        "scraper-headless",
        24,
        50,
        {
            "headless": True,
            "stealth": True,
            "timeout_seconds": 259_200,
            "viewport": {"width": 1280, "height": 800, "refresh_rate": 60},
            "chrome_policy": {"BlockThirdPartyCookies": True, "DefaultNotificationsSetting": 2},
        },
        1,
        6,
    ),
    (
        "support-inbox",
        4,
        10,
        {
            "profile": {"name": "support-gmail"},
            "kiosk_mode": True,
            "timeout_seconds": 86_400,
            "viewport": {"width": 1440, "height": 900, "refresh_rate": 25},
        },
        600,
        1,
    ),
    ("qa-smoke", 3, 100, {"timeout_seconds": 300, "start_url": "https://staging.example.com/"}, 0, 0),
]


def seed(tenant: Tenant) -> None:
    project = tenant.default_project_id
    now = tenant.now()
    proxies = _live(tenant, "proxies", project)
    extensions = _live(tenant, "extensions", project)
    for name, size, rate, options, minutes_ago, leases in DEMO_POOLS:
        body = {"name": name, "size": size, "fill_rate_per_minute": rate, **options}
        if name == "scraper-headless" and proxies:
            body["proxy_id"] = proxies[0]["id"]
        if name == "checkout-warm" and extensions:
            body["extensions"] = [{"id": extensions[0]["id"]}]
        try:
            pool = create(tenant, project, body)
        except ApiError:  # e.g. other demo sessions already use the project's cap
            continue
        # As if created ``minutes_ago`` and filling since; a young pool is still warming up.
        pool["created_at"] = rfc3339(now - timedelta(minutes=minutes_ago))
        pool["_idle"] = min(float(size), size * rate / 100 * minutes_ago)
        for n in range(min(leases, math.floor(pool["_idle"]))):
            lease(tenant, pool, name=f"{name}-{n + 1}", tags={"team": "demo", "pool": name})


routes = [
    Route("/browser_pools", list_pools, methods=["GET"]),
    Route("/browser_pools", create_pool, methods=["POST"]),
    Route("/browser_pools/{id_or_name}", get_pool, methods=["GET"]),
    Route("/browser_pools/{id_or_name}", update_pool, methods=["PATCH"]),
    Route("/browser_pools/{id_or_name}", delete_pool, methods=["DELETE"]),
    Route("/browser_pools/{id_or_name}/acquire", acquire, methods=["POST"]),
    Route("/browser_pools/{id_or_name}/release", release, methods=["POST"]),
    Route("/browser_pools/{id_or_name}/flush", flush, methods=["POST"]),
]
