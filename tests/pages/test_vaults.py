"""Vaults pages: browse vaults, items and events; create items; set and clear write-only values; delete."""

import logging

import pytest

from console.accounts.models import AuditLog

SECRET = "vault-pa55word-never-in-html"


def url(path=""):
    return f"/o/acme/vaults/{path}"


def changes(tenant):
    return [
        r
        for r in tenant.requests()
        if r["method"] in ("POST", "PUT", "PATCH", "DELETE") and r["path"].startswith("/vaults")
    ]


@pytest.fixture
def vault(tenant):
    made = tenant.call("POST", "/vaults", json={"name": "checkout"}).json()
    spec = {
        "provider": "kernel",
        "fields": [
            {"name": "username", "type": "email", "value": "buyer@example.com"},
            {"name": "password", "type": "password", "value": SECRET},
        ],
    }
    tenant.call("PUT", "/vaults/checkout/items/login", json={"type": "credential", "spec": spec})
    return made


async def test_it_lists_vaults_with_the_plans_count(viewer_client, vault):
    body = (await viewer_client.get(url())).content.decode()
    assert "checkout" in body and "1 of 20 vaults" in body and "New vault" not in body


async def test_it_shows_items_and_fields_without_sensitive_values(viewer_client, vault):
    detail = (await viewer_client.get(url(f"{vault['id']}/"))).content.decode()
    assert "login" in detail and "ready" in detail and SECRET not in detail
    item = (await viewer_client.get(url(f"{vault['id']}/items/login/"))).content.decode()
    assert "buyer@example.com" in item and "write-only" in item and SECRET not in item
    assert "item.created" in item and "Set or clear" not in item


async def test_it_creates_a_vault_and_an_item_without_echoing_or_auditing_values(
    admin_client, tenant, caplog
):
    caplog.set_level(logging.DEBUG)
    created = await admin_client.post(url(), {"name": "ops"})
    assert created.status_code == 302
    made = tenant.call("GET", "/vaults/ops").json()
    form = {
        "key": "grafana",
        "description": "dashboards",
        "fields_spec": "username text\npassword password",
        "values": f"username: admin\npassword: {SECRET}",
    }
    response = await admin_client.post(url(f"{made['id']}/"), form)
    assert response.status_code == 302
    item = tenant.call("GET", "/vaults/ops/items/grafana").json()
    assert item["state"]["fields"]["password"] == {"has_value": True}
    entry = await AuditLog.objects.aget(action="vault.item.create")
    assert SECRET not in entry.detail and "password" in entry.detail
    assert SECRET not in caplog.text


async def test_it_refuses_bad_item_input_without_echoing_values_or_calling_the_service(
    admin_client, tenant, vault
):
    before = len(changes(tenant))
    form = {"key": "bad key", "fields_spec": "password pass", "values": f"nope {SECRET}"}
    body = (await admin_client.post(url(f"{vault['id']}/"), form)).content.decode()
    assert "Letters, digits" in body and "Line 1" in body and SECRET not in body
    assert len(changes(tenant)) == before


async def test_it_sets_and_clears_a_value_and_records_it(admin_client, tenant, vault):
    response = await admin_client.post(
        url(f"{vault['id']}/items/login/"), {"field": "password", "value": "n3w-" + SECRET}
    )
    assert response.status_code == 302
    page = (await admin_client.get(url(f"{vault['id']}/items/login/"))).content.decode()
    assert "item.fields_set" in page and SECRET not in page
    cleared = await admin_client.post(url(f"{vault['id']}/items/login/"), {"field": "username", "value": ""})
    assert cleared.status_code == 302
    item = tenant.call("GET", "/vaults/checkout/items/login").json()
    assert item["state"]["fields"]["username"] == {"has_value": False, "value": None}
    details = [e.detail async for e in AuditLog.objects.filter(action="vault.item.update")]
    assert sorted(details) == ["login: password set", "login: username cleared"]


async def test_it_explains_a_concurrent_change(admin_client, tenant, vault):
    tenant.fault(method="PATCH", path="^/vaults/", status=409, message="the item is at version 3, not 1")
    body = (
        await admin_client.post(url(f"{vault['id']}/items/login/"), {"field": "password", "value": "x"})
    ).content.decode()
    assert "changed this item meanwhile" in body


async def test_it_deletes_items_and_vaults_after_confirmation(admin_client, tenant, vault):
    assert (
        "Delete item" in (await admin_client.get(url(f"{vault['id']}/items/login/delete/"))).content.decode()
    )
    assert (await admin_client.post(url(f"{vault['id']}/items/login/delete/"))).status_code == 302
    assert tenant.call("GET", "/vaults/checkout/items/login").status_code == 404
    assert "Delete vault" in (await admin_client.get(url(f"{vault['id']}/delete/"))).content.decode()
    assert (await admin_client.post(url(f"{vault['id']}/delete/"))).status_code == 302
    assert tenant.call("GET", "/vaults").json() == []
    assert await AuditLog.objects.filter(action="vault.delete").aexists()


async def test_viewers_and_operators_cannot_change_vaults(viewer_client, operator_client, tenant, vault):
    before = len(changes(tenant))
    for client in (viewer_client, operator_client):
        assert (await client.post(url(), {"name": "x"})).status_code == 403
        assert (
            await client.post(url(f"{vault['id']}/"), {"key": "k", "fields_spec": "a text"})
        ).status_code == 403
        assert (
            await client.post(url(f"{vault['id']}/items/login/"), {"field": "password", "value": "x"})
        ).status_code == 403
        assert (await client.get(url(f"{vault['id']}/delete/"))).status_code == 403
    assert len(changes(tenant)) == before


async def test_outsiders_see_nothing(outsider_client, vault):
    for path in ("", f"{vault['id']}/", f"{vault['id']}/items/login/"):
        assert (await outsider_client.get(url(path))).status_code == 404


async def test_it_says_when_the_plan_has_no_vaults(viewer_client, tenant):
    import json

    entitlements = {
        "features": {"vaults": {"enabled": False}, "brand_new": {"enabled": True}},
        "plan": {"id": "FREE"},
    }
    assert "does not include vaults" not in (await viewer_client.get(url())).content.decode()
    tenant.fault(method="GET", path="^/org/entitlements$", status=200, body=json.dumps(entitlements))
    body = (await viewer_client.get(url())).content.decode()
    assert "does not include vaults" in body
