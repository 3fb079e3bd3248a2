"""Sandbox conformance: API keys (/org/api_keys; docs/service-changes.md §11)."""

import httpx
import pytest


def create(tenant, **body):
    response = tenant.call("POST", "/org/api_keys", json={"name": "ci", **body})
    assert response.status_code == 201, response.text
    return response.json()


def as_key(tenant, key, method, path, **kwargs):
    return httpx.request(method, tenant.url + path, headers={"Authorization": f"Bearer {key}"}, **kwargs)


def test_it_creates_a_key_shown_once_that_works(tenant):
    created = create(tenant, days_to_expire=30)
    assert created["id"].startswith("key_") and created["key"].startswith("sk_")
    assert created["masked_key"].endswith(created["key"][-4:]) and created["key"] not in created["masked_key"]
    assert created["project_id"] is None and created["expires_at"] and created["created_by"]["email"]
    assert as_key(tenant, created["key"], "GET", "/org/projects").status_code == 200
    again = tenant.call("GET", f"/org/api_keys/{created['id']}").json()
    assert "key" not in again and created["key"] not in tenant.call("GET", "/org/api_keys").text


def test_it_scopes_a_key_to_a_project(tenant):
    project = tenant.call("POST", "/org/projects", json={"name": "scoped"}).json()
    created = create(tenant, project_id=project["id"])
    assert (created["project_id"], created["project_name"]) == (project["id"], "scoped")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"days_to_expire": 0}, "days_to_expire"),
        ({"days_to_expire": 4000}, "days_to_expire"),
        ({"project_id": "proj_nope"}, "project_id"),
        ({"expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"secret": "x"}, "secret"),
    ],
)
def test_it_refuses_bad_bodies_with_field_details(tenant, body, field):
    response = tenant.call("POST", "/org/api_keys", json={"name": "ci", **body})
    assert response.status_code == 400
    assert field in [d["code"] for d in response.json()["details"]]


def test_it_renames_lists_sorts_and_searches(tenant):
    create(tenant, name="beta")
    alpha = create(tenant, name="alpha")
    renamed = tenant.call("PATCH", f"/org/api_keys/{alpha['id']}", json={"name": "alpha-2"}).json()
    assert renamed["name"] == "alpha-2"
    by_name = tenant.call("GET", "/org/api_keys", params={"sort_by": "name", "sort_direction": "asc"}).json()
    assert [k["name"] for k in by_name] == ["alpha-2", "beta"]
    assert [k["name"] for k in tenant.call("GET", "/org/api_keys", params={"query": "bet"}).json()] == [
        "beta"
    ]
    bad = tenant.call("PATCH", f"/org/api_keys/{alpha['id']}", json={"project_id": None})
    assert bad.status_code == 400


def test_it_rotates_with_a_grace_period_then_refuses_the_old_key(tenant):
    old = create(tenant)
    new = tenant.call("POST", f"/org/api_keys/{old['id']}/rotate", json={"expire_in_days": 1})
    assert new.status_code == 201
    new = new.json()
    assert new["id"] != old["id"] and new["name"] == old["name"] and new["key"] != old["key"]
    assert as_key(tenant, old["key"], "GET", "/org/limits").status_code == 200
    tenant.advance(2 * 86400)
    assert as_key(tenant, old["key"], "GET", "/org/limits").status_code == 401
    assert as_key(tenant, new["key"], "GET", "/org/limits").status_code == 200


def test_it_soft_deletes_and_a_key_cannot_delete_itself(tenant):
    created = create(tenant)
    self_delete = as_key(tenant, created["key"], "DELETE", f"/org/api_keys/{created['id']}")
    assert self_delete.status_code == 409 and self_delete.json()["code"] == "cannot_delete_current_key"
    assert tenant.call("DELETE", f"/org/api_keys/{created['id']}").status_code == 204
    assert tenant.call("GET", f"/org/api_keys/{created['id']}").status_code == 404
    kept = tenant.call("GET", f"/org/api_keys/{created['id']}", params={"include_deleted": "true"}).json()
    assert kept["deleted_at"]
    assert tenant.call("GET", "/org/api_keys").json() == []
    assert [k["id"] for k in tenant.call("GET", "/org/api_keys", params={"status": "deleted"}).json()] == [
        created["id"]
    ]
    assert as_key(tenant, created["key"], "GET", "/org/limits").status_code == 401


def test_it_seeds_keys_in_the_demo(demo_tenant):
    keys = demo_tenant.call("GET", "/org/api_keys", params={"status": "all"}).json()
    assert {k["name"] for k in keys} >= {"ci-pipeline", "local-dev", "retired-laptop"}
    assert all("key" not in k for k in keys)
