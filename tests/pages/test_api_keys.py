"""API keys pages: admins only; the secret shown exactly once, never stored, logged or audited."""

import logging

import pytest

from console.accounts.models import AuditLog


def url(path=""):
    return f"/o/acme/api_keys/{path}"


def mutations(tenant):
    """Changes made through the console (the fixture's create is the sandbox's first request)."""
    return [
        r
        for r in list(tenant.requests())[1:]
        if r["method"] != "GET" and r["path"].startswith("/org/api_keys")
    ]


@pytest.fixture
def key(tenant):
    return tenant.call("POST", "/org/api_keys", json={"name": "ci-pipeline", "days_to_expire": 90}).json()


async def test_it_lists_keys_masked_with_scope_and_expiry(admin_client, tenant, key):
    body = (await admin_client.get(url())).content.decode()
    assert "ci-pipeline" in body and key["masked_key"] in body and "Org-wide" in body
    assert key["key"] not in body


async def test_it_serves_the_table_partial_and_filters_deleted(admin_client, tenant, key):
    tenant.call("DELETE", f"/org/api_keys/{key['id']}")
    active = await admin_client.get(url(), headers={"HX-Request": "true", "HX-Target": "api-keys-table"})
    assert active.content.decode().lstrip().startswith('<section id="api-keys-table">')
    assert "ci-pipeline" not in active.content.decode()
    deleted = (await admin_client.get(url(), {"status": "deleted"})).content.decode()
    assert "ci-pipeline" in deleted and "deleted" in deleted


async def test_it_never_offers_an_archived_project_as_a_scope(admin_client, tenant):
    live = tenant.call("POST", "/org/projects", json={"name": "live-one"}).json()
    old = tenant.call("POST", "/org/projects", json={"name": "old-one"}).json()
    tenant.call("PATCH", f"/org/projects/{old['id']}", json={"status": "archived"})
    body = (await admin_client.get(url(), {"wait": "1"})).content.decode()
    assert f'value="{live["id"]}"' in body and f'value="{old["id"]}"' not in body
    before = len(mutations(tenant))
    form = {"name": "sneaky", "days_to_expire": "30", "project_id": old["id"]}
    response = await admin_client.post(url(), form)
    assert "Select a valid choice" in response.content.decode()
    assert len(mutations(tenant)) == before  # nothing sent


async def test_it_shows_a_new_secret_exactly_once_and_never_keeps_it(admin_client, tenant, admin, caplog):
    project = tenant.call("POST", "/org/projects", json={"name": "checkout"}).json()
    caplog.set_level(logging.DEBUG)
    form = {"name": "deploy-bot", "days_to_expire": "30", "project_id": project["id"]}
    response = await admin_client.post(url(), form)
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    created = tenant.call("GET", "/org/api_keys", params={"name": "deploy-bot"}).json()[0]
    body = response.content.decode()
    secret = body.split('id="api-key-value" type="text" readonly value="', 1)[1].split('"', 1)[0]
    assert secret.startswith("sk_") and secret.endswith(created["masked_key"][-4:])
    assert body.count(secret) == 1 and "data-copy=" in body and "js/api_keys.js" in body
    assert created["project_id"] == project["id"]
    entry = await AuditLog.objects.aget(action="api_key.create")
    assert entry.target_id == created["id"] and entry.outcome == "ok"
    assert secret not in entry.detail
    assert secret not in caplog.text
    # Gone for good: the list, a reload of the list, the session.
    again = (await admin_client.get(url())).content.decode()
    assert secret not in again
    from django.contrib.sessions.models import Session

    stored = [s.session_data async for s in Session.objects.all()]
    assert stored and all(secret not in data for data in stored)


async def test_it_refuses_bad_input_without_calling_the_service(admin_client, tenant):
    response = await admin_client.post(url(), {"name": "  ", "days_to_expire": "7", "project_id": "proj_x"})
    assert response.status_code == 200
    assert "cannot be blank" in response.content.decode() or "required" in response.content.decode()
    assert mutations(tenant) == []


async def test_it_shows_the_services_validation_error(admin_client, tenant):
    tenant.fault(method="POST", path="^/org/api_keys$", status=400, message="too many keys for this plan")
    response = await admin_client.post(url(), {"name": "x", "days_to_expire": "30"})
    assert "too many keys for this plan" in response.content.decode()
    assert await AuditLog.objects.filter(action="api_key.create", outcome="error").aexists()


async def test_it_renames_and_audits(admin_client, tenant, key):
    response = await admin_client.post(url(f"{key['id']}/rename/"), {"name": "ci-2"})
    assert response.status_code == 302
    assert tenant.call("GET", f"/org/api_keys/{key['id']}").json()["name"] == "ci-2"
    assert await AuditLog.objects.filter(action="api_key.rename", target_id=key["id"]).aexists()


async def test_it_rotates_after_confirmation_and_shows_the_new_secret_once(admin_client, tenant, key):
    confirm = (await admin_client.get(url(f"{key['id']}/rotate/"))).content.decode()
    assert "Rotate key" in confirm and mutations(tenant) == []
    response = await admin_client.post(url(f"{key['id']}/rotate/"), {"expire_in_days": "1"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    body = response.content.decode()
    assert "rotated" in body and key["key"] not in body
    entry = await AuditLog.objects.aget(action="api_key.rotate")
    assert "sk_" not in entry.detail


async def test_it_deletes_after_confirmation(admin_client, tenant, key):
    confirm = await admin_client.get(url(f"{key['id']}/delete/"))
    assert "Delete key" in confirm.content.decode() and mutations(tenant) == []
    assert (await admin_client.post(url(f"{key['id']}/delete/"))).status_code == 302
    assert tenant.call("GET", f"/org/api_keys/{key['id']}").status_code == 404
    assert await AuditLog.objects.filter(action="api_key.delete", target_id=key["id"]).aexists()


async def test_it_explains_when_the_service_refuses_a_delete(admin_client, tenant, key):
    tenant.fault(method="DELETE", path="^/org/api_keys/", status=409, message="a key cannot delete itself")
    response = await admin_client.post(url(f"{key['id']}/delete/"))
    assert response.status_code == 200 and "a key cannot delete itself" in response.content.decode()


@pytest.mark.parametrize("path", ["", "{id}/rename/", "{id}/rotate/", "{id}/delete/"])
async def test_it_is_for_admins_only(viewer_client, operator_client, tenant, key, path):
    target = url(path.format(id=key["id"]))
    for client in (viewer_client, operator_client):
        assert (await client.get(target)).status_code == 403
        assert (await client.post(target, {"name": "x"})).status_code == 403
    assert mutations(tenant) == []


async def test_it_hides_every_page_from_outsiders(outsider_client, key):
    for path in ("", f"{key['id']}/rename/", f"{key['id']}/rotate/", f"{key['id']}/delete/"):
        assert (await outsider_client.get(url(path))).status_code == 404


async def test_it_answers_404_for_an_unknown_key(admin_client):
    assert (await admin_client.get(url("key_nope/rename/"))).status_code == 404
