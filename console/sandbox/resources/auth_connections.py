"""Auth connections (managed auth) and their login flows (notes §9; plan limits from §1).

A connection keeps a profile logged in to one domain. Its login flow runs against the scripted site of
its domain (``auth_sites``): ``POST /login`` starts DISCOVERING, the site's pages ask for fields and
choices (AWAITING_INPUT), wait for a push approval (AWAITING_EXTERNAL_ACTION), and every accepted submit
spends a moment in SUBMITTING before the next page. A linked credential (or values saved by an earlier
login) fills pages by itself, so a credential with a TOTP secret logs in without a human.

Everything time-based is computed from the tenant clock when a connection is read (``settle``): step
transitions (``DISCOVER_SECONDS`` / ``SUBMIT_SECONDS`` after the action, i.e. a short real delay or a
clock advance), push approvals, flow expiry at ``flow_expires_at``, and health checks every
``health_check_interval`` seconds with automatic re-auth. The events stream wakes itself for the next
transition, on clock moves and on the connection's topic ``auth:<id>``.

Under the Chromium engine a flow also runs in a real browser session (``login_browser``): created by
``start_flow``, told of every accepted submit and push approval (``login_browser.submitted``), ended by
``_finish``. The state machine here stays the source of truth; the browser only mirrors it.

Choices the notes leave open (documented in docs/sandbox-sites.md):
- a submit outside an IN_PROGRESS flow, or while the flow is not waiting for input, is 409
  ``flow_not_awaiting_input``; a stale ``interaction_id`` is 409 ``interaction_id_mismatch``;
- a new login supersedes a flow still in progress (the old one ends CANCELED);
- ``last_auth_check_at`` (and its alias ``last_auth_at``) move only with health checks;
- values submitted by a human are kept (privately) only when ``save_credentials`` is on and the login
  succeeds; one-time codes never are.
"""

from __future__ import annotations

import asyncio
import html
import re
from datetime import datetime, timedelta

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse
from starlette.routing import Route

from console.sandbox.core.errors import ApiError, conflict, invalid, not_found
from console.sandbox.core.http import (
    endpoint,
    no_content,
    ok,
    paginate,
    project_of,
    public,
    read_json,
    scoped,
    sse_response,
    text_filter,
)
from console.sandbox.core.state import Tenant, new_id, registry, rfc3339
from console.sandbox.resources import credentials, login_browser, profiles, projects, sessions
from console.sandbox.sites.auth_sites import DONE, PageSpec, Site, check_value, reauth_blocker, site_for

TABLE = "auth_connections"
DISCOVER_SECONDS = 0.6
SUBMIT_SECONDS = 0.3
FLOW_TTL_SECONDS = 15 * 60
DEFAULT_INTERVAL = 3600
MAX_INTERVAL = 86400
MAX_SETTLE_STEPS = 2000
MAX_TIMELINE = 1000
TERMINAL = frozenset({"SUCCESS", "FAILED", "EXPIRED", "CANCELED"})
DOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$"
)
PROFILE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,255}$")
BOOL_FIELDS = ("save_credentials", "health_checks", "auto_reauth", "record_session")
# What a paused flow asks of the user, and how a flow ended.
PAUSE_FIELDS = (
    "interaction_id",
    "fields",
    "choices",
    "discovered_fields",
    "mfa_options",
    "sign_in_options",
    "pending_sso_buttons",
    "external_action_message",
    "website_error",
)
OUTCOME_FIELDS = ("error_code", "error_message", "post_login_url")
FLOW_FIELDS = (
    "flow_type",
    "flow_status",
    "flow_step",
    "flow_expires_at",
    "hosted_url",
    "live_view_url",
    "browser_session_id",
    *PAUSE_FIELDS,
    *OUTCOME_FIELDS,
    "sso_provider",
)
STATE_FIELDS = ("flow_type", *PAUSE_FIELDS, *OUTCOME_FIELDS, "live_view_url", "hosted_url")
ACTIONS = (
    "field_values",
    "selected_choice_id",
    "fields",
    "mfa_option_id",
    "sign_in_option_id",
    "sso_provider",
    "sso_button_selector",
)
TIMELINE_TYPES = ("login", "reauth", "health_check")
LEGACY_TYPES = {
    "identifier": "email",
    "password": "password",
    "code": "code",
    "totp_code": "totp",
    "totp_secret": "text",
    "text": "text",
}
# An external provider's item (1Password) is not reachable from the sandbox: it acts as these values.
EXTERNAL_VALUES = {"username": "provider-user@example.com", "password": "provider-item-password"}
EXTERNAL_TOTP = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"


# TOTP (RFC 6238) ---------------------------------------------------------------------------------


def totp(secret: str, at: datetime) -> str:
    """The current code of a base32 secret (the credential vault's RFC 6238)."""
    return credentials.totp_code(secret, at)[0]


# Lookups -----------------------------------------------------------------------------------------


def _connection(request: Request, connection_id: str) -> dict:
    for record in scoped(request, TABLE):
        if record["id"] == connection_id:
            return record
    raise not_found("auth connection", connection_id)


def _vault_credential(tenant: Tenant, project: str, name: str) -> dict | None:
    for record in tenant.table("credentials").values():
        if record.get("_project") == project and not record.get("_deleted") and record.get("name") == name:
            return record
    return None


def _ensure_profile(tenant: Tenant, project: str, name: str) -> dict:
    """The project's profile of that name, created when it does not exist (notes §9)."""
    for profile in tenant.table("profiles").values():
        if profile.get("_project") != project or profile.get("_deleted"):
            continue
        if (profile.get("name") or "").casefold() == name.casefold():
            return profile
    return profiles.new_profile(tenant, project, name)


def _stored_values(tenant: Tenant, record: dict) -> tuple[dict, str | None, str | None]:
    """What a flow can fill in by itself: (values by key, TOTP secret, where they come from)."""
    credential = record.get("credential") or {}
    if credential.get("provider"):
        return dict(EXTERNAL_VALUES), EXTERNAL_TOTP, "external_credential"
    values = dict(record["_saved_values"])
    secret = None
    source = "cua_has_credential" if values else None
    if credential.get("name"):
        vault = _vault_credential(tenant, record["_project"], credential["name"])
        if vault is not None:
            values.update(vault.get("_values") or {})
            secret = vault.get("_totp_secret")
            source = "has_credential"
    # Vaults name the login "username", "email" or "login"; the sites read "username".
    if not values.get("username"):
        values["username"] = values.get("email") or values.get("login") or ""
    return {k: v for k, v in values.items() if v}, secret, source


def capability(tenant: Tenant, record: dict) -> tuple[bool, str]:
    """``can_reauth`` and ``can_reauth_reason``, from the linked credential and the site's needs."""
    values, secret, source = _stored_values(tenant, record)
    if source == "external_credential":
        return True, source
    if not record["_authenticated_once"]:
        return False, "no_prior_successful_login"
    blocker = reauth_blocker(site_for(record["domain"]), values, secret is not None)
    if blocker or source is None:
        return False, blocker or "no_credential"
    return True, source


# Rendering ---------------------------------------------------------------------------------------


def _absolute(request: Request | None, url: str | None) -> str | None:
    if url and url.startswith("/") and request is not None:
        return str(request.base_url).rstrip("/") + url
    return url


def render(request: Request | None, record: dict) -> dict:
    body = public(record)
    for key in ("hosted_url", "live_view_url"):
        body[key] = _absolute(request, body.get(key))
    return body


def state_frame(request: Request | None, record: dict, at: datetime) -> dict:
    """A ``managed_auth_state`` event of the stream (notes §9, SSE)."""
    frame = {
        "event": "managed_auth_state",
        "flow_status": record.get("flow_status"),
        "flow_step": record.get("flow_step"),
        "timestamp": rfc3339(at),
    }
    body = render(request, record)
    for key in STATE_FIELDS:
        if body.get(key) is not None:
            frame[key] = body[key]
    return frame


def _present(**fields) -> dict:
    """The fields that have a value: the service leaves out what a page does not say."""
    return {key: value for key, value in fields.items() if value is not None}


def _page_view(site: Site, page: PageSpec, rejected: tuple[str, ...]) -> dict:
    fields = [
        _present(
            id=spec.id,
            type=spec.type,
            ref=spec.ref,
            reason="rejected" if spec.id in rejected else "missing",
            label=spec.label,
            hint=spec.hint,
            required=spec.required,
            observed_selector=f"#{spec.id}",
        )
        for spec in page.fields
    ]
    choices = [
        _present(
            id=spec.id,
            type=spec.type,
            label=spec.label,
            description=spec.description,
            masked_destination=spec.masked_destination,
            mfa_type=spec.mfa_type,
            observed_selector=f"//button[@data-choice='{spec.id}']",
        )
        for spec in page.choices
    ]
    discovered = [
        _present(
            name=spec.id,
            type=LEGACY_TYPES[spec.type],
            label=spec.label,
            selector=f"#{spec.id}",
            placeholder=spec.placeholder,
            required=spec.required,
            hint=spec.hint,
            linked_mfa_type=spec.linked_mfa_type,
        )
        for spec in page.fields
    ]
    mfa_options = [
        _present(type=c.mfa_type, label=c.label, target=c.masked_destination, description=c.description)
        for c in page.choices
        if c.type == "mfa_method"
    ]
    sign_in_options = [
        {k: v for k, v in {"id": c.id, "label": c.label, "description": c.description}.items() if v}
        for c in page.choices
        if c.type in ("account", "sign_in_method")
    ]
    sso_buttons = [
        {"provider": c.provider, "label": c.label, "selector": f"//button[@data-choice='{c.id}']"}
        for c in page.choices
        if c.type == "sso_provider"
    ]
    return {
        "fields": None if site.legacy_only else fields,
        "choices": None if site.legacy_only else choices,
        "discovered_fields": discovered,
        "mfa_options": mfa_options,
        "sign_in_options": sign_in_options,
        "pending_sso_buttons": sso_buttons,
    }


# The login state machine -------------------------------------------------------------------------


def _timeline_entry(record: dict, entry_id: str | None) -> dict | None:
    return next((e for e in record["_timeline"] if e["id"] == entry_id), None)


def _add_timeline(record: dict, entry: dict) -> dict:
    entry = {"id": new_id("evt"), **entry}
    record["_timeline"].append(entry)
    del record["_timeline"][:-MAX_TIMELINE]
    return entry


def _touch_flow_entry(record: dict, at: datetime, **changes) -> None:
    flow = record.get("_flow") or {}
    entry = _timeline_entry(record, flow.get("timeline_id"))
    if entry is not None:
        entry.update(_present(**changes), updated_at=rfc3339(at))


def start_flow(
    tenant: Tenant,
    record: dict,
    at: datetime,
    *,
    flow_type: str,
    ttl: float = FLOW_TTL_SECONDS,
    record_session: bool | None = None,
) -> None:
    if record.get("flow_status") == "IN_PROGRESS":
        _finish(tenant, record, at, "CANCELED", "superseded", "A newer login replaced this flow.")
    recording = record["record_session"] if record_session is None else record_session
    # A real browser session under the Chromium engine (login_browser); none under the simulated one.
    session = login_browser.open_for_flow(tenant, record, at, ttl, recording, _settle_and_publish)
    session_id = session["session_id"] if session is not None else new_id("bs")
    entry = _add_timeline(
        record,
        {
            "type": "login" if flow_type == "LOGIN" else "reauth",
            "status": "IN_PROGRESS",
            "step": "DISCOVERING",
            "timestamp": rfc3339(at),
            "browser_session_id": session_id,
            "updated_at": rfc3339(at),
        },
    )
    record["_flow"] = {
        "page": None,
        "next": ("discover",),
        "due": at + timedelta(seconds=DISCOVER_SECONDS),
        "expires": at + timedelta(seconds=ttl),
        "values": {},
        "auto_blocked": False,
        "timeline_id": entry["id"],
        "record_session": recording,
    }
    if session is not None:
        session["name"] = f"login {record['domain']} {entry['id']}"
    live_view = f"/_hosted/live/{session_id}" if session is None else login_browser.live_view_path(session)

    record.update({key: None for key in FLOW_FIELDS})
    record.update(
        flow_type=flow_type,
        flow_status="IN_PROGRESS",
        flow_step="DISCOVERING",
        flow_expires_at=rfc3339(at + timedelta(seconds=ttl)),
        hosted_url=f"/_hosted/auth/{record['id']}",
        live_view_url=live_view,
        browser_session_id=session_id,
    )


def _enter_page(tenant: Tenant, record: dict, name: str, at: datetime, rejected=(), website_error=None):
    site = site_for(record["domain"])
    page = site.pages[name]
    flow = record["_flow"]
    flow.update(page=name, due=None, next=None)
    step = "AWAITING_EXTERNAL_ACTION" if page.external_message else "AWAITING_INPUT"
    if page.external_message:
        flow.update(due=at + timedelta(seconds=page.approve_after), next=("approve",))
    record.update(_page_view(site, page, tuple(rejected)))
    record.update(
        flow_step=step,
        interaction_id=new_id("int", 16),
        external_action_message=page.external_message,
        website_error=website_error,
    )
    _touch_flow_entry(record, at, step=step, website_error=website_error)
    if step == "AWAITING_INPUT" and not rejected and not flow["auto_blocked"]:
        action = _auto_action(tenant, record, page, at)
        if action is not None:
            _submit(tenant, record, action, at, auto=True)


def _auto_action(tenant: Tenant, record: dict, page: PageSpec, at: datetime):
    values, secret, source = _stored_values(tenant, record)
    if source is None and secret is None:
        return None
    if page.fields:
        filled = {}
        for spec in page.fields:
            if spec.type == "totp_code":
                value = totp(secret, at) if secret else None
            elif spec.type == "code":
                value = None
            else:
                value = values.get(spec.ref)
            if value:
                filled[spec.id] = value
            elif spec.required:
                filled = None
                break
        if filled is not None:
            return ("fields", filled)
    if secret:
        choice = next((c for c in page.choices if c.mfa_type == "totp"), None)
        if choice is not None:
            return ("choice", choice.id)
    return None


def _submit(tenant: Tenant, record: dict, action: tuple[str, object], at: datetime, *, auto: bool = False):
    site = site_for(record["domain"])
    flow = record["_flow"]
    page = site.pages[flow["page"]]
    kind, payload = action
    if kind == "choice":
        choice = next(c for c in page.choices if c.id == payload)
        if choice.type == "sso_provider":
            record["sso_provider"] = choice.provider
        following = ("page", choice.next) if choice.next != DONE else ("done",)
    else:
        errors = {}
        for spec in page.fields:
            message = check_value(spec, str(payload.get(spec.id, "")))
            if message:
                errors[spec.id] = message
        if errors:
            following = ("page", flow["page"], tuple(errors), next(iter(errors.values())))
            flow["auto_blocked"] = flow["auto_blocked"] or auto
        else:
            if not auto:
                for spec in page.fields:
                    if spec.type in ("identifier", "password", "text") and payload.get(spec.id):
                        flow["values"][spec.ref] = payload[spec.id]
            following = ("page", page.next) if page.next != DONE else ("done",)
    login_browser.submitted(record, flow["page"], action)
    flow.update(next=following, due=at + timedelta(seconds=SUBMIT_SECONDS))
    record.update({key: None for key in PAUSE_FIELDS})
    record["flow_step"] = "SUBMITTING"
    _touch_flow_entry(record, at, step="SUBMITTING")


def _advance_flow(tenant: Tenant, record: dict, at: datetime) -> None:
    flow = record["_flow"]
    following = flow["next"]
    site = site_for(record["domain"])
    match following[0]:
        case "discover":
            if site.fail:
                _finish(tenant, record, at, "FAILED", *site.fail)
            else:
                _enter_page(tenant, record, site.start, at)
        case "page":
            rejected = following[2] if len(following) > 2 else ()
            error = following[3] if len(following) > 3 else None
            _enter_page(tenant, record, following[1], at, rejected, error)
        case "approve":
            page = site.pages[flow["page"]]
            record.update({key: None for key in PAUSE_FIELDS})
            record["flow_step"] = "SUBMITTING"
            nxt = ("page", page.approve_next) if page.approve_next != DONE else ("done",)
            flow.update(next=nxt, due=at + timedelta(seconds=SUBMIT_SECONDS))
            login_browser.submitted(record, flow["page"], ("approve", None))
            _touch_flow_entry(record, at, step="SUBMITTING")
        case "done":
            _succeed(tenant, record, at)


def _succeed(tenant: Tenant, record: dict, at: datetime) -> None:
    flow = record["_flow"]
    site = site_for(record["domain"])
    if record["save_credentials"]:
        record["_saved_values"].update(flow["values"])
    record.update(
        status="AUTHENTICATED",
        post_login_url=site.post_login_url,
        _session_expires=at + timedelta(hours=site.session_hours),
        _authenticated_once=True,
    )
    if record["health_checks"]:
        record["_next_check"] = at + timedelta(seconds=record["health_check_interval"])
    profile = tenant.table("profiles").get(record.get("_profile_id") or "")
    if profile is not None:
        profile.update(last_used_at=rfc3339(at), updated_at=rfc3339(at))
    _finish(tenant, record, at, "SUCCESS")


def _finish(tenant, record: dict, at: datetime, status: str, error_code=None, error_message=None) -> None:
    flow = record["_flow"]
    session_id = record.get("browser_session_id")
    record.update({key: None for key in PAUSE_FIELDS})
    record.update(
        flow_status=status,
        error_code=error_code,
        error_message=error_message,
        hosted_url=None,
        live_view_url=None,
        browser_session_id=None,
    )
    if status == "SUCCESS":
        record["flow_step"] = "COMPLETED"
    step = {"SUCCESS": "COMPLETED", "EXPIRED": "EXPIRED"}.get(status, record["flow_step"])
    _touch_flow_entry(
        record, at, status=status, step=step, error_code=error_code, error_message=error_message
    )
    # The flow's browser session (real engine) ends with it; its replay joins the timeline entry.
    _touch_flow_entry(record, at, **login_browser.flow_ended(tenant, session_id, at))
    flow.update(due=None, next=None, values={})


def _health_check(tenant: Tenant, record: dict, at: datetime) -> None:
    interval = timedelta(seconds=record["health_check_interval"])
    record["_next_check"] = at + interval
    if record.get("flow_status") == "IN_PROGRESS":
        return
    previous = record["status"]
    expired = record["_session_expires"] is None or at >= record["_session_expires"]
    found = "NEEDS_AUTH" if expired else "AUTHENTICATED"
    _add_timeline(
        record,
        {"type": "health_check", "status": found, "previous_status": previous, "timestamp": rfc3339(at)},
    )
    record.update(status=found, last_auth_check_at=rfc3339(at), last_auth_at=rfc3339(at))
    if found == "NEEDS_AUTH" and previous == "AUTHENTICATED" and record.get("auto_reauth", True):
        can, _ = capability(tenant, record)
        if can:
            start_flow(tenant, record, at, flow_type="REAUTH")


def _next_due(record: dict) -> tuple[datetime, int, str] | None:
    candidates = []
    flow = record.get("_flow")
    if record.get("flow_status") == "IN_PROGRESS":
        if flow["due"] is not None and flow["due"] < flow["expires"]:
            candidates.append((flow["due"], 0, "flow"))
        candidates.append((flow["expires"], 1, "expire"))
    if record["health_checks"] and record["_next_check"] is not None:
        candidates.append((record["_next_check"], 2, "check"))
    return min(candidates) if candidates else None


def settle(tenant: Tenant, record: dict, until: datetime | None = None) -> bool:
    """Apply every transition due by ``until`` (default: now on the tenant clock), oldest first."""
    until = until or tenant.now()
    interval = timedelta(seconds=record["health_check_interval"])
    if record["health_checks"] and record["_next_check"] is not None:
        # A clock moved by months: keep the last checks only, rather than thousands of them.
        backlog = (until - record["_next_check"]) // interval
        if backlog > 200:
            record["_next_check"] += interval * (backlog - 200)
    changed = False
    for _ in range(MAX_SETTLE_STEPS):
        due = _next_due(record)
        if due is None or due[0] > until:
            break
        at, _, kind = due
        if kind == "flow":
            _advance_flow(tenant, record, at)
        elif kind == "expire":
            _finish(tenant, record, at, "EXPIRED")
        else:
            _health_check(tenant, record, at)
        changed = True
    can, reason = capability(tenant, record)
    record.update(can_reauth=can, can_reauth_reason=reason)
    return changed


def _publish(tenant: Tenant, record: dict) -> None:
    tenant.topic(f"auth:{record['id']}").publish(state_frame(None, record, tenant.now()))


def _settle_and_publish(tenant: Tenant, record: dict) -> None:
    """The login browser's driver settles its flow as time passes (``login_browser.open_for_flow``)."""
    if settle(tenant, record):
        _publish(tenant, record)


# Validation --------------------------------------------------------------------------------------


def _check_domain(value, errors: dict, name: str = "domain") -> str | None:
    if not isinstance(value, str) or not value.strip():
        errors[name] = "required: the domain to keep logged in, such as app.example.com"
        return None
    value = value.strip().lower().rstrip(".")
    if not DOMAIN.match(value):
        errors[name] = "a bare host name such as app.example.com (no scheme, path or port)"
        return None
    return value


def _check_fields(body: dict, errors: dict, tenant: Tenant, project: str) -> dict:
    """The settable fields present in ``body`` (create and PATCH share them), validated."""
    fields: dict = {}
    if "login_url" in body:
        url = body["login_url"]
        if url in (None, ""):
            fields["login_url"] = None
        elif not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url) or len(url) > 2048:
            errors["login_url"] = "an http(s) URL, such as https://app.example.com/login"
        else:
            fields["login_url"] = url
    if "allowed_domains" in body:
        items = body["allowed_domains"]
        if items is None:
            fields["allowed_domains"] = []
        elif not isinstance(items, list) or not all(isinstance(d, str) for d in items):
            errors["allowed_domains"] = "a list of host names"
        else:
            cleaned = []
            for item in items:
                domain = _check_domain(item, errors, "allowed_domains")
                if domain and domain not in cleaned:
                    cleaned.append(domain)
            if "allowed_domains" not in errors:
                fields["allowed_domains"] = cleaned
    if "credential" in body:
        fields["credential"] = _check_credential(body["credential"], errors, tenant, project)
    for name in BOOL_FIELDS:
        if name in body:
            if not isinstance(body[name], bool):
                errors[name] = "true or false"
            else:
                fields[name] = body[name]
    if "health_check_interval" in body:
        value = body["health_check_interval"]
        floor = projects.org_limits(tenant)["min_health_check_interval_seconds"]
        if not isinstance(value, int) or isinstance(value, bool):
            errors["health_check_interval"] = "a whole number of seconds"
        elif value < floor:
            errors["health_check_interval"] = (
                f"at least {floor} seconds (your plan's minimum health check interval)"
            )
        elif value > MAX_INTERVAL:
            errors["health_check_interval"] = f"at most {MAX_INTERVAL} seconds (24 hours)"
        else:
            fields["health_check_interval"] = value
    if "browser" in body:
        if body["browser"] is not None and not isinstance(body["browser"], dict):
            errors["browser"] = "an object: stealth, proxy, telemetry"
        else:
            fields["browser"] = body["browser"]
    if "proxy" in body:  # deprecated: browser.proxy
        proxy = body["proxy"]
        if proxy is not None and not (isinstance(proxy, dict) and (proxy.get("id") or proxy.get("name"))):
            errors["proxy"] = "an object with id or name (deprecated: use browser.proxy)"
        else:
            fields["proxy_id"] = (proxy or {}).get("id") or (proxy or {}).get("name")
    if "browser_telemetry" in body:  # deprecated: browser.telemetry
        fields["browser_telemetry"] = body["browser_telemetry"]
    return fields


def _check_credential(value, errors: dict, tenant: Tenant, project: str) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        errors["credential"] = "an object: {name}, {provider, path} or {provider, auto: true}"
        return None
    if value.get("provider"):
        provider = value["provider"]
        if not isinstance(provider, str):
            errors["credential.provider"] = "the name of a credential provider"
        elif value.get("auto") is True:
            return {"provider": provider, "auto": True}
        elif isinstance(value.get("path"), str) and value["path"].strip():
            return {"provider": provider, "path": value["path"].strip()}
        else:
            errors["credential.path"] = "the item's path in the provider, as Vault/Item (or auto: true)"
        return None
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        errors["credential.name"] = "the name of a credential in this project"
        return None
    if _vault_credential(tenant, project, name.strip()) is None:
        errors["credential.name"] = f"there is no credential named {name.strip()!r} in this project"
        return None
    return {"name": name.strip()}


def _raise(errors: dict) -> None:
    if errors:
        fields = ", ".join(errors)
        raise invalid(f"the auth connection is not valid: check {fields}", **errors)


# Endpoints ---------------------------------------------------------------------------------------


def new_connection(tenant: Tenant, project: str, body: dict, at: datetime) -> dict:
    """A connection from a validated create body (also used by the demo seed)."""
    profile = _ensure_profile(tenant, project, body["profile_name"])
    interval = body.get("health_check_interval") or max(
        DEFAULT_INTERVAL, projects.org_limits(tenant)["min_health_check_interval_seconds"]
    )
    health_checks = body.get("health_checks", True)
    record = {
        "id": new_id("mauth"),
        "domain": body["domain"],
        "profile_name": profile["name"],
        "status": "NEEDS_AUTH",
        "save_credentials": body.get("save_credentials", True),
        "record_session": body.get("record_session", False),
        "allowed_domains": body.get("allowed_domains") or [],
        "login_url": body.get("login_url"),
        "credential": body.get("credential"),
        "browser": body.get("browser") or {"stealth": True},
        "auto_reauth": body.get("auto_reauth", True),
        "health_checks": health_checks,
        "health_check_interval": interval,
        "last_auth_check_at": None,
        "last_auth_at": None,
        "can_reauth": False,
        "can_reauth_reason": "no_prior_successful_login",
        **{key: None for key in FLOW_FIELDS},
        "_project": project,
        "_profile_id": profile["id"],
        "_timeline": [],
        "_flow": None,
        "_next_check": at + timedelta(seconds=interval) if health_checks else None,
        "_session_expires": None,
        "_saved_values": {},
        "_authenticated_once": False,
    }
    for deprecated in ("proxy_id", "browser_telemetry"):
        if body.get(deprecated) is not None:
            record[deprecated] = body[deprecated]
    tenant.table(TABLE)[record["id"]] = record
    settle(tenant, record, at)
    return record


@endpoint
async def list_connections(request: Request):
    tenant = request.state.tenant
    items = scoped(request, TABLE)
    for record in items:
        settle(tenant, record)
    domain = (request.query_params.get("domain") or "").strip().lower()
    if domain:
        items = [r for r in items if r["domain"] == domain]
    profile = (request.query_params.get("profile_name") or "").strip().casefold()
    if profile:
        items = [r for r in items if r["profile_name"].casefold() == profile]
    items = text_filter(items, request, "domain", "profile_name")
    return paginate(request, items, render=lambda r: render(request, r))


@endpoint
async def create_connection(request: Request):
    tenant: Tenant = request.state.tenant
    project = project_of(request)
    body = await read_json(request)
    errors: dict = {}
    domain = _check_domain(body.get("domain"), errors)
    profile_name = body.get("profile_name")
    if not isinstance(profile_name, str) or not profile_name.strip():
        errors["profile_name"] = "required: the profile to keep logged in (created if it does not exist)"
    elif not PROFILE_NAME.match(profile_name.strip()):
        errors["profile_name"] = "1 to 255 characters: letters, digits, dot, underscore or hyphen"
    fields = _check_fields(body, errors, tenant, project)
    _raise(errors)
    profile_name = profile_name.strip()
    for record in scoped(request, TABLE):
        if record["domain"] == domain and record["profile_name"].casefold() == profile_name.casefold():
            raise conflict(
                f"an auth connection for profile {profile_name!r} and domain {domain!r} already exists "
                f"({record['id']})",
                code="auth_connection_exists",
            )
    limits = projects.org_limits(tenant)
    if (
        limits["max_auth_connections"] is not None
        and limits["auth_connections_used"] >= limits["max_auth_connections"]
    ):
        raise ApiError(
            403,
            "insufficient_plan",
            f"your plan allows {limits['max_auth_connections']} auth connections and all are in use; "
            "delete one or upgrade the plan",
        )
    record = new_connection(
        tenant, project, {**fields, "domain": domain, "profile_name": profile_name}, tenant.now()
    )
    return ok(render(request, record), status=201)


@endpoint
async def get_connection(request: Request):
    record = _connection(request, request.path_params["id"])
    if settle(request.state.tenant, record):
        _publish(request.state.tenant, record)
    return ok(render(request, record))


@endpoint
async def update_connection(request: Request):
    tenant: Tenant = request.state.tenant
    record = _connection(request, request.path_params["id"])
    body = await read_json(request)
    errors: dict = {}
    for fixed in ("domain", "profile_name"):
        if fixed in body and str(body[fixed]).strip().lower() != record[fixed].lower():
            errors[fixed] = f"cannot be changed; create another auth connection for another {fixed}"
    fields = _check_fields(body, errors, tenant, record["_project"])
    _raise(errors)
    settle(tenant, record)
    record.update(fields)
    if "health_checks" in fields or "health_check_interval" in fields:
        interval = timedelta(seconds=record["health_check_interval"])
        record["_next_check"] = tenant.now() + interval if record["health_checks"] else None
    settle(tenant, record)
    return ok(render(request, record))


@endpoint
async def delete_connection(request: Request):
    tenant: Tenant = request.state.tenant
    record = _connection(request, request.path_params["id"])
    settle(tenant, record)
    if record.get("flow_status") == "IN_PROGRESS":
        _finish(
            tenant, record, tenant.now(), "CANCELED", "connection_deleted", "The auth connection was deleted."
        )
        _publish(tenant, record)
    del tenant.table(TABLE)[record["id"]]
    return no_content()


@endpoint
async def login(request: Request):
    tenant: Tenant = request.state.tenant
    record = _connection(request, request.path_params["id"])
    body = await read_json(request)
    errors = {}
    if "record_session" in body and not isinstance(body["record_session"], bool):
        errors["record_session"] = "true or false"
    if body.get("browser") is not None and not isinstance(body["browser"], dict):
        errors["browser"] = "an object: stealth, proxy, telemetry"
    _raise(errors)
    settle(tenant, record)
    can, _ = capability(tenant, record)
    flow_type = "REAUTH" if can and record["_authenticated_once"] else "LOGIN"
    start_flow(tenant, record, tenant.now(), flow_type=flow_type, record_session=body.get("record_session"))
    settle(tenant, record)
    _publish(tenant, record)
    body = render(request, record)
    return ok(
        {
            "id": record["id"],
            "flow_type": body["flow_type"],
            "hosted_url": body["hosted_url"],
            "flow_expires_at": body["flow_expires_at"],
            "live_view_url": body["live_view_url"],
        }
    )


def _action(record: dict, body: dict) -> tuple[str, object]:
    """The one action of a submit body, as ("fields", {id: value}) or ("choice", id); 400/409 if not."""
    given = [key for key in ACTIONS if body.get(key) is not None]
    if len(given) != 1:
        what = "none" if not given else ", ".join(given)
        raise invalid(
            f"send exactly one action per submit (got {what})",
            **(
                {key: "send only one action per submit" for key in given}
                or {"field_values": "give field_values, selected_choice_id, or a legacy action"}
            ),
        )
    key = given[0]
    value = body[key]
    if key in ("field_values", "selected_choice_id"):
        if not body.get("interaction_id"):
            raise invalid(
                "interaction_id is required", interaction_id="echo the flow's current interaction_id"
            )
        if body["interaction_id"] != record["interaction_id"]:
            raise conflict(
                "the flow has moved on since this interaction_id: read the flow again and answer its "
                "current step",
                code="interaction_id_mismatch",
            )
    choices = record.get("choices") or []
    legacy_choice = _legacy_choice(record, key, value)
    if key in ("field_values", "fields"):
        known = {f["name"]: f for f in record.get("discovered_fields") or []}
        if key == "field_values" and record.get("fields") is None:
            raise invalid("this step has no canonical fields", field_values="use the legacy fields action")
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise invalid(f"{key} must map field ids to strings", **{key: "an object of strings"})
        errors = {f"{key}.{name}": "not a field of this step" for name in value if name not in known}
        for name, spec in known.items():
            if spec.get("required") and not str(value.get(name, "")).strip() and name not in errors:
                errors[f"{key}.{name}"] = "required"
        if errors:
            raise invalid("the submitted fields do not match the step", **errors)
        return ("fields", dict(value))
    if key == "selected_choice_id":
        if not any(c["id"] == value for c in choices):
            raise invalid("unknown choice", selected_choice_id="not one of the step's choices")
        return ("choice", value)
    if legacy_choice is None:
        raise invalid(f"{key} does not match an option of this step", **{key: "not an option of this step"})
    return ("choice", legacy_choice)


def _legacy_choice(record: dict, key: str, value) -> str | None:
    site = site_for(record["domain"])
    page = site.pages.get((record.get("_flow") or {}).get("page") or "")
    if page is None:
        return None
    for choice in page.choices:
        if key == "mfa_option_id" and choice.type == "mfa_method" and choice.mfa_type == value:
            return choice.id
        if key == "sign_in_option_id" and choice.type in ("account", "sign_in_method") and choice.id == value:
            return choice.id
        if key == "sso_provider" and choice.type == "sso_provider" and choice.provider == value:
            return choice.id
        selector = f"//button[@data-choice='{choice.id}']"
        if key == "sso_button_selector" and choice.type == "sso_provider" and selector == value:
            return choice.id
    return None


@endpoint
async def submit(request: Request):
    tenant: Tenant = request.state.tenant
    record = _connection(request, request.path_params["id"])
    body = await read_json(request)
    if settle(tenant, record):
        _publish(tenant, record)
    status, step = record.get("flow_status"), record.get("flow_step")
    if status != "IN_PROGRESS" or step not in ("AWAITING_INPUT", "AWAITING_EXTERNAL_ACTION"):
        where = "no login flow is in progress" if status != "IN_PROGRESS" else f"the flow is {step}"
        raise conflict(
            f"{where}: nothing to submit (flow_status {status}, flow_step {step})",
            code="flow_not_awaiting_input",
        )
    action = _action(record, body)
    _submit(tenant, record, action, tenant.now())
    _publish(tenant, record)
    return ok({"accepted": True})


@endpoint
async def timeline(request: Request):
    tenant = request.state.tenant
    record = _connection(request, request.path_params["id"])
    settle(tenant, record)
    kind = request.query_params.get("type")
    if kind and kind not in TIMELINE_TYPES:
        raise invalid("type is not valid", type="one of login, reauth, health_check")
    items = [e for e in record["_timeline"] if not kind or e["type"] == kind]
    items = sorted(items, key=lambda e: e["timestamp"], reverse=True)
    return paginate(request, items)


async def _wait_any(queues: list[asyncio.Queue], timeout: float) -> list:
    getters = [asyncio.ensure_future(q.get()) for q in queues]
    try:
        await asyncio.wait(getters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for getter in getters:
            getter.cancel()
    items = [g.result() for g in getters if g.done() and not g.cancelled()]
    for queue in queues:
        while not queue.empty():
            items.append(queue.get_nowait())
    return items


@endpoint
async def events(request: Request):
    """Flow state frames, heartbeats every keepalive period; ends at a terminal flow status."""
    tenant: Tenant = request.state.tenant
    connection_id = _connection(request, request.path_params["id"])["id"]
    loop = asyncio.get_running_loop()

    async def frames():
        topic, clock = tenant.topic(f"auth:{connection_id}"), tenant.topic("clock")
        queues = [topic.subscribe(), clock.subscribe()]
        last_key = None
        next_beat = loop.time() + tenant.keepalive_seconds
        published: list = []
        try:
            while True:
                record = tenant.table(TABLE).get(connection_id)
                if record is None:
                    final = next((f for f in reversed(published) if isinstance(f, dict)), None)
                    if final and final.get("flow_status") in TERMINAL:
                        yield None, {**final, **_absolute_urls(request, final)}
                    else:
                        yield (
                            None,
                            {
                                "event": "error",
                                "error": {"code": "not_found", "message": "the auth connection was deleted"},
                                "timestamp": rfc3339(tenant.now()),
                            },
                        )
                    return
                settle(tenant, record)
                frame = state_frame(request, record, tenant.now())
                key = {k: v for k, v in frame.items() if k != "timestamp"}
                if key != last_key:
                    last_key = key
                    yield None, frame
                if record.get("flow_status") in TERMINAL:
                    return
                timeout = next_beat - loop.time()
                due = _next_due(record)
                if due is not None:
                    timeout = min(timeout, (due[0] - tenant.now()).total_seconds() + 0.01)
                published = await _wait_any(queues, max(timeout, 0.01))
                if loop.time() >= next_beat:
                    yield None, {"event": "sse_heartbeat", "timestamp": rfc3339(tenant.now())}
                    next_beat = loop.time() + tenant.keepalive_seconds
        finally:
            topic.unsubscribe(queues[0])
            clock.unsubscribe(queues[1])

    return sse_response(request, frames())


def _absolute_urls(request: Request, frame: dict) -> dict:
    return {k: _absolute(request, frame[k]) for k in ("hosted_url", "live_view_url") if frame.get(k)}


@endpoint
async def control_expire_session(request: Request):
    """Sandbox control: the site forgets the login now, so the next health check finds NEEDS_AUTH."""
    tenant: Tenant = request.state.tenant
    record = _connection(request, request.path_params["id"])
    settle(tenant, record)
    record["_session_expires"] = tenant.now()
    return ok(render(request, record))


# The hosted login page and the live view are the service's own web pages. Under the Chromium engine the
# flow's browser is real: the live view is the sandbox's read-only live view of that session, and the
# hosted page shows it. Under the simulated engine there is no browser to show, and the pages say so.


def _find_anywhere(predicate) -> tuple[Tenant, dict] | None:
    for tenant in registry.tenants.values():
        for record in tenant.table(TABLE).values():
            if predicate(record):
                return tenant, record
    return None


def _sandbox_page(title: str, lines: list[str], *, frame: str | None = None) -> HTMLResponse:
    items = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    if frame is not None:
        items += (
            f"<iframe src='{html.escape(frame)}' title='The login browser (live, view only)' "
            "width=1280 height=800 style='max-width:100%;border:1px solid #888'></iframe>"
        )
    policy = "default-src 'none'; style-src 'unsafe-inline'" + ("; frame-src 'self'" if frame else "")
    return HTMLResponse(
        f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<h1>{html.escape(title)}</h1>{items}",
        headers={"Content-Security-Policy": policy, "Cache-Control": "no-store"},
    )


def _session_of(tenant: Tenant, record: dict) -> dict | None:
    """The flow's real browser session, while it runs (Chromium engine only)."""
    session = tenant.table(sessions.TABLE).get(record.get("browser_session_id") or "")
    if session is None or session.get("_engine") != "chromium" or not sessions.is_active(tenant, session):
        return None
    return session


async def hosted_page(request: Request):
    found = _find_anywhere(lambda r: r["id"] == request.path_params["id"])
    if found is not None:
        settle(*found)
    if found is None or found[1].get("flow_status") != "IN_PROGRESS":
        return _sandbox_page("Login flow not running", ["This hosted login page has no flow in progress."])
    tenant, record = found
    title = f"Sign in to {record['domain']} (sandbox hosted login)"
    lines = [f"Profile: {record['profile_name']}. Step: {record['flow_step']}."]
    session = _session_of(tenant, record)
    if session is None:
        lines.append("Simulated browser: no live view. Answer the flow from the console.")
        return _sandbox_page(title, lines)
    lines.append("The login browser, live (view only). Answer the flow from the console.")
    return _sandbox_page(title, lines, frame=login_browser.live_view_path(session))


async def live_view(request: Request):
    """The flow's live view under the simulated engine (a real flow's ``live_view_url`` is the sandbox's
    live view of its session, where this page sends an old link)."""
    session_id = request.path_params["session_id"]
    found = _find_anywhere(lambda r: r.get("browser_session_id") == session_id)
    if found is None:
        return _sandbox_page("Live view ended", ["This browser session is no longer running."])
    tenant, record = found
    session = _session_of(tenant, record)
    if session is not None:
        return RedirectResponse(login_browser.live_view_path(session), status_code=303)
    return _sandbox_page(
        f"Live view of {session_id} (sandbox)",
        [f"Simulated browser: no live view. The flow is on {record['domain']}, step {record['flow_step']}."],
    )


# Demo data ---------------------------------------------------------------------------------------


def _demo(tenant: Tenant, project: str, at: datetime, **body) -> dict:
    if body.get("credential", {}).get("name") and not _vault_credential(
        tenant, project, body["credential"]["name"]
    ):
        body.pop("credential")
    return new_connection(tenant, project, body, at)


def _human(tenant: Tenant, record: dict, at: datetime, *actions) -> datetime:
    """Play a human through a flow: each action is applied a few seconds after the previous step."""
    for action in actions:
        at += timedelta(seconds=8)
        settle(tenant, record, at)
        _submit(tenant, record, action, at)
    return at


def seed(tenant: Tenant) -> None:
    now = tenant.now()
    project = tenant.default_project_id
    day = timedelta(days=1)
    # Logins a whole number of days before ``now`` less half an hour: a site's 24-hour login ends, and a
    # health check finds it and reauths, half an hour before the seed, not in the minutes after it. A page
    # opened on a fresh demo shows the same at every poll (tests/sandbox/test_auth_connections.py).
    early = timedelta(minutes=30)

    github = _demo(
        tenant,
        project,
        now - 3 * day - timedelta(hours=1),
        domain="github.com",
        profile_name="ci-bot",
        credential={"name": "github-ci"},
        login_url="https://github.com/login",
        record_session=True,
    )
    start_flow(tenant, github, now - 3 * day - early, flow_type="LOGIN")
    settle(tenant, github, now)

    shop = _demo(
        tenant,
        project,
        now - 2 * day - early,
        domain="admin.shop.example.com",
        profile_name="shop-ops",
        credential={"name": "shop-admin"},
        health_check_interval=7200,
        allowed_domains=["auth.shop.example.com"],
    )
    start_flow(tenant, shop, now - 2 * day - early + timedelta(minutes=5), flow_type="LOGIN")
    settle(tenant, shop, now)

    support = _demo(
        tenant, project, now - 2 * day - early, domain="mfa.example.com", profile_name="support-team"
    )
    at = now - 2 * day - early + timedelta(minutes=2)
    start_flow(tenant, support, at, flow_type="LOGIN")
    at = _human(
        tenant,
        support,
        at,
        ("fields", {"email": "support@acme.example", "password": "demo-Support-9"}),
        ("choice", "mfa_sms"),
        ("fields", {"sms_code": "482913"}),
    )
    settle(tenant, support, now)

    partner = _demo(
        tenant,
        project,
        now - timedelta(minutes=30),
        domain="accounts.example.com",
        profile_name="partner-portal",
        health_checks=False,
    )
    # Long enough that the demo still has a flow waiting for input the next day.
    start_flow(tenant, partner, now - timedelta(minutes=2), flow_type="LOGIN", ttl=2 * 86400)
    settle(tenant, partner, now)

    bot = _demo(
        tenant,
        project,
        now - timedelta(hours=6),
        domain="bot.example.com",
        profile_name="price-watch",
        health_checks=False,
        save_credentials=False,
    )
    start_flow(tenant, bot, now - timedelta(hours=5), flow_type="LOGIN")
    settle(tenant, bot, now)

    _demo(
        tenant,
        project,
        now - timedelta(hours=7),
        domain="push.example.com",
        profile_name="finance",
        health_check_interval=21600,
        auto_reauth=False,
    )

    salesforce = _demo(
        tenant,
        project,
        now - day - early,
        domain="acme.my.salesforce.com",
        profile_name="sales-ops",
        credential={"provider": "1password-ops", "path": "Ops/Salesforce"},
        health_check_interval=14400,
    )
    start_flow(tenant, salesforce, now - day - early + timedelta(minutes=1), flow_type="LOGIN")
    settle(tenant, salesforce, now)

    checkout = next((p for p in tenant.table("projects").values() if p["name"] == "checkout-flows"), None)
    if checkout is not None:
        stripe = _demo(
            tenant,
            checkout["id"],
            now - day - early,
            domain="dashboard.stripe.com",
            profile_name="payments",
            credential={"name": "stripe-dashboard"},
        )
        start_flow(tenant, stripe, now - day - early + timedelta(minutes=1), flow_type="LOGIN")
        settle(tenant, stripe, now)


routes = [
    Route("/auth/connections", list_connections, methods=["GET"]),
    Route("/auth/connections", create_connection, methods=["POST"]),
    Route("/auth/connections/{id}", get_connection, methods=["GET"]),
    Route("/auth/connections/{id}", update_connection, methods=["PATCH"]),
    Route("/auth/connections/{id}", delete_connection, methods=["DELETE"]),
    Route("/auth/connections/{id}/login", login, methods=["POST"]),
    Route("/auth/connections/{id}/submit", submit, methods=["POST"]),
    Route("/auth/connections/{id}/events", events, methods=["GET"]),
    Route("/auth/connections/{id}/timeline", timeline, methods=["GET"]),
    Route("/_sandbox/auth/connections/{id}/expire_session", control_expire_session, methods=["POST"]),
    Route("/_hosted/auth/{id}", hosted_page, methods=["GET"]),
    Route("/_hosted/live/{session_id}", live_view, methods=["GET"]),
]
