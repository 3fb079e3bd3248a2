"""Profiles pages: search and paging, create, rename, delete (confirmed; 409 explained), download."""

import io
import tarfile

import pytest

from console.accounts.models import AuditLog


def url(path=""):
    return f"/o/acme/profiles/{path}"


@pytest.fixture
def profile(tenant):
    return tenant.call("POST", "/profiles", json={"name": "checkout-bot"}).json()


async def body_of(response) -> bytes:
    return b"".join([chunk async for chunk in response.streaming_content])


async def test_it_lists_profiles_with_search_and_paging(viewer_client, tenant):
    made = [tenant.call("POST", "/profiles", json={"name": f"shop-{n:02d}"}).json() for n in range(23)]
    page = (await viewer_client.get(url())).content.decode()
    assert "shop-00" in page and "shop-19" in page and "shop-20" not in page
    assert 'rel="next"' in page
    second = (await viewer_client.get(url(), {"offset": 20})).content.decode()
    assert "shop-22" in second
    by_name = (await viewer_client.get(url(), {"q": "op-07"})).content.decode()
    assert "shop-07" in by_name and "shop-08" not in by_name
    by_id = (await viewer_client.get(url(), {"q": made[3]["id"]})).content.decode()
    assert "shop-03" in by_id and "shop-04" not in by_id


async def test_it_serves_the_table_partial_to_htmx(viewer_client, profile):
    response = await viewer_client.get(url(), headers={"HX-Request": "true", "HX-Target": "profiles-table"})
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="profiles-table">')
    assert "<html" not in body and "checkout-bot" in body


async def test_it_shows_actions_by_role(viewer_client, operator_client, admin_client, profile):
    viewer = (await viewer_client.get(url())).content.decode()
    assert "Download" not in viewer and "Rename" not in viewer and "New profile" not in viewer
    operator = (await operator_client.get(url())).content.decode()
    assert "Download" in operator and "Rename" not in operator
    admin = (await admin_client.get(url())).content.decode()
    assert "Rename" in admin and "Delete…" in admin and "New profile" in admin


async def test_it_creates_a_profile_and_audits_it(admin_client, tenant):
    response = await admin_client.post(url("new/"), {"name": "new-one"})
    assert response.status_code == 302
    created = tenant.call("GET", "/profiles/new-one").json()
    entry = await AuditLog.objects.aget(action="profile.create")
    assert (entry.target_id, entry.outcome) == (created["id"], "ok")
    assert entry.request_id.startswith("req_")


async def test_it_creates_an_unnamed_profile(admin_client, tenant):
    assert (await admin_client.post(url("new/"), {"name": ""})).status_code == 302
    assert [p["name"] for p in tenant.call("GET", "/profiles").json()] == [None]


async def test_it_shows_the_services_refusal_to_keep_another_profile(admin_client, tenant):
    # The body the sandbox answers past SANDBOX_MAX_PROFILES (tests/sandbox/test_quotas.py).
    message = "this sandbox keeps at most 1000 profiles per organization (SANDBOX_MAX_PROFILES)"
    tenant.fault(method="POST", path="^/profiles$", status=403, code="insufficient_plan", message=message)
    response = await admin_client.post(url("new/"), {"name": "one-more"})
    body = response.content.decode()
    assert response.status_code == 200
    assert "The service refused to keep another profile" in body and "SANDBOX_MAX_PROFILES" in body
    assert await AuditLog.objects.filter(action="profile.create", outcome="error").aexists()


async def test_it_refuses_a_bad_name_before_sending_anything(admin_client, tenant):
    response = await admin_client.post(url("new/"), {"name": "has spaces"})
    assert response.status_code == 200
    assert "no spaces" in response.content.decode()
    assert not [r for r in tenant.requests() if r["method"] == "POST"]


async def test_it_explains_a_taken_name_next_to_the_field(admin_client, profile):
    response = await admin_client.post(url("new/"), {"name": "checkout-bot"})
    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert await AuditLog.objects.filter(action="profile.create", outcome="error").aexists()


async def test_it_refuses_create_to_operators(operator_client, tenant):
    assert (await operator_client.post(url("new/"), {"name": "nope"})).status_code == 403
    assert tenant.call("GET", "/profiles").json() == []


async def test_it_renames_a_profile(admin_client, tenant, profile):
    form = await admin_client.get(url(f"{profile['id']}/rename/"))
    assert 'value="checkout-bot"' in form.content.decode()
    response = await admin_client.post(url(f"{profile['id']}/rename/"), {"name": "checkout-eu"})
    assert response.status_code == 302
    assert tenant.call("GET", f"/profiles/{profile['id']}").json()["name"] == "checkout-eu"
    assert await AuditLog.objects.filter(action="profile.rename", target_id=profile["id"]).aexists()


async def test_it_renames_through_htmx_with_a_client_redirect(admin_client, profile):
    response = await admin_client.post(
        url(f"{profile['id']}/rename/"),
        {"name": "renamed"},
        headers={"HX-Request": "true", "HX-Target": "profile-rename"},
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == url()


async def test_it_shows_a_rename_conflict_in_the_partial(admin_client, tenant, profile):
    tenant.call("POST", "/profiles", json={"name": "taken"})
    response = await admin_client.post(
        url(f"{profile['id']}/rename/"),
        {"name": "taken"},
        headers={"HX-Request": "true", "HX-Target": "profile-rename"},
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<form id="profile-rename"')
    assert "already exists" in body


async def test_it_confirms_before_deleting(admin_client, tenant, profile):
    confirm = await admin_client.get(url(f"{profile['id']}/delete/"))
    assert "deleted for good" in confirm.content.decode()
    assert tenant.call("GET", f"/profiles/{profile['id']}").status_code == 200
    response = await admin_client.post(url(f"{profile['id']}/delete/"))
    assert response.status_code == 302
    assert tenant.call("GET", f"/profiles/{profile['id']}").status_code == 404
    assert await AuditLog.objects.filter(action="profile.delete", outcome="ok").aexists()


async def test_it_explains_why_a_profile_in_use_cannot_be_deleted(admin_client, tenant, profile):
    tenant.call(
        "POST", "/browser_pools", json={"size": 1, "name": "uses-it", "profile": {"id": profile["id"]}}
    )
    response = await admin_client.post(url(f"{profile['id']}/delete/"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "in use" in body and "uses-it" in body
    assert await AuditLog.objects.filter(action="profile.delete", outcome="error").aexists()


async def test_it_refuses_rename_and_delete_to_operators(operator_client, profile):
    assert (await operator_client.get(url(f"{profile['id']}/rename/"))).status_code == 403
    assert (await operator_client.post(url(f"{profile['id']}/delete/"))).status_code == 403


async def test_it_streams_a_tar_download_to_operators(operator_client, profile):
    response = await operator_client.get(url(f"{profile['id']}/download/"))
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "application/x-tar"
    assert f'filename="{profile["id"]}.tar"' in response["Content-Disposition"]
    with tarfile.open(fileobj=io.BytesIO(await body_of(response))) as archive:
        assert "profile/Default/Preferences" in archive.getnames()
    assert await AuditLog.objects.filter(action="profile.download", target_id=profile["id"]).aexists()


async def test_it_downloads_tar_zst_when_asked(operator_client, profile):
    response = await operator_client.get(url(f"{profile['id']}/download/"), {"format": "tar.zst"})
    assert response["Content-Type"] == "application/zstd"
    assert response["Content-Disposition"].endswith('.tar.zst"')
    await body_of(response)


async def test_it_refuses_downloads_to_viewers(viewer_client, profile):
    assert (await viewer_client.get(url(f"{profile['id']}/download/"))).status_code == 403


async def test_it_answers_404_for_an_unknown_profile(admin_client, operator_client):
    assert (await admin_client.get(url("prof_missing/rename/"))).status_code == 404
    assert (await operator_client.get(url("prof_missing/download/"))).status_code == 404


async def test_it_hides_the_org_from_outsiders(outsider_client, profile):
    assert (await outsider_client.get(url())).status_code == 404
    assert (await outsider_client.get(url(f"{profile['id']}/download/"))).status_code == 404
