"""Vault provider configurations (``/vault-provider-configs``, SDK 0.131): the organization's own OAuth
clients for the payment providers of card and wallet items (Link, AgentCard).

Choices where the SDK leaves room:

- ``provider`` is ``link`` or ``agentcard``; ``name`` (1..255, unique in the organization, case-insensitive:
  409 ``provider_config_name_taken``) and ``credentials {client_id, client_secret}`` are required;
  ``publishable_key`` is for ``link`` only. ``client_id`` is kept and shown; ``client_secret`` is
  write-only (never in an answer) and a Link ``publishable_key`` is shown (it is public by design).
- AgentCard's ``test_mode`` is read from the secret, as the service introspects it: a secret starting
  ``test_`` or ``sk_test_`` is a sandbox credential.
- PATCH changes ``name`` and ``credentials`` (``client_secret``, ``publishable_key``); ``client_id`` is
  immutable (400). The record is found by id or name. DELETE is 204 (the sandbox keeps no wallet items
  that could hold one).
- The list is the offset page of the service (``limit``, ``offset``; ``X-Has-More``, ``X-Next-Offset``),
  oldest first.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.errors import conflict, invalid, not_found
from console.sandbox.core.http import endpoint, no_content, ok, paginate, read_json
from console.sandbox.core.state import Tenant, new_id, rfc3339

TABLE = "vault_provider_configs"
PROVIDERS = ("link", "agentcard")
NAME_MAX = 255
SECRET_MAX = 4096


def render(record: dict) -> dict:
    body = {k: v for k, v in record.items() if not k.startswith("_")}
    if record["provider"] == "agentcard":
        body["test_mode"] = record["_secret"].startswith(("test_", "sk_test_"))
    return body


def _find(tenant: Tenant, wanted: str) -> dict:
    records = tenant.table(TABLE).values()
    for record in records:
        if record["id"] == wanted:
            return record
    for record in records:
        if record["name"] == wanted:
            return record
    raise not_found("vault provider config", wanted)


def _name(tenant: Tenant, value, errors: dict, *, except_id: str | None = None) -> str | None:
    if not isinstance(value, str) or not value.strip():
        errors["name"] = "a name is required"
        return None
    name = value.strip()
    if len(name) > NAME_MAX:
        errors["name"] = f"at most {NAME_MAX} characters"
        return None
    for record in tenant.table(TABLE).values():
        if record["name"].casefold() == name.casefold() and record["id"] != except_id:
            raise conflict(f"a provider config named {name!r} exists", "provider_config_name_taken")
    return name


def _text(value, field: str, errors: dict, *, required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > SECRET_MAX:
        errors[field] = "required" if required else f"a non-empty string of at most {SECRET_MAX} characters"
        return None
    return value.strip()


@endpoint
async def create(request: Request):
    tenant = request.state.tenant
    body = await read_json(request)
    errors: dict[str, str] = {}
    provider = body.get("provider")
    if provider not in PROVIDERS:
        errors["provider"] = f"one of {', '.join(PROVIDERS)}"
    credentials = body.get("credentials") if isinstance(body.get("credentials"), dict) else None
    if credentials is None:
        errors["credentials"] = "client_id and client_secret are required"
        credentials = {}
    client_id = _text(credentials.get("client_id"), "credentials.client_id", errors, required=True)
    secret = _text(credentials.get("client_secret"), "credentials.client_secret", errors, required=True)
    publishable = _text(
        credentials.get("publishable_key"), "credentials.publishable_key", errors, required=False
    )
    if publishable is not None and provider != "link":
        errors["credentials.publishable_key"] = "for link configurations only"
    name = _name(tenant, body.get("name"), errors)
    if errors:
        raise invalid("the provider config is not valid", **errors)
    now = rfc3339(tenant.now())
    record = {
        "id": new_id("vpc"),
        "name": name,
        "provider": provider,
        "client_id": client_id,
        "created_at": now,
        "updated_at": now,
        "_secret": secret,
    }
    if publishable:
        record["publishable_key"] = publishable
    tenant.table(TABLE)[record["id"]] = record
    return ok(render(record), status=201)


@endpoint
async def list_configs(request: Request):
    tenant = request.state.tenant
    records = sorted(tenant.table(TABLE).values(), key=lambda r: (r["created_at"], r["id"]))
    return paginate(request, records, render)


@endpoint
async def retrieve(request: Request):
    return ok(render(_find(request.state.tenant, request.path_params["id_or_name"])))


@endpoint
async def update(request: Request):
    tenant = request.state.tenant
    record = _find(tenant, request.path_params["id_or_name"])
    body = await read_json(request)
    errors: dict[str, str] = {}
    changes: dict = {}
    if "name" in body:
        changes["name"] = _name(tenant, body["name"], errors, except_id=record["id"])
    credentials = body.get("credentials")
    if credentials is not None:
        if not isinstance(credentials, dict):
            errors["credentials"] = "an object"
            credentials = {}
        if "client_id" in credentials:
            errors["credentials.client_id"] = "immutable: create another configuration"
        if "client_secret" in credentials:
            changes["_secret"] = _text(
                credentials["client_secret"], "credentials.client_secret", errors, required=True
            )
        if "publishable_key" in credentials:
            if record["provider"] != "link":
                errors["credentials.publishable_key"] = "for link configurations only"
            else:
                changes["publishable_key"] = _text(
                    credentials["publishable_key"], "credentials.publishable_key", errors, required=True
                )
    if errors:
        raise invalid("the provider config is not valid", **errors)
    if changes:
        record.update(changes)
        record["updated_at"] = rfc3339(tenant.now())
    return ok(render(record))


@endpoint
async def delete(request: Request):
    tenant = request.state.tenant
    record = _find(tenant, request.path_params["id_or_name"])
    del tenant.table(TABLE)[record["id"]]
    return no_content()


routes = [
    Route("/vault-provider-configs", create, methods=["POST"]),
    Route("/vault-provider-configs", list_configs, methods=["GET"]),
    Route("/vault-provider-configs/{id_or_name}", retrieve, methods=["GET"]),
    Route("/vault-provider-configs/{id_or_name}", update, methods=["PATCH"]),
    Route("/vault-provider-configs/{id_or_name}", delete, methods=["DELETE"]),
]
