"""Releasing several leased browsers of a pool: selection, one confirmation, one audit row each."""

import re

import pytest

from console.accounts.models import AuditLog


@pytest.fixture
def pool(tenant):
    response = tenant.call("POST", "/browser_pools", json={"name": "warm", "size": 3})
    assert response.status_code in (200, 201), response.text
    tenant.advance(600)  # warm
    return response.json()


def url(pool, path=""):
    return f"/o/acme/pools/{pool['id']}/{path}"


def lease(tenant, pool, **body):
    response = tenant.call("POST", f"/browser_pools/{pool['id']}/acquire", json=body)
    assert response.status_code == 200, response.text
    return response.json()["session_id"]


def releases(tenant, pool):
    path = f"/browser_pools/{pool['id']}/release"
    return [r for r in tenant.requests() if r["method"] == "POST" and r["path"] == path]


def acquired(tenant, pool) -> int:
    return tenant.call("GET", f"/browser_pools/{pool['id']}").json()["acquired_count"]


async def test_it_puts_a_checkbox_on_each_lease_for_operators_only(
    operator_client, viewer_client, tenant, pool
):
    sid = lease(tenant, pool)
    body = (await operator_client.get(url(pool))).content.decode()
    assert f'name="session_id" value="{sid}" form="pool-release-bulk"' in body
    assert f'action="{url(pool, "release-selected/")}"' in body and "Release selected…" in body
    body = (await viewer_client.get(url(pool))).content.decode()
    assert sid in body and "Release selected" not in body and 'form="pool-release-bulk"' not in body


async def test_it_refuses_viewers_and_sends_nothing(viewer_client, tenant, pool):
    sid = lease(tenant, pool)
    response = await viewer_client.post(
        url(pool, "release-selected/"), {"session_id": [sid], "confirm": "yes"}
    )
    assert response.status_code == 403
    assert releases(tenant, pool) == [] and acquired(tenant, pool) == 1


async def test_it_confirms_first_listing_each_lease(operator_client, tenant, pool):
    first, second = lease(tenant, pool, name="first"), lease(tenant, pool, name="second")
    response = await operator_client.post(url(pool, "release-selected/"), {"session_id": [first, second]})
    body = response.content.decode()
    assert response.status_code == 200
    assert "Release 2 leased browsers?" in body and "first" in body and "second" in body
    assert re.search(r'<input type="checkbox" name="reuse"[^>]* checked[ >]', body)
    assert releases(tenant, pool) == [] and acquired(tenant, pool) == 2
    assert not await AuditLog.objects.filter(action="pool.release").aexists()


async def test_it_releases_each_with_one_audit_row_each(operator_client, tenant, pool, operator):
    sids = [lease(tenant, pool) for _ in range(3)]
    body = {"session_id": sids, "confirm": "yes"}  # reuse unticked: destroy them
    response = await operator_client.post(
        url(pool, "release-selected/"),
        body,
        headers={"HX-Request": "true", "HX-Target": "pool-release-selected"},
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="pool-release-selected"')
    assert "Released 3 of 3 browsers" in page and "Destroyed; the pool warms a replacement." in page
    assert "pool-changed" in response["HX-Trigger"]
    assert acquired(tenant, pool) == 0
    assert len(releases(tenant, pool)) == 3
    entries = [e async for e in AuditLog.objects.filter(action="pool.release")]
    assert len(entries) == 3 and {e.target_id for e in entries} == {pool["id"]}
    assert sorted(e.detail for e in entries) == sorted(f"session {s} reuse=False (bulk)" for s in sids)
    assert {e.outcome for e in entries} == {"ok"} and {e.actor_id for e in entries} == {operator.pk}


async def test_it_returns_them_to_the_pool_when_reuse_is_ticked(operator_client, tenant, pool):
    sids = [lease(tenant, pool) for _ in range(2)]
    body = {"session_id": sids, "confirm": "yes", "reuse": "on"}
    page = (await operator_client.post(url(pool, "release-selected/"), body)).content.decode()
    assert "Released 2 of 2 browsers" in page and "Returned to the pool." in page
    state = tenant.call("GET", f"/browser_pools/{pool['id']}").json()
    assert state["acquired_count"] == 0 and state["available_count"] == 3


async def test_it_skips_a_lease_released_meanwhile_and_releases_the_others(operator_client, tenant, pool):
    gone, kept = lease(tenant, pool), lease(tenant, pool)
    tenant.call("POST", f"/browser_pools/{pool['id']}/release", json={"session_id": gone})
    before = len(releases(tenant, pool))
    body = {"session_id": [gone, kept], "confirm": "yes", "reuse": "on"}
    page = (await operator_client.post(url(pool, "release-selected/"), body)).content.decode()
    assert "Released 1 of 2 browsers" in page and "Not leased from this pool" in page
    assert len(releases(tenant, pool)) == before + 1  # nothing sent for the one already released
    assert acquired(tenant, pool) == 0
    assert [e.detail async for e in AuditLog.objects.filter(action="pool.release")] == [
        f"session {kept} reuse=True (bulk)"
    ]


async def test_it_reports_a_failed_release_per_row_and_goes_on(operator_client, tenant, pool):
    sids = [lease(tenant, pool) for _ in range(2)]
    tenant.fault(
        method="POST", path=f"^/browser_pools/{pool['id']}/release$", status=500, message="rack down"
    )
    body = {"session_id": sids, "confirm": "yes", "reuse": "on"}
    page = (await operator_client.post(url(pool, "release-selected/"), body)).content.decode()
    assert "Released 1 of 2 browsers" in page and "1 could not be released" in page and "rack down" in page
    assert acquired(tenant, pool) == 1
    outcomes = sorted([e.outcome async for e in AuditLog.objects.filter(action="pool.release")])
    assert outcomes == ["error", "ok"]


async def test_it_sends_nothing_for_sessions_not_leased_from_this_pool(operator_client, tenant, pool):
    other = tenant.call("POST", "/browser_pools", json={"name": "other", "size": 1}).json()
    tenant.advance(600)
    theirs = lease(tenant, other)
    on_demand = tenant.call("POST", "/browsers", json={}).json()["session_id"]
    mine = lease(tenant, pool)
    body = {"session_id": [theirs, on_demand, mine, "x y"], "confirm": "yes", "reuse": "on"}
    page = (await operator_client.post(url(pool, "release-selected/"), body)).content.decode()
    assert "Released 1 of 4 browsers" in page
    assert page.count("Not leased from this pool") == 2 and "Not a session id" in page
    assert len(releases(tenant, pool)) == 1 and releases(tenant, other) == []
    assert acquired(tenant, other) == 1


async def test_it_answers_404_for_a_missing_pool(operator_client, tenant):
    response = await operator_client.post("/o/acme/pools/pool_nope/release-selected/", {"session_id": ["a"]})
    assert response.status_code == 404
