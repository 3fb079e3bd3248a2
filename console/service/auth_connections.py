"""Auth connections (managed auth) and their login flows (notes §9; plan limits in §1).

A connection keeps a profile logged in to one domain; its most recent login flow is part of the
record. A console drives a flow by reading it (``get_connection`` or the ``events`` stream) and
answering each pause with exactly one action that echoes the current ``interaction_id``.

``AuthConnection.inputs`` / ``.options`` give one shape for what a paused flow asks, whether the
service described it with the canonical ``fields``/``choices`` or only with the legacy lists; each
option knows which submit action answers it.

Submitted values go straight into the request body: nothing here keeps, logs or returns them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console.service import sse
from console.service.collection import Collection
from console.service.contract import TERMINAL_FLOW_STATUSES
from console.service.http import Service, request
from console.service.pagination import Page, fetch_page
from console.service.records import Name, Record, Seconds, Text

__all__ = [
    "SETTABLE_FIELDS",
    "AuthConnection",
    "FlowState",
    "Input",
    "LoginStarted",
    "Option",
    "TimelineEvent",
    "create_connection",
    "delete_connection",
    "events",
    "find_connection",
    "get_connection",
    "list_connections",
    "list_timeline",
    "profile_exists",
    "start_login",
    "state_of",
    "submit_choice",
    "submit_fields",
    "submit_legacy",
    "update_connection",
]

# Every create field but domain and profile_name may be changed with PATCH.
SETTABLE_FIELDS = (
    "login_url",
    "allowed_domains",
    "credential",
    "save_credentials",
    "health_checks",
    "health_check_interval",
    "auto_reauth",
    "record_session",
    "browser",
)
# The legacy field types, in the canonical vocabulary.
_LEGACY_INPUT_TYPES = {
    "email": "identifier",
    "text": "text",
    "password": "password",
    "tel": "text",
    "number": "text",
    "url": "text",
    "code": "code",
    "totp": "totp_code",
}


@dataclass(frozen=True)
class Input:
    """One value a paused flow asks for; ``key`` is what the submit names it by."""

    key: str
    type: str  # identifier | password | code | totp_code | totp_secret | text
    label: str
    hint: str | None = None
    required: bool = True
    rejected: bool = False
    placeholder: str | None = None
    mfa_type: str | None = None


@dataclass(frozen=True)
class Option:
    """One choice of a paused flow; ``action`` and ``value`` are the submit that picks it."""

    action: str  # selected_choice_id | mfa_option_id | sign_in_option_id | sso_provider
    value: str
    type: str  # mfa_method | sso_provider | account | sign_in_method | ...
    label: str
    description: str | None = None
    destination: str | None = None  # a masked phone number or address
    mfa_type: str | None = None


class FlowField(Record):
    """A value a paused flow asks for, as the canonical ``fields`` describe it."""

    id: Name | None = None  # echoed back in the submit's body, never a path: any text the service likes
    type: str | None = None
    label: str | None = None
    hint: str | None = None
    required: bool = True
    reason: str | None = None  # "rejected": the value sent last was refused


class FlowChoice(Record):
    """A choice of a paused flow (canonical ``choices``)."""

    id: Name | None = None
    type: str | None = None
    label: str | None = None
    display_text: str | None = None
    description: str | None = None
    masked_destination: str | None = None
    mfa_type: str | None = None


class DiscoveredField(Record):
    """A value a paused flow asks for (legacy ``discovered_fields``)."""

    name: str | None = None
    type: str | None = None
    label: str | None = None
    hint: str | None = None
    required: bool = True
    placeholder: str | None = None
    linked_mfa_type: str | None = None


class MfaOption(Record):
    type: str | None = None
    label: str | None = None
    description: str | None = None
    target: str | None = None


class SignInOption(Record):
    id: Name | None = None
    label: str | None = None
    description: str | None = None


class SsoButton(Record):
    provider: str | None = None
    label: str | None = None


class _FlowFields(Record):
    """The flow fields shared by the record and the events stream's state frames."""

    flow_type: str | None = None
    flow_status: str | None = None
    flow_step: str | None = None
    interaction_id: str | None = None
    fields: list[FlowField] | None = None
    choices: list[FlowChoice] | None = None
    discovered_fields: list[DiscoveredField] | None = None
    mfa_options: list[MfaOption] | None = None
    sign_in_options: list[SignInOption] | None = None
    pending_sso_buttons: list[SsoButton] | None = None
    external_action_message: Text | None = None
    website_error: Text | None = None
    error_code: str | None = None
    error_message: Text | None = None
    post_login_url: str | None = None
    hosted_url: str | None = None
    live_view_url: str | None = None

    @property
    def flow_running(self) -> bool:
        return self.flow_status == "IN_PROGRESS"

    @property
    def flow_ended(self) -> bool:
        return self.flow_status in TERMINAL_FLOW_STATUSES

    @property
    def canonical(self) -> bool:
        """True when the pause is described by ``fields``/``choices`` (answered with interaction_id)."""
        return self.fields is not None or self.choices is not None

    @property
    def inputs(self) -> list[Input]:
        if self.fields is not None:
            return [
                Input(
                    key=f.id,
                    type=f.type or "text",
                    label=f.label or f.id.replace("_", " ").capitalize(),
                    hint=f.hint,
                    required=f.required,
                    rejected=f.reason == "rejected",
                )
                for f in self.fields
                if f.id
            ]
        return [
            Input(
                key=f.name,
                type=_LEGACY_INPUT_TYPES.get(f.type or "text", "text"),
                label=f.label or f.name,
                hint=f.hint,
                required=f.required,
                placeholder=f.placeholder,
                mfa_type=f.linked_mfa_type,
            )
            for f in self.discovered_fields or []
            if f.name
        ]

    @property
    def options(self) -> list[Option]:
        if self.choices is not None:
            return [
                Option(
                    action="selected_choice_id",
                    value=c.id,
                    type=c.type or "other",
                    label=c.label or c.display_text or c.id,
                    description=c.description,
                    destination=c.masked_destination,
                    mfa_type=c.mfa_type,
                )
                for c in self.choices
                if c.id
            ]
        options = [
            Option("mfa_option_id", o.type, "mfa_method", o.label or o.type, o.description, o.target, o.type)
            for o in self.mfa_options or []
            if o.type
        ]
        options += [
            Option("sign_in_option_id", o.id, "account", o.label or o.id, o.description)
            for o in self.sign_in_options or []
            if o.id
        ]
        options += [
            Option("sso_provider", b.provider, "sso_provider", b.label or b.provider)
            for b in self.pending_sso_buttons or []
            if b.provider
        ]
        return options

    @property
    def pause_key(self) -> str:
        """Changes whenever the flow moves: what a page compares to know the step it shows is stale."""
        return ":".join(
            str(part or "")
            for part in (self.flow_status, self.flow_step, self.interaction_id, self.website_error)
        )


class AuthConnection(_FlowFields):
    id: str
    domain: str | None = None
    profile_name: str | None = None
    status: str | None = None  # AUTHENTICATED | NEEDS_AUTH
    save_credentials: bool | None = None
    record_session: bool | None = None
    allowed_domains: list[str] | None = None
    login_url: str | None = None
    credential: dict[str, Any] | None = None
    browser: dict[str, Any] | None = None
    auto_reauth: bool | None = None
    health_checks: bool | None = None
    health_check_interval: Seconds | None = None
    last_auth_check_at: datetime | None = None
    last_auth_at: datetime | None = None  # deprecated alias of last_auth_check_at
    can_reauth: bool | None = None
    can_reauth_reason: str | None = None
    proxy_id: str | None = None  # deprecated
    flow_expires_at: datetime | None = None
    browser_session_id: str | None = None
    sso_provider: str | None = None

    @property
    def authenticated(self) -> bool:
        return self.status == "AUTHENTICATED"

    @property
    def last_checked_at(self) -> datetime | None:
        return self.last_auth_check_at or self.last_auth_at

    @property
    def credential_label(self) -> str | None:
        """The linked credential in words: its name, or the provider item."""
        credential = self.credential or {}
        if credential.get("name"):
            return str(credential["name"])
        if credential.get("provider"):
            where = "any matching item" if credential.get("auto") else credential.get("path") or "?"
            return f"{credential['provider']}: {where}"
        return None


class FlowState(_FlowFields):
    """A ``managed_auth_state`` frame of the events stream."""

    event: str | None = None
    timestamp: datetime | None = None


class LoginStarted(Record):
    id: str | None = None
    flow_type: str | None = None
    hosted_url: str | None = None
    flow_expires_at: datetime | None = None
    live_view_url: str | None = None


class TimelineEvent(Record):
    id: str
    type: str | None = None  # login | reauth | health_check
    status: str | None = None
    timestamp: datetime | None = None
    step: str | None = None
    previous_status: str | None = None
    browser_session_id: str | None = None
    replay_id: str | None = None
    telemetry_captured: bool | None = None
    error_code: str | None = None
    error_message: str | None = None
    website_error: str | None = None
    updated_at: datetime | None = None


CONNECTIONS = Collection("/auth/connections", AuthConnection, filters=("domain", "profile_name", "query"))
list_connections = CONNECTIONS.list
get_connection = CONNECTIONS.get


async def find_connection(svc: Service, *, domain: str, profile_name: str) -> AuthConnection | None:
    """The connection of (profile, domain): what a 409 on create conflicts with."""
    page = await list_connections(svc, domain=domain, profile_name=profile_name, limit=5)
    wanted = profile_name.casefold()
    return next((c for c in page.items if (c.profile_name or "").casefold() == wanted), None)


async def profile_exists(svc: Service, name: str) -> bool:
    """Whether creating a connection for this profile name will create the profile (notes §9)."""
    reply = await request(svc, "GET", "/profiles", params={"name": name, "limit": 1})
    return bool(reply.data)


async def create_connection(svc: Service, *, domain: str, profile_name: str, **fields: Any) -> AuthConnection:
    """409 when (profile, domain) exists; 403 ``insufficient_plan`` over the cap; 400 below the floor.

    ``fields``: any of ``SETTABLE_FIELDS``; None values are left out (the service's default applies).
    """
    body = {"domain": domain, "profile_name": profile_name, **_settable(fields, drop_none=True)}
    return await CONNECTIONS.create(svc, body)


async def update_connection(svc: Service, connection_id: str, **changes: Any) -> AuthConnection:
    """Send only ``changes`` (PATCH semantics): ``login_url=""`` clears it, ``credential=None`` unlinks."""
    body = _settable(changes, drop_none=False)
    return await CONNECTIONS.update(svc, connection_id, body)


def _settable(fields: dict[str, Any], *, drop_none: bool) -> dict[str, Any]:
    unknown = set(fields) - set(SETTABLE_FIELDS)
    if unknown:
        raise TypeError(f"not a settable auth connection field: {', '.join(sorted(unknown))}")
    return {k: v for k, v in fields.items() if not (drop_none and v is None)}


async def delete_connection(svc: Service, connection_id: str) -> None:
    """Also cancels a login flow in progress."""
    await CONNECTIONS.delete(svc, connection_id)


async def start_login(
    svc: Service, connection_id: str, *, record_session: bool | None = None
) -> LoginStarted:
    body = {} if record_session is None else {"record_session": record_session}
    return LoginStarted.from_json(
        (await request(svc, "POST", CONNECTIONS.at(connection_id, "/login"), json=body)).data
    )


async def _submit(svc: Service, connection_id: str, body: dict[str, Any]) -> bool:
    reply = await request(svc, "POST", CONNECTIONS.at(connection_id, "/submit"), json=body)
    return bool((reply.data or {}).get("accepted"))


async def submit_fields(
    svc: Service, connection_id: str, *, interaction_id: str, values: dict[str, str]
) -> bool:
    """Answer the canonical ``fields`` of the current pause; True when the service queued it."""
    return await _submit(svc, connection_id, {"interaction_id": interaction_id, "field_values": values})


async def submit_choice(svc: Service, connection_id: str, *, interaction_id: str, choice_id: str) -> bool:
    return await _submit(
        svc, connection_id, {"interaction_id": interaction_id, "selected_choice_id": choice_id}
    )


async def submit_legacy(svc: Service, connection_id: str, action: str, value: Any) -> bool:
    """One legacy action: ``fields`` (a dict), ``mfa_option_id``, ``sign_in_option_id``, ``sso_provider``."""
    if action not in ("fields", "mfa_option_id", "sign_in_option_id", "sso_provider"):
        raise TypeError(f"not a legacy submit action: {action}")
    return await _submit(svc, connection_id, {action: value})


async def list_timeline(
    svc: Service, connection_id: str, *, type: str | None = None, limit: int = 20, offset: int = 0
) -> Page[TimelineEvent]:
    """Logins, re-auths and health checks, newest first."""
    return await fetch_page(
        svc,
        CONNECTIONS.at(connection_id, "/timeline"),
        TimelineEvent,
        limit=limit,
        offset=offset,
        params={"type": type or None},
    )


async def events(svc: Service, connection_id: str) -> AsyncIterator[sse.ServerEvent]:
    """The flow's events stream: ``managed_auth_state``, ``error`` and ``sse_heartbeat`` payloads
    (the discriminator is the JSON's ``event``). It ends by itself at a terminal flow status.
    """
    async for event in sse.events(svc, CONNECTIONS.at(connection_id, "/events")):
        yield event


def state_of(event: sse.ServerEvent) -> FlowState | None:
    """The flow state an event carries, or None for heartbeats, errors and anything else."""
    if isinstance(event.data, dict) and event.data.get("event") == "managed_auth_state":
        return FlowState.from_json(event.data)
    return None
