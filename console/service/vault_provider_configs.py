"""Vault provider configurations: the organization's own OAuth clients for the payment providers of card
and wallet vault items (SDK 0.131 ``vault_provider_configs``: ``link``, ``agentcard``). ``client_secret`` is
write-only: it goes out in create and update bodies and never comes back.
"""

from __future__ import annotations

from datetime import datetime

from console.service.collection import Collection, filled, given
from console.service.http import Service
from console.service.records import Named

__all__ = ["ProviderConfig", "create_config", "delete_config", "get_config", "list_configs", "update_config"]

PROVIDERS = ("link", "agentcard")


class ProviderConfig(Named):
    provider: str | None = None
    client_id: str | None = None
    publishable_key: str | None = None
    test_mode: bool | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


CONFIGS = Collection("/vault-provider-configs", ProviderConfig, filters=())
list_configs = CONFIGS.list
get_config = CONFIGS.get
delete_config = CONFIGS.delete


async def create_config(
    svc: Service,
    *,
    name: str,
    provider: str,
    client_id: str,
    client_secret: str,
    publishable_key: str | None = None,
) -> ProviderConfig:
    credentials = {"client_id": client_id, "client_secret": client_secret}
    credentials |= filled(publishable_key=publishable_key)
    return await CONFIGS.create(svc, {"name": name, "provider": provider, "credentials": credentials})


async def update_config(
    svc: Service,
    id_or_name: str,
    *,
    name: str | None = None,
    client_secret: str | None = None,
    publishable_key: str | None = None,
) -> ProviderConfig:
    """Only what is given changes (``client_id`` is immutable)."""
    body = given(name=name)
    credentials = filled(client_secret=client_secret, publishable_key=publishable_key)
    if credentials:
        body["credentials"] = credentials
    return await CONFIGS.update(svc, id_or_name, body)
