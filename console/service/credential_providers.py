"""Credential providers: external vaults (1Password) the service reads logins from (notes §15, SDK 0.131).

The provider's token is write-only: it goes out in create and update bodies and never comes back.
"""

from __future__ import annotations

from datetime import datetime

from console.service.http import Service, list_max_bytes, path_segment, request
from console.service.pagination import Page, fetch_page
from console.service.records import Record

__all__ = [
    "Item",
    "Provider",
    "TestResult",
    "create_provider",
    "delete_provider",
    "get_provider",
    "list_items",
    "list_providers",
    "test_provider",
    "update_provider",
]


class Provider(Record):
    id: str
    name: str | None = None
    provider_type: str | None = None
    enabled: bool | None = None
    priority: int | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def label(self) -> str:
        return self.name or self.id


class Item(Record):
    """An item of the provider, addressed by ``path`` ("Vault/Item") in a credential reference."""

    id: str
    path: str | None = None
    title: str | None = None
    vault_id: str | None = None
    vault_name: str | None = None
    urls: list[str] | None = None


class TestResult(Record):
    success: bool | None = None
    vaults: list[dict] | None = None
    error: str | None = None


def _path(provider_id: str) -> str:
    return f"/org/credential_providers/{path_segment(provider_id)}"


async def list_providers(
    svc: Service, *, limit: int = 20, offset: int = 0, query: str | None = None
) -> Page[Provider]:
    params = {"query": query or None}
    return await fetch_page(
        svc, "/org/credential_providers", Provider, limit=limit, offset=offset, params=params
    )


async def get_provider(svc: Service, provider_id: str) -> Provider:
    return Provider.from_json((await request(svc, "GET", _path(provider_id))).data)


async def create_provider(
    svc: Service,
    *,
    name: str,
    token: str,
    provider_type: str = "onepassword",
    cache_ttl_seconds: int | None = None,
) -> Provider:
    body = {"name": name, "provider_type": provider_type, "token": token}
    if cache_ttl_seconds is not None:
        body["cache_ttl_seconds"] = cache_ttl_seconds
    return Provider.from_json((await request(svc, "POST", "/org/credential_providers", json=body)).data)


async def update_provider(svc: Service, provider_id: str, **changes) -> Provider:
    """Only the given fields change: name, token, enabled, priority, cache_ttl_seconds."""
    body = {k: v for k, v in changes.items() if v is not None}
    return Provider.from_json((await request(svc, "PATCH", _path(provider_id), json=body)).data)


async def delete_provider(svc: Service, provider_id: str) -> None:
    await request(svc, "DELETE", _path(provider_id), expect="none")


async def test_provider(svc: Service, provider_id: str) -> TestResult:
    return TestResult.from_json((await request(svc, "POST", _path(provider_id) + "/test", json={})).data)


async def list_items(svc: Service, provider_id: str) -> list[Item]:
    data = (await request(svc, "GET", _path(provider_id) + "/items", max_bytes=list_max_bytes())).data or {}
    return Item.list_from_json(data.get("items") if isinstance(data, dict) else None)
