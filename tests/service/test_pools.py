"""console.service.pools against the sandbox (spec: Browser pool; notes §7)."""

import http.server
import json
from urllib.parse import parse_qs, urlsplit

import pytest

from console.service import CapReached, Conflict, Invalid, NotFound, Service, browsers, pools, profiles
from tests.listener import serving


async def test_it_creates_and_reads_a_pool_with_its_configuration(service):
    profile = await profiles.create_profile(service, "shop")
    created = await pools.create_pool(
        service,
        size=4,
        name="warm",
        stealth=True,
        profile={"id": profile.id},
        viewport={"width": 1280, "height": 800, "refresh_rate": 60},
        chrome_policy={"BlockThirdPartyCookies": True},
        telemetry={"enabled": True, "browser": {"console": {"enabled": True}}},
    )
    assert created.id.startswith("pool_")
    pool = await pools.get_pool(service, "warm")
    assert pool.size == 4
    assert (pool.available_count, pool.acquired_count, pool.warming) == (0, 0, 4)
    config = pool.config
    assert config.stealth and not config.headless
    assert config.profile.label == "shop"
    assert config.refresh_on_profile_update
    assert str(config.viewport) == "1280\u00d7800 @ 60 Hz"
    assert config.chrome_policy == {"BlockThirdPartyCookies": True}
    assert config.telemetry_categories["console"] is True
    assert config.telemetry_categories["control"] is True  # operational categories default on
    assert config.telemetry_categories["screenshot"] is False


async def test_it_maps_validation_errors_to_fields(service):
    with pytest.raises(Invalid) as caught:
        await pools.create_pool(service, size=0, timeout_seconds=1)
    assert set(caught.value.field_errors) == {"size", "timeout_seconds"}


async def test_it_acquires_releases_and_flushes(service, tenant):
    pool = await pools.create_pool(service, size=2, name="lease")
    assert await pools.acquire(service, "lease", timeout_seconds=0) is None  # 204: still warming
    tenant.advance(600)
    session = await pools.acquire(service, "lease", timeout_seconds=0, name="mine", tags={"t": "1"})
    assert session.session_id
    assert session.pool.id == pool.id
    assert session.cdp_ws_url.startswith("wss://")
    assert (await pools.get_pool(service, pool.id)).acquired_count == 1
    await pools.release(service, pool.id, session.session_id, reuse=False)
    after = await pools.get_pool(service, pool.id)
    assert (after.available_count, after.acquired_count) == (1, 0)
    await pools.flush(service, pool.id)
    assert (await pools.get_pool(service, pool.id)).available_count == 0


async def test_it_updates_and_discards_idle_browsers(service, tenant):
    pool = await pools.create_pool(service, size=2)
    tenant.advance(600)
    updated = await pools.update_pool(service, pool.id, headless=True, name="renamed")
    assert updated.config.headless and updated.name == "renamed"
    assert updated.available_count == 2
    discarded = await pools.update_pool(service, pool.id, discard_all_idle=True)
    assert discarded.available_count == 0


async def test_it_deletes_with_and_without_force(service, tenant):
    pool = await pools.create_pool(service, size=1)
    tenant.advance(600)
    await pools.acquire(service, pool.id, timeout_seconds=0)
    with pytest.raises(Conflict) as caught:
        await pools.delete_pool(service, pool.id)
    assert caught.value.code == "pool_in_use"
    await pools.delete_pool(service, pool.id, force=True)
    with pytest.raises(NotFound):
        await pools.get_pool(service, pool.id)


async def test_it_lists_a_page_and_sums_the_pooled_capacity(service):
    for n in range(3):
        await pools.create_pool(service, size=n + 1, name=f"p{n}")
    page = await pools.list_pools(service, limit=2)
    assert [p.name for p in page] == ["p0", "p1"]
    assert page.has_more
    pooled = await pools.pooled_capacity(service)
    assert (pooled.size, pooled.complete, pooled.counted) == (6, True, 3)


def endless_pools(asked: list[str]):
    """A service whose pool list always says "more", one pool of size 2 a page, each page a new offset."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            offset = int(parse_qs(urlsplit(self.path).query).get("offset", ["0"])[0])
            body = json.dumps([{"id": f"pool_{offset}", "browser_pool_config": {"size": 2}}]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Has-More", "true")
            self.send_header("X-Next-Offset", str(offset + 1))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return serving(Handler)


async def test_it_stops_summing_pools_at_its_bound_and_says_the_sum_is_a_floor():
    asked: list[str] = []
    with endless_pools(asked) as url:
        svc = Service(base_url=url, api_key="k", allow_private=True)
        capacity = await pools.pooled_capacity(svc)
    assert len(asked) == pools.POOLED_PAGES <= 10  # not 10 000 requests for one page view
    assert (capacity.size, capacity.complete, capacity.counted) == (
        2 * pools.POOLED_PAGES,
        False,
        pools.POOLED_PAGES,
    )


async def test_it_raises_cap_reached_over_the_project_cap(service, tenant):
    tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 3})
    with pytest.raises(CapReached) as caught:
        await pools.create_pool(service, size=4)
    assert (caught.value.code, caught.value.cap) == (
        "concurrent_sessions_limit_exceeded",
        "max_concurrent_sessions",
    )
    # Refused creates are never retried (the sandbox saw one POST).
    assert [r["method"] for r in tenant.requests() if r["path"] == "/browser_pools"] == ["POST"]


async def test_it_lists_the_leased_sessions_of_a_pool(service, tenant):
    warm = await pools.create_pool(service, size=3, name="leases")
    other = await pools.create_pool(service, size=2, name="leases-too")
    tenant.advance(600)
    first = await pools.acquire(service, warm.id, timeout_seconds=0, name="one")
    await pools.acquire(service, other.id, timeout_seconds=0)
    await browsers.create_session(service, name="leases on demand")
    page = await pools.leased_sessions(service, warm)
    assert [s.session_id for s in page.items] == [first.session_id]
    assert page.items[0].name == "one"
