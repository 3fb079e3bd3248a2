"""Credential providers pages: list, add (token write-only), edit, test, items search, delete, picker."""

import logging

import pytest

from console.accounts.models import AuditLog

TOKEN = "ops_" + "t0k3n5ecr3t" * 3


def url(path=""):
    return f"/o/acme/credential_providers/{path}"


def changes(tenant):
    return [
        r
        for r in tenant.requests()
        if r["method"] in ("POST", "PATCH", "DELETE") and r["path"].startswith("/org/credential_providers")
    ]


@pytest.fixture
def provider(tenant):
    body = {"name": "1password-ops", "provider_type": "onepassword", "token": TOKEN}
    return tenant.call("POST", "/org/credential_providers", json=body).json()


async def test_it_lists_providers(viewer_client, provider):
    body = (await viewer_client.get(url())).content.decode()
    assert "1password-ops" in body and "1Password" in body and "enabled" in body
    assert TOKEN not in body and "Add provider" not in body


async def test_it_adds_a_provider_without_echoing_logging_or_auditing_the_token(admin_client, tenant, caplog):
    caplog.set_level(logging.DEBUG)
    form = {"name": "vault", "provider_type": "onepassword", "token": TOKEN, "cache_ttl_seconds": "300"}
    response = await admin_client.post(url("new/"), form)
    assert response.status_code == 302
    made = tenant.call("GET", "/org/credential_providers").json()[0]
    entry = await AuditLog.objects.aget(action="credential_provider.create")
    assert entry.target_id == made["id"] and TOKEN not in entry.detail
    assert TOKEN not in caplog.text
    page = (await admin_client.get(url(f"{made['id']}/"))).content.decode()
    assert TOKEN not in page and "write-only" in page


async def test_it_refuses_a_bad_token_without_echoing_it_or_calling_the_service(admin_client, tenant):
    bad = "not-a-1password-token-secret"
    response = await admin_client.post(
        url("new/"), {"name": "v", "provider_type": "onepassword", "token": bad, "cache_ttl_seconds": "300"}
    )
    body = response.content.decode()
    assert "starts with ops_" in body and bad not in body
    assert changes(tenant) == []


async def test_it_searches_items_and_tests_the_connection(admin_client, provider):
    items = await admin_client.get(
        url(f"{provider['id']}/"),
        {"q": "shop"},
        headers={"HX-Request": "true", "HX-Target": "provider-items"},
    )
    body = items.content.decode()
    assert body.lstrip().startswith('<section class="card" id="provider-items">')
    assert "Shop/Stripe Dashboard" in body and "Engineering/GitHub" not in body
    tested = await admin_client.post(
        url(f"{provider['id']}/test/"), headers={"HX-Request": "true", "HX-Target": "provider-test"}
    )
    assert "Connected: 2 vaults readable" in tested.content.decode()
    assert await AuditLog.objects.filter(action="credential_provider.test", outcome="ok").aexists()


async def test_it_says_when_the_provider_refuses_its_token(admin_client, tenant):
    body = {"name": "old", "provider_type": "onepassword", "token": "ops_revoked_" + "r" * 20}
    made = tenant.call("POST", "/org/credential_providers", json=body).json()
    page = (await admin_client.get(url(f"{made['id']}/"))).content.decode()
    assert "refused the provider" in page
    tested = await admin_client.post(url(f"{made['id']}/test/"))
    assert "The provider refused" in tested.content.decode()


async def test_it_edits_and_changes_the_token_write_only(admin_client, tenant, provider):
    new_token = "ops_" + "n3wt0k3n" * 4
    form = {"name": "1password-ops", "priority": "2", "token": new_token}
    response = await admin_client.post(url(f"{provider['id']}/"), form)
    assert response.status_code == 302
    after = tenant.call("GET", f"/org/credential_providers/{provider['id']}").json()
    assert (after["priority"], after["enabled"]) == (2, False)
    entry = await AuditLog.objects.aget(action="credential_provider.update")
    assert new_token not in entry.detail and "token" in entry.detail


async def test_it_deletes_after_confirmation(admin_client, tenant, provider):
    assert "Delete provider" in (await admin_client.get(url(f"{provider['id']}/delete/"))).content.decode()
    assert (await admin_client.post(url(f"{provider['id']}/delete/"))).status_code == 302
    assert tenant.call("GET", f"/org/credential_providers/{provider['id']}").status_code == 404


async def test_it_explains_when_the_service_refuses_a_delete(admin_client, tenant, provider):
    tenant.fault(method="DELETE", path="^/org/credential_providers/", status=409, message="still in use")
    response = await admin_client.post(url(f"{provider['id']}/delete/"))
    assert response.status_code == 200 and "still in use" in response.content.decode()
    assert await AuditLog.objects.filter(action="credential_provider.delete", outcome="error").aexists()


@pytest.mark.parametrize("path", ["new/", "{id}/test/", "{id}/delete/"])
async def test_it_forbids_viewers_and_operators_to_change_providers(
    viewer_client, operator_client, provider, path
):
    target = url(path.format(id=provider["id"]))
    for client in (viewer_client, operator_client):
        assert (await client.post(target, {"name": "x"})).status_code == 403
    assert (
        await viewer_client.post(url(f"{provider['id']}/"), {"name": "x", "priority": "1"})
    ).status_code == 403


async def test_it_hides_every_page_from_outsiders(outsider_client, provider):
    for path in ("", "new/", "picker/", f"{provider['id']}/", f"{provider['id']}/delete/"):
        assert (await outsider_client.get(url(path))).status_code == 404


async def test_the_picker_page_works_without_javascript(viewer_client, provider):
    body = (await viewer_client.get(url("picker/"), {"q": "github"})).content.decode()
    assert "1password-ops::Engineering/GitHub" in body and "Stripe" not in body
