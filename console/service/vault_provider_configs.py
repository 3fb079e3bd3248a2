"""Vault provider configurations: the organization's own OAuth clients for the payment providers of card
and wallet vault items (SDK 0.131 ``vault_provider_configs``: ``link``, ``agentcard``). ``client_secret`` is
write-only: it goes out in create and update bodies and never comes back.
"""

from __future__ import annotations

from datetime import datetime

from console.service.http import Service, path_segment, request
from console.service.pagination import Page, fetch_page
from console.service.records import Record

__all__ = ["ProviderConfig", "create_config", "delete_config", "get_config", "list_configs", "update_config"]

PATH = "/vault-provider-configs"
PROVIDERS = ("link", "agentcard")


class ProviderConfig(Record):
    id: str
    name: str | None = None
    provider: str | None = None
    client_id: str | None = None
    publishable_key: str | None = None
    test_mode: bool | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def label(self) -> str:
        return self.name or self.id


def _path(id_or_name: str) -> str:
    return f"{PATH}/{path_segment(id_or_name)}"


async def list_configs(svc: Service, *, limit: int = 20, offset: int = 0) -> Page[ProviderConfig]:
    return await fetch_page(svc, PATH, ProviderConfig, limit=limit, offset=offset)


async def get_config(svc: Service, id_or_name: str) -> ProviderConfig:
    return ProviderConfig.from_json((await request(svc, "GET", _path(id_or_name))).data)


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
    if publishable_key:
        credentials["publishable_key"] = publishable_key
    body = {"name": name, "provider": provider, "credentials": credentials}
    return ProviderConfig.from_json((await request(svc, "POST", PATH, json=body)).data)


async def update_config(
    svc: Service,
    id_or_name: str,
    *,
    name: str | None = None,
    client_secret: str | None = None,
    publishable_key: str | None = None,
) -> ProviderConfig:
    """Only what is given changes (``client_id`` is immutable)."""
    body: dict = {}
    if name is not None:
        body["name"] = name
    credentials = {
        k: v for k, v in (("client_secret", client_secret), ("publishable_key", publishable_key)) if v
    }
    if credentials:
        body["credentials"] = credentials
    return ProviderConfig.from_json((await request(svc, "PATCH", _path(id_or_name), json=body)).data)


async def delete_config(svc: Service, id_or_name: str) -> None:
    await request(svc, "DELETE", _path(id_or_name), expect="none")
