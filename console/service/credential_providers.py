"""Credential providers: external vaults (1Password) the service reads logins from (notes §15, SDK 0.131).

The provider's token is write-only: it goes out in create and update bodies and never comes back.
"""

from __future__ import annotations

from datetime import datetime

from console.service.collection import Collection, fetch_list, fetch_one, given
from console.service.http import Service
from console.service.records import Named, Record

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


class Provider(Named):
    provider_type: str | None = None
    enabled: bool | None = None
    priority: int | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


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


PROVIDERS = Collection("/org/credential_providers", Provider)
list_providers = PROVIDERS.list
get_provider = PROVIDERS.get
delete_provider = PROVIDERS.delete


async def create_provider(
    svc: Service,
    *,
    name: str,
    token: str,
    provider_type: str = "onepassword",
    cache_ttl_seconds: int | None = None,
) -> Provider:
    body = {"name": name, "provider_type": provider_type, "token": token}
    return await PROVIDERS.create(svc, body | given(cache_ttl_seconds=cache_ttl_seconds))


async def update_provider(svc: Service, provider_id: str, **changes) -> Provider:
    """Only the given fields change: name, token, enabled, priority, cache_ttl_seconds."""
    return await PROVIDERS.update(svc, provider_id, given(**changes))


async def test_provider(svc: Service, provider_id: str) -> TestResult:
    return await fetch_one(svc, TestResult, "POST", PROVIDERS.at(provider_id, "/test"), json={})


async def list_items(svc: Service, provider_id: str) -> list[Item]:
    return await fetch_list(svc, Item, PROVIDERS.at(provider_id, "/items"), key="items")
