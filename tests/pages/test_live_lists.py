"""Lists that change on their own refresh themselves (static/js/live.js): each page carries the live note
naming its list, and the poll (the page's URL with ``HX-Target: <list id>``) answers the list partial with
the page's filters kept, to viewers too, with a stable id on every row."""

import re

import pytest

from tests.sandbox_fixtures import new_tenant

LISTS = {
    "browsers": ("browsers-table", "session-row-"),
    "invocations": ("invocations-table", "invocation-row-"),
    "deployments": ("deployments-table", "deployment-row-"),
    "auth": ("auth-table", "auth-row-"),
}


@pytest.fixture
def tenant(sandbox_url):
    """The demo tenant: sessions, invocations, deployments and auth connections in several states."""
    return new_tenant(sandbox_url, demo=True)


def poll(list_id):
    return {"HX-Request": "true", "HX-Target": list_id}


def statuses(body: str) -> set[str]:
    return set(re.findall(r"status-([a-z_]+)", body))


@pytest.mark.parametrize("section", LISTS)
async def test_it_puts_a_live_note_on_the_list_for_viewers(viewer_client, tenant, section):
    list_id, row_prefix = LISTS[section]
    response = await viewer_client.get(f"/o/acme/{section}/")
    body = response.content.decode()
    assert response.status_code == 200
    note = re.search(r'<p class="live-note"[^>]*>', body).group(0)
    assert f'data-live-list="{list_id}"' in note and 'data-live-seconds="5"' in note
    assert " hidden>" in note  # without the script the page says nothing it cannot keep
    assert "/static/js/live.js" in body
    assert f'<section id="{list_id}">' in body
    assert f'<tr id="{row_prefix}' in body


@pytest.mark.parametrize("section", LISTS)
async def test_it_answers_the_poll_with_the_list_partial(viewer_client, tenant, section):
    list_id, row_prefix = LISTS[section]
    response = await viewer_client.get(f"/o/acme/{section}/", headers=poll(list_id))
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith(f'<section id="{list_id}">')
    assert "live-note" not in body and "<html" not in body
    ids = re.findall(rf'<tr id="({row_prefix}[^"]+)"', body)
    assert ids and len(ids) == len(set(ids))


async def test_it_keeps_the_invocation_filters_when_polled(viewer_client, tenant):
    body = (
        await viewer_client.get(
            "/o/acme/invocations/", {"status": "failed"}, headers=poll("invocations-table")
        )
    ).content.decode()
    assert statuses(body) == {"failed"}


async def test_it_keeps_the_deployment_filters_when_polled(viewer_client, tenant):
    everything = (
        await viewer_client.get("/o/acme/deployments/", headers=poll("deployments-table"))
    ).content.decode()
    assert len(statuses(everything)) >= 2  # else the filter below would prove nothing
    wanted = sorted(statuses(everything))[0]
    body = (
        await viewer_client.get("/o/acme/deployments/", {"status": wanted}, headers=poll("deployments-table"))
    ).content.decode()
    assert statuses(body) == {wanted}


async def test_it_keeps_the_session_filters_and_shows_a_new_session_on_the_next_poll(viewer_client, tenant):
    async def listed(**params):
        response = await viewer_client.get("/o/acme/browsers/", params, headers=poll("browsers-table"))
        return set(re.findall(r'<tr id="session-row-([^"]+)"', response.content.decode()))

    before = await listed(q="fresh-one")
    assert before == set()
    made = tenant.call("POST", "/browsers", json={"name": "fresh-one", "timeout_seconds": 3600}).json()
    other = tenant.call("POST", "/browsers", json={"name": "unrelated", "timeout_seconds": 3600}).json()
    assert await listed(q="fresh-one") == {made["session_id"]}
    assert other["session_id"] in await listed()
    tenant.call("DELETE", f"/browsers/{made['session_id']}")
    assert await listed(q="fresh-one") == set()
    assert await listed(q="fresh-one", status="deleted") == {made["session_id"]}


async def test_it_keeps_the_auth_filters_when_polled(viewer_client, tenant):
    for domain, profile in (("crm.example.com", "sales"), ("erp.example.com", "billing")):
        response = tenant.call("POST", "/auth/connections", json={"domain": domain, "profile_name": profile})
        assert response.status_code in (200, 201), response.text
    body = (
        await viewer_client.get("/o/acme/auth/", {"domain": "erp.example.com"}, headers=poll("auth-table"))
    ).content.decode()
    assert "billing" in body and "sales" not in body


async def test_it_refreshes_a_pools_leases_from_their_own_part(viewer_client, tenant):
    pool = tenant.call("POST", "/browser_pools", json={"name": "live-leases", "size": 2}).json()
    tenant.advance(600)
    leased = tenant.call("POST", f"/browser_pools/{pool['id']}/acquire", json={}).json()
    page = (await viewer_client.get(f"/o/acme/pools/{pool['id']}/")).content.decode()
    note = re.search(r'<p class="live-note"[^>]*>', page).group(0)
    assert f'data-live-url="/o/acme/pools/{pool["id"]}/?part=pool-leases"' in note
    assert 'data-live-refresh-on="pool-changed"' in note
    part = await viewer_client.get(
        f"/o/acme/pools/{pool['id']}/", {"part": "pool-leases"}, headers=poll("pool-leases")
    )
    body = part.content.decode()
    assert body.lstrip().startswith('<section id="pool-leases"')
    assert f'<tr id="lease-row-{leased["session_id"]}">' in body
    assert 'name="session_id"' not in body  # viewers get no checkboxes
