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

from console.sandbox.core.errors import ApiError, conflict
from console.sandbox.core.fields import Bad, Body, Context, Field, required_name
from console.sandbox.core.http import endpoint, no_content, ok, paginate, read_json, record_of
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


_name = required_name("give the provider a name", NAME_MAX)


def _unique(tenant: Tenant, name: str, except_id: str | None = None) -> None:
    for record in tenant.table(TABLE).values():
        if record["name"].casefold() == name.casefold() and record["id"] != except_id:
            raise conflict(f"a credential provider named {name!r} already exists", code="provider_name_taken")


def _int(low: int, high: int):
    """An integer from ``low`` to ``high``, or null."""

    def check(value, context: Context) -> int | None:
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high
        ):
            raise Bad(f"an integer from {low} to {high}")
        return value

    return check


def _token(value, context: Context) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Bad("the 1Password service account token")
    return value.strip()


def _provider_type(value, context: Context) -> str:
    if value not in TYPES:
        raise Bad("must be onepassword")
    return value


def _enabled(value, context: Context) -> bool:
    if not isinstance(value, bool):
        raise Bad("true or false")
    return value


# A provider's create body (every field), and its PATCH (the fields given; its name checked once the rest
# is right, ``NAME``).
CREATE = Body(
    message="the credential provider is not valid",
    unknown="not a credential provider field",
    complete=True,
    fields=(
        Field("provider_type", _provider_type),
        Field("token", _token),
        Field("cache_ttl_seconds", _int(0, 86400)),
        Field("name", _name),
    ),
)
UPDATE = Body(
    message="the change is not valid",
    unknown=lambda name: (
        "cannot be changed" if name == "provider_type" else "not a credential provider field"
    ),
    also=frozenset({"name"}),
    fields=(
        Field("token", _token, key="_token"),
        Field("enabled", _enabled),
        Field("priority", _int(0, 1000)),
        Field("cache_ttl_seconds", _int(0, 86400), key="_cache_ttl_seconds"),
    ),
)
NAME = Body(message="the name is not valid", fields=(Field("name", _name),))


def create(tenant: Tenant, body: dict) -> dict:
    fields = CREATE.validate(body)
    name, token, ttl = fields["name"], fields["token"], fields["cache_ttl_seconds"]
    _unique(tenant, name)
    now = rfc3339(tenant.now())
    record = {
        "id": new_id("cp"),
        "name": name,
        "provider_type": fields["provider_type"],
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
    return record_of(
        request.state.tenant, TABLE, key, "credential provider", gone=lambda r: r.get("_deleted")
    )


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
    changes = UPDATE.validate(body, creating=False)
    if "name" in body:
        changes.update(NAME.validate({"name": body["name"]}))
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
