"""Sandbox conformance: credential providers (/org/credential_providers; notes §15, SDK 0.131)."""

import pytest

TOKEN = "ops_" + "a1b2c3d4e5" * 3


def create(tenant, **body):
    body = {"name": "1password", "provider_type": "onepassword", "token": TOKEN, **body}
    response = tenant.call("POST", "/org/credential_providers", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_it_creates_a_provider_and_never_returns_the_token(tenant):
    made = create(tenant)
    assert made["id"].startswith("cp_") and made["enabled"] is True and made["priority"] == 0
    assert set(made) == {"id", "name", "provider_type", "enabled", "priority", "created_at", "updated_at"}
    for response in (
        tenant.call("GET", f"/org/credential_providers/{made['id']}"),
        tenant.call("GET", "/org/credential_providers"),
    ):
        assert TOKEN not in response.text


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"provider_type": "bitwarden"}, "provider_type"),
        ({"token": ""}, "token"),
        ({"cache_ttl_seconds": -1}, "cache_ttl_seconds"),
        ({"extra": 1}, "extra"),
    ],
)
def test_it_refuses_bad_bodies(tenant, body, field):
    response = tenant.call(
        "POST",
        "/org/credential_providers",
        json={"name": "p", "provider_type": "onepassword", "token": TOKEN, **body},
    )
    assert response.status_code == 400
    assert field in [d["code"] for d in response.json()["details"]]


def test_it_tests_the_token_and_lists_items(tenant):
    good = create(tenant)
    tested = tenant.call("POST", f"/org/credential_providers/{good['id']}/test").json()
    assert tested["success"] is True and {v["name"] for v in tested["vaults"]} == {"Engineering", "Shop"}
    items = tenant.call("GET", f"/org/credential_providers/{good['id']}/items").json()["items"]
    assert {"id", "path", "title", "vault_id", "vault_name"} <= set(items[0])
    assert "Engineering/GitHub" in [i["path"] for i in items]
    bad = create(tenant, name="old", token="ops_revoked_" + "x" * 20)
    failed = tenant.call("POST", f"/org/credential_providers/{bad['id']}/test").json()
    assert failed["success"] is False and failed["error"]
    refused = tenant.call("GET", f"/org/credential_providers/{bad['id']}/items")
    assert refused.status_code == 400 and refused.json()["code"] == "provider_auth_failed"


def test_it_updates_renames_and_deletes(tenant):
    made = create(tenant)
    dup = create(tenant, name="other")
    renamed = tenant.call("PATCH", f"/org/credential_providers/{made['id']}", json={"name": "other"})
    assert renamed.status_code == 409
    updated = tenant.call(
        "PATCH",
        f"/org/credential_providers/{made['id']}",
        json={"enabled": False, "priority": 5, "token": TOKEN},
    ).json()
    assert (updated["enabled"], updated["priority"]) == (False, 5)
    assert [p["id"] for p in tenant.call("GET", "/org/credential_providers").json()] == [
        dup["id"],
        made["id"],
    ]
    assert tenant.call("DELETE", f"/org/credential_providers/{made['id']}").status_code == 204
    assert tenant.call("GET", f"/org/credential_providers/{made['id']}").status_code == 404
