"""Vault provider configs beside the credential providers: list, create, edit, delete; the client secret
never shown, logged or audited; roles; bad input never sent."""

import pytest

from console.accounts.models import AuditLog

SECRET = "link-client-secret-never-in-html"
VALID = {"name": "link-main", "provider": "link", "client_id": "cid_1", "client_secret": SECRET}


def url(path=""):
    return f"/o/acme/vault_provider_configs/{path}"


def changes(tenant):
    return [r for r in tenant.requests() if r["method"] != "GET" and r["path"].startswith("/vault-provider")]


@pytest.fixture
def config(tenant):
    body = {
        "name": "agent",
        "provider": "agentcard",
        "credentials": {"client_id": "c2", "client_secret": "sk_test_x"},
    }
    return tenant.call("POST", "/vault-provider-configs", json=body).json()


async def test_a_viewer_reads_the_configs_without_a_secret_and_cannot_change_them(
    viewer_client, tenant, config
):
    assert (
        "/vault_provider_configs/"
        in (await viewer_client.get("/o/acme/credential_providers/")).content.decode()
    )
    listing = (await viewer_client.get(url())).content.decode()
    assert "agent" in listing and "test" in listing and "New config" not in listing
    detail = (await viewer_client.get(url(f"{config['id']}/"))).content.decode()
    assert "sk_test_x" not in detail and "write-only" in detail
    before = len(changes(tenant))
    assert (await viewer_client.post(url("new/"), VALID)).status_code == 403
    assert (await viewer_client.post(url(f"{config['id']}/"), {"name": "x"})).status_code == 403
    assert (await viewer_client.post(url(f"{config['id']}/delete/"))).status_code == 403
    assert len(changes(tenant)) == before


async def test_it_refuses_a_publishable_key_on_agentcard_without_calling_the_service(admin_client, tenant):
    form = {**VALID, "provider": "agentcard", "publishable_key": "pk_1"}
    response = await admin_client.post(url("new/"), form)
    body = response.content.decode()
    assert "Only Link configurations" in body and SECRET not in body
    assert changes(tenant) == []


async def test_it_creates_edits_and_deletes_and_never_echoes_or_audits_the_secret(admin_client, tenant):
    assert (
        await admin_client.post(url("new/"), {**VALID, "publishable_key": "pk_live_1"})
    ).status_code == 302
    made = tenant.call("GET", "/vault-provider-configs").json()[0]
    assert made["publishable_key"] == "pk_live_1"
    taken = await admin_client.post(url("new/"), {**VALID, "name": "LINK-MAIN"})
    assert "exists" in taken.content.decode() and SECRET not in taken.content.decode()
    edited = await admin_client.post(
        url(f"{made['id']}/"), {"name": "link-2", "client_secret": "", "publishable_key": "pk_live_1"}
    )
    assert edited.status_code == 302
    patch = [r for r in changes(tenant) if r["method"] == "PATCH"]
    assert len(patch) == 1
    assert tenant.call("GET", f"/vault-provider-configs/{made['id']}").json()["name"] == "link-2"
    assert (await admin_client.post(url(f"{made['id']}/delete/"))).status_code == 302
    assert tenant.call("GET", "/vault-provider-configs").json() == []
    details = [d async for d in AuditLog.objects.values_list("detail", flat=True)]
    assert details and not any(SECRET in d for d in details)
