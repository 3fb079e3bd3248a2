"""Proxies: create per type, rename, soft delete and health checks (notes §11).

A custom proxy's password (and CA bundle) is write-only: it goes out once in the create body and never
comes back; the record says ``has_password`` / ``has_ca_bundle`` instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from console.service.collection import Collection
from console.service.contract import LEGACY_PROXY_TYPES
from console.service.http import Service
from console.service.records import Record

__all__ = [
    "Proxy",
    "check_proxy",
    "create_proxy",
    "delete_proxy",
    "get_proxy",
    "list_proxies",
    "rename_proxy",
]

# Types whose exit IP is stable, so a check against a target predicts what sessions will see.
STABLE_EXIT_TYPES = frozenset({"datacenter", "isp", "custom"})


class Proxy(Record):
    type: str
    id: str | None = None
    name: str | None = None
    protocol: str | None = None
    bypass_hosts: list[str] | None = None
    config: dict[str, Any] | None = None
    ip_address: str | None = None
    last_checked: datetime | None = None
    status: str | None = None  # available | unavailable; None until the first check

    @property
    def available(self) -> bool:
        return self.status == "available"

    @property
    def stable_exit(self) -> bool:
        return self.type in STABLE_EXIT_TYPES

    @property
    def legacy(self) -> bool:
        """A record of a type the service no longer creates."""
        return self.type in LEGACY_PROXY_TYPES

    @property
    def endpoint(self) -> str | None:
        """``host:port`` of a custom proxy."""
        config = self.config or {}
        if not config.get("host"):
            return None
        return f"{config['host']}:{config['port']}" if config.get("port") else str(config["host"])


PROXIES = Collection("/proxies", Proxy, filters=("name", "query"))
list_proxies = PROXIES.list
get_proxy = PROXIES.get


async def create_proxy(
    svc: Service,
    *,
    type: str,
    name: str | None = None,
    protocol: str | None = None,
    bypass_hosts: list[str] | None = None,
    config: dict[str, Any] | None = None,
) -> Proxy:
    """Empty config values are left out, so the service applies its defaults (country US)."""
    body: dict[str, Any] = {"type": type}
    if name:
        body["name"] = name
    if protocol:
        body["protocol"] = protocol
    if bypass_hosts:
        body["bypass_hosts"] = list(bypass_hosts)
    cleaned = {k: v for k, v in (config or {}).items() if v not in (None, "")}
    if cleaned:
        body["config"] = cleaned
    return await PROXIES.create(svc, body)


async def rename_proxy(svc: Service, proxy_id: str, name: str) -> Proxy:
    """The only change a proxy takes; names need not be unique."""
    return await PROXIES.update(svc, proxy_id, {"name": name})


async def delete_proxy(svc: Service, proxy_id: str) -> None:
    """Soft delete: sessions that reference the proxy keep it."""
    await PROXIES.delete(svc, proxy_id)


async def check_proxy(svc: Service, proxy_id: str, *, url: str | None = None) -> Proxy:
    """Run a health check; the answer is the proxy record carrying the check's outcome.

    With ``url`` the target is tested too (from the stable exit IP of datacenter and ISP proxies;
    residential and mobile only validate configuration and connectivity) and the proxy's recorded
    health does not change.
    """
    body = {"url": url} if url else {}
    return await PROXIES.call(svc, "POST", PROXIES.at(proxy_id, "/check"), json=body)
