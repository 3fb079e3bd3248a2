"""Credential providers (``/org/credential_providers``, 1Password; notes §15, SDK 0.131).

Choices where the SDK leaves room:

- Providers belong to the organization; names are unique in it (409 ``provider_name_taken``).
  ``provider_type`` is ``onepassword``; ``token`` is required and write-only (never in a response);
  ``cache_ttl_seconds`` is 0..86400 (default 300) and, like the token, not part of the record.
- The sandbox cannot reach 1Password: a token is "valid" when it looks like a service-account token
  (``ops_`` and at least 20 more characters) and does not contain ``revoked``. ``POST /{id}/test``
  answers ``{success, vaults, error?}`` from that; ``GET /{id}/items`` lists a fixed catalogue of items
  (two vaults) for a valid token and 400 ``provider_auth_failed`` otherwise.
- ``priority`` defaults to 0 (lower is checked first); PATCH changes only what it is given.
"""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.errors import ApiError, conflict, invalid, not_found
from console.sandbox.core.http import endpoint, no_content, ok, paginate, read_json
from console.sandbox.core.state import Tenant, new_id, rfc3339

TABLE = "credential_providers"
TYPES = ("onepassword",)
NAME_MAX = 255
_TOKEN = re.compile(r"^ops_[A-Za-z0-9_\-]{20,}$")
VAULTS = [{"id": "vlt_engineering", "name": "Engineering"}, {"id": "vlt_shop", "name": "Shop"}]
ITEMS = [
    ("itm_github", "Engineering", "GitHub", ["https://github.com/login"]),
    ("itm_aws", "Engineering", "AWS Console", ["https://signin.aws.amazon.com"]),
    ("itm_grafana", "Engineering", "Grafana", ["https://grafana.example.com"]),
    ("itm_shopify", "Shop", "Shopify Admin", ["https://admin.shopify.com"]),
    ("itm_stripe", "Shop", "Stripe Dashboard", ["https://dashboard.stripe.com/login"]),
    ("itm_wholesale", "Shop", "Wholesale portal", None),
]


def render(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith("_")}


def _token_ok(token: str) -> bool:
    return bool(_TOKEN.match(token)) and "revoked" not in token


def _name(value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise invalid("name is required", name="give the provider a name")
    if len(value.strip()) > NAME_MAX:
        raise invalid("name is too long", name=f"at most {NAME_MAX} characters")
    return value.strip()


def _unique(tenant: Tenant, name: str, except_id: str | None = None) -> None:
    for record in tenant.table(TABLE).values():
        if record["name"].casefold() == name.casefold() and record["id"] != except_id:
            raise conflict(f"a credential provider named {name!r} already exists", code="provider_name_taken")


def _int(body: dict, name: str, low: int, high: int, errors: dict) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        errors[name] = f"an integer from {low} to {high}"
    return value


def _token(value, errors: dict) -> str | None:
    if not isinstance(value, str) or not value.strip():
        errors["token"] = "the 1Password service account token"
        return None
    return value.strip()


def create(tenant: Tenant, body: dict) -> dict:
    errors: dict[str, str] = {}
    unknown = sorted(set(body) - {"name", "provider_type", "token", "cache_ttl_seconds"})
    for key in unknown:
        errors[key] = "not a credential provider field"
    if body.get("provider_type") not in TYPES:
        errors["provider_type"] = "must be onepassword"
    token = _token(body.get("token"), errors)
    ttl = _int(body, "cache_ttl_seconds", 0, 86400, errors)
    name = _name(body.get("name"))
    if errors:
        raise invalid("the credential provider is not valid", **errors)
    _unique(tenant, name)
    now = rfc3339(tenant.now())
    record = {
        "id": new_id("cp"),
        "name": name,
        "provider_type": body["provider_type"],
        "enabled": True,
        "priority": 0,
        "created_at": now,
        "updated_at": now,
        "_token": token,
        "_cache_ttl_seconds": 300 if ttl is None else ttl,
    }
    tenant.table(TABLE)[record["id"]] = record
    return record


def _get(request: Request) -> dict:
    key = request.path_params["id"]
    record = request.state.tenant.table(TABLE).get(key)
    if record is None or record.get("_deleted"):
        raise not_found("credential provider", key)
    return record


def find(tenant: Tenant, id_or_name: str) -> dict | None:
    """A live provider by id or name (auth connections name theirs)."""
    for record in tenant.table(TABLE).values():
        if not record.get("_deleted") and id_or_name in (record["id"], record["name"]):
            return record
    return None


def items(record: dict) -> list[dict]:
    return [
        {
            "id": item_id,
            "path": f"{vault}/{title}",
            "title": title,
            "vault_id": next(v["id"] for v in VAULTS if v["name"] == vault),
            "vault_name": vault,
            **({"urls": urls} if urls else {}),
        }
        for item_id, vault, title, urls in ITEMS
    ]


@endpoint
async def create_provider(request: Request):
    return ok(render(create(request.state.tenant, await read_json(request))), status=201)


@endpoint
async def list_providers(request: Request):
    records = [r for r in request.state.tenant.table(TABLE).values() if not r.get("_deleted")]
    query = (request.query_params.get("query") or "").strip().casefold()
    if query:
        records = [r for r in records if r["id"] == query or query in r["name"].casefold()]
    records.sort(key=lambda r: (r["priority"], r["created_at"]))
    return paginate(request, records, render=render)


@endpoint
async def get_provider(request: Request):
    return ok(render(_get(request)))


@endpoint
async def update_provider(request: Request):
    tenant = request.state.tenant
    record = _get(request)
    body = await read_json(request)
    errors: dict[str, str] = {}
    for key in sorted(set(body) - {"name", "token", "enabled", "priority", "cache_ttl_seconds"}):
        errors[key] = "cannot be changed" if key == "provider_type" else "not a credential provider field"
    changes: dict = {}
    if "token" in body:
        changes["_token"] = _token(body["token"], errors)
    if "enabled" in body:
        if not isinstance(body["enabled"], bool):
            errors["enabled"] = "true or false"
        changes["enabled"] = body["enabled"]
    if "priority" in body:
        changes["priority"] = _int(body, "priority", 0, 1000, errors)
    if "cache_ttl_seconds" in body:
        changes["_cache_ttl_seconds"] = _int(body, "cache_ttl_seconds", 0, 86400, errors)
    if errors:
        raise invalid("the change is not valid", **errors)
    if "name" in body:
        changes["name"] = _name(body["name"])
        _unique(tenant, changes["name"], except_id=record["id"])
    record.update(changes, updated_at=rfc3339(tenant.now()))
    return ok(render(record))


@endpoint
async def delete_provider(request: Request):
    _get(request)["_deleted"] = True
    return no_content()


@endpoint
async def test_provider(request: Request):
    record = _get(request)
    if _token_ok(record["_token"]):
        return ok({"success": True, "vaults": VAULTS})
    return ok({"success": False, "vaults": [], "error": "1Password refused the token (invalid or revoked)"})


@endpoint
async def list_items(request: Request):
    record = _get(request)
    if not _token_ok(record["_token"]):
        raise ApiError(400, "provider_auth_failed", "1Password refused the provider's token: update it")
    return ok({"items": items(record)})


def seed(tenant: Tenant) -> None:
    create(
        tenant,
        {
            "name": "1password-ops",
            "provider_type": "onepassword",
            "token": "ops_" + "demo0token0do0not0show0" * 2,
        },
    )


routes = [
    Route("/org/credential_providers", list_providers, methods=["GET"]),
    Route("/org/credential_providers", create_provider, methods=["POST"]),
    Route("/org/credential_providers/{id}", get_provider, methods=["GET"]),
    Route("/org/credential_providers/{id}", update_provider, methods=["PATCH"]),
    Route("/org/credential_providers/{id}", delete_provider, methods=["DELETE"]),
    Route("/org/credential_providers/{id}/items", list_items, methods=["GET"]),
    Route("/org/credential_providers/{id}/test", test_provider, methods=["POST"]),
]
