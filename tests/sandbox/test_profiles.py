"""Sandbox conformance: profiles (notes §8): unique names, search by name or id, paging, download."""

import io
import tarfile

import pytest


def create(tenant, name=None):
    body = {} if name is None else {"name": name}
    response = tenant.call("POST", "/profiles", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def error_of(response, status):
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    return body


def test_it_creates_gets_renames_and_deletes_a_profile(tenant):
    profile = create(tenant, "checkout-bot")
    assert profile["id"].startswith("prof_")
    assert profile["name"] == "checkout-bot"
    assert profile["created_at"].endswith("Z")
    assert tenant.call("GET", "/profiles/checkout-bot").json()["id"] == profile["id"]
    renamed = tenant.call("PATCH", f"/profiles/{profile['id']}", json={"name": "checkout-eu"}).json()
    assert renamed["name"] == "checkout-eu"
    assert tenant.call("DELETE", "/profiles/checkout-eu").status_code == 204
    assert tenant.call("GET", f"/profiles/{profile['id']}").status_code == 404


def test_it_creates_an_unnamed_profile(tenant):
    assert create(tenant)["name"] is None


def test_it_refuses_a_duplicate_name_in_the_project_with_409(tenant):
    create(tenant, "dup")
    assert (
        error_of(tenant.call("POST", "/profiles", json={"name": "dup"}), 409)["code"] == "profile_name_taken"
    )
    other = create(tenant, "other")
    rename = tenant.call("PATCH", f"/profiles/{other['id']}", json={"name": "dup"})
    assert error_of(rename, 409)["code"] == "profile_name_taken"


def test_it_allows_the_same_name_in_another_project(tenant):
    tenant.call("POST", "/org/projects", json={"name": "second"})
    create(tenant, "shared-name")
    response = tenant.call(
        "POST", "/profiles", json={"name": "shared-name"}, headers={"X-Kernel-Project": "second"}
    )
    assert response.status_code == 201
    assert len(tenant.call("GET", "/profiles", headers={"X-Kernel-Project": "second"}).json()) == 1


@pytest.mark.parametrize("name", ["", "has space", "slash/name", "x" * 256, 42])
def test_it_refuses_a_bad_name_with_a_field_detail(tenant, name):
    body = error_of(tenant.call("POST", "/profiles", json={"name": name}), 400)
    assert [d["code"] for d in body["details"]] == ["name"]


def test_it_requires_a_name_to_rename(tenant):
    profile = create(tenant, "keep")
    body = error_of(tenant.call("PATCH", f"/profiles/{profile['id']}", json={}), 400)
    assert body["details"][0]["code"] == "name"


def test_it_lists_with_name_query_and_paging(tenant):
    made = [create(tenant, f"team-{n:02d}") for n in range(25)]
    first = tenant.call("GET", "/profiles", params={"limit": 10})
    assert (len(first.json()), first.headers["X-Has-More"], first.headers["X-Next-Offset"]) == (
        10,
        "true",
        "10",
    )
    last = tenant.call("GET", "/profiles", params={"limit": 10, "offset": 20})
    assert [p["name"] for p in last.json()] == [f"team-{n:02d}" for n in range(20, 25)]
    assert last.headers["X-Has-More"] == "false"
    assert [p["name"] for p in tenant.call("GET", "/profiles", params={"name": "TEAM-03"}).json()] == [
        "team-03"
    ]
    assert len(tenant.call("GET", "/profiles", params={"query": "am-1"}).json()) == 10
    by_id = tenant.call("GET", "/profiles", params={"query": made[7]["id"][5:15]}).json()
    assert [p["id"] for p in by_id] == [made[7]["id"]]


def test_it_downloads_a_real_tar_for_format_tar(tenant):
    create(tenant, "archive-me")
    response = tenant.call("GET", "/profiles/archive-me/download", params={"format": "tar"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-tar"
    assert 'filename="archive-me.tar"' in response.headers["content-disposition"]
    with tarfile.open(fileobj=io.BytesIO(response.content)) as archive:
        names = archive.getnames()
    assert "profile/Default/Preferences" in names


def test_it_defaults_to_tar_zst_served_as_an_uncompressed_tar(tenant):
    create(tenant, "zst")
    response = tenant.call("GET", "/profiles/zst/download")
    assert response.headers["content-type"] == "application/zstd"
    with tarfile.open(fileobj=io.BytesIO(response.content)) as archive:
        assert archive.getnames()


def test_it_refuses_an_unknown_download_format(tenant):
    create(tenant, "fmt")
    body = error_of(tenant.call("GET", "/profiles/fmt/download", params={"format": "zip"}), 400)
    assert body["details"][0]["code"] == "format"


def test_it_refuses_to_delete_a_profile_a_pool_uses(tenant):
    create(tenant, "pooled")
    pool = tenant.call("POST", "/browser_pools", json={"size": 1, "profile": {"name": "pooled"}}).json()
    body = error_of(tenant.call("DELETE", "/profiles/pooled"), 409)
    assert body["code"] == "profile_in_use"
    tenant.call("DELETE", f"/browser_pools/{pool['id']}", json={})
    assert tenant.call("DELETE", "/profiles/pooled").status_code == 204


def test_it_answers_404_for_an_unknown_profile(tenant):
    assert error_of(tenant.call("GET", "/profiles/nope"), 404)["code"] == "not_found"


def test_it_seeds_demo_profiles(demo_tenant):
    names = {p["name"] for p in demo_tenant.call("GET", "/profiles", params={"limit": 100}).json()}
    assert {"checkout-bot", "support-gmail"} <= names
