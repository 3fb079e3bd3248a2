"""Browser pools: warm, identically configured browsers to lease (spec: Browser pool; notes §7).

``acquire`` long-polls: the service answers 204 when no browser became free within the timeout, which
this client returns as None. Pooled browsers load their profile read-only (a ``save_changes`` setting is
ignored by the service, so it is never sent).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from console.service.browsers import Ref, Viewport
from console.service.collection import Collection
from console.service.contract import CAPTURE_CATEGORIES
from console.service.http import READ_TIMEOUT, Service, request
from console.service.pagination import Page, fetch_page
from console.service.records import Count, Id, Named, Record, Seconds, obj

__all__ = [
    "BrowserPool",
    "BrowserSession",
    "PoolConfig",
    "acquire",
    "create_pool",
    "delete_pool",
    "flush",
    "get_pool",
    "leased_sessions",
    "list_pools",
    "pooled_capacity",
    "release",
    "update_pool",
]

DEFAULT_ACQUIRE_TIMEOUT = 10


class PoolConfig(Record):
    size: Count | None = None
    name: str | None = None
    fill_rate_per_minute: Count | None = None
    timeout_seconds: Seconds | None = None
    stealth: bool = False
    headless: bool = False
    kiosk_mode: bool = False
    profile: Ref | None = None
    refresh_on_profile_update: bool = False
    extensions: list[Ref] = field(default_factory=list)
    proxy_id: str | None = None
    viewport: Viewport | None = None
    chrome_policy: dict[str, Any] | None = None
    start_url: str | None = None
    network: dict[str, Any] | None = None
    telemetry: dict[str, Any] | None = None

    @property
    def chrome_policy_json(self) -> str:
        return json.dumps(self.chrome_policy, indent=2, sort_keys=True) if self.chrome_policy else ""

    @property
    def telemetry_categories(self) -> dict[str, bool]:
        """Each category and whether it is captured (all off when telemetry is off)."""
        telemetry = obj(self.telemetry)
        browser = obj(telemetry.get("browser"))
        enabled = telemetry.get("enabled", bool(browser))
        return {c: bool(enabled and obj(browser.get(c)).get("enabled")) for c in CAPTURE_CATEGORIES}


class BrowserPool(Named):
    region: str | None = None
    created_at: datetime | None = None
    available_count: Count = 0
    acquired_count: Count = 0
    browser_pool_config: PoolConfig | None = None
    profile_id: str | None = None
    extension_ids: list[Id] = field(default_factory=list)

    @property
    def config(self) -> PoolConfig:
        return self.browser_pool_config or PoolConfig()

    @property
    def size(self) -> int:
        return self.config.size or 0

    @property
    def warming(self) -> int:
        """Browsers the pool is still starting to reach its size."""
        return max(0, self.size - self.available_count - self.acquired_count)

    @property
    def acquired_permille(self) -> int:
        """Share of the size that is leased, in thousandths (for a capacity bar)."""
        return min(1000, round(1000 * self.acquired_count / self.size)) if self.size else 0

    @property
    def available_permille(self) -> int:
        if not self.size:
            return 0
        return min(1000 - self.acquired_permille, round(1000 * self.available_count / self.size))


class BrowserSession(Record):
    """The session a pool hands out (notes §2); the browsers pages show the rest of it."""

    session_id: str
    cdp_ws_url: str | None = None
    webdriver_ws_url: str | None = None
    created_at: datetime | None = None
    headless: bool = False
    stealth: bool = False
    memory: str | None = None
    region: str | None = None
    timeout_seconds: Seconds | None = None
    base_url: str | None = None
    browser_live_view_url: str | None = None
    name: str | None = None
    tags: dict[str, str] | None = None
    pool: Ref | None = None
    profile: dict[str, Any] | None = None
    deleted_at: datetime | None = None


POOLS = Collection("/browser_pools", BrowserPool, filters=("name", "query", "region"))
list_pools = POOLS.list
get_pool = POOLS.get


POOLED_PAGES = 10
POOLED_PAGE_LIMIT = 100


@dataclass(frozen=True)
class PooledCapacity:
    """The sum of the pools' sizes; ``complete`` is False when the walk stopped at ``POOLED_PAGES`` pages
    while the service still said "more": then ``size`` is a lower bound (at least this many)."""

    size: int
    complete: bool
    counted: int = 0  # pools added up


async def pooled_capacity(svc: Service) -> PooledCapacity:
    """The sum of every pool's size in the project: what pools reserve against the concurrency cap.

    A total cannot come from one page, so it walks pages, but at most ``POOLED_PAGES`` of
    ``POOLED_PAGE_LIMIT`` (1 000 pools; projects hold a handful): a broken or hostile service that always
    says "more" costs ten requests per page view, not ten thousand, and the page says "at least".
    """
    size, counted, offset, seen = 0, 0, None, set()
    for _ in range(POOLED_PAGES):
        page = await POOLS.list(svc, limit=POOLED_PAGE_LIMIT, offset=offset)
        size += sum(pool.size for pool in page.items)
        counted += len(page.items)
        if not page.has_more or page.next_offset in seen:
            return PooledCapacity(size=size, complete=True, counted=counted)
        seen.add(page.next_offset)
        offset = page.next_offset
    return PooledCapacity(size=size, complete=False, counted=counted)


LEASES_LIMIT = 100


async def leased_sessions(svc: Service, pool: BrowserPool) -> Page[BrowserSession]:
    """The pool's leased browsers among the first ``LEASES_LIMIT`` active sessions.

    The service has no lease list: a leased session carries ``pool``, and ``GET /browsers?query=`` matches
    pool names (notes §2), so a named pool narrows the search; the ``pool.id`` check decides.
    """
    params = {"status": "active", "query": pool.name or None}
    page = await fetch_page(svc, "/browsers", BrowserSession, limit=LEASES_LIMIT, offset=0, params=params)
    mine = [s for s in page.items if s.pool is not None and s.pool.id == pool.id]
    return Page(items=mine, has_more=page.has_more, next_offset=None, limit=LEASES_LIMIT, offset=0)


async def create_pool(svc: Service, *, size: int, **config: Any) -> BrowserPool:
    """``config``: the other PoolConfig fields in their wire shape (``profile={"id": ...}``, ...)."""
    body = {"size": size, **config}
    return await POOLS.create(svc, body)


async def update_pool(
    svc: Service, id_or_name: str, *, discard_all_idle: bool = False, **config: Any
) -> BrowserPool:
    """PATCH: only given fields change; ``""``/``[]``/``{}`` clear (``profile={"id": ""}`` too)."""
    body = {**config, "discard_all_idle": True} if discard_all_idle else dict(config)
    return await POOLS.update(svc, id_or_name, body)


async def delete_pool(svc: Service, id_or_name: str, *, force: bool = False) -> None:
    """409 while browsers are leased, unless ``force`` (which terminates them)."""
    await request(svc, "DELETE", POOLS.at(id_or_name), json={"force": force}, expect="none")


async def acquire(
    svc: Service,
    id_or_name: str,
    *,
    timeout_seconds: int = DEFAULT_ACQUIRE_TIMEOUT,
    name: str | None = None,
    tags: dict[str, str] | None = None,
    start_url: str | None = None,
) -> BrowserSession | None:
    """Lease a browser, waiting up to ``timeout_seconds``; None when none became free (204)."""
    body: dict[str, Any] = {"acquire_timeout_seconds": timeout_seconds}
    body.update({k: v for k, v in {"name": name, "tags": tags, "start_url": start_url}.items() if v})
    reply = await request(
        svc, "POST", POOLS.at(id_or_name, "/acquire"), json=body, timeout=timeout_seconds + READ_TIMEOUT
    )
    if reply.status == 204 or not reply.data:
        return None
    return BrowserSession.from_json(reply.data)


async def release(svc: Service, id_or_name: str, session_id: str, *, reuse: bool = True) -> None:
    """Give a leased browser back (``reuse``) or have it destroyed."""
    body = {"session_id": session_id, "reuse": reuse}
    await request(svc, "POST", POOLS.at(id_or_name, "/release"), json=body, expect="none")


async def flush(svc: Service, id_or_name: str) -> None:
    """Destroy idle browsers; leased ones are untouched."""
    await request(svc, "POST", POOLS.at(id_or_name, "/flush"), expect="none")
