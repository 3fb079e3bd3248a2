"""Sandbox conformance: vaults, credential items (write-only sensitive values), item events (SDK 0.131)."""

SECRET = "vault-secret-value-1"


def vault(tenant, name="checkout"):
    response = tenant.call("POST", "/vaults", json={"name": name})
    assert response.status_code == 200, response.text
    return response.json()


def put_item(tenant, key="login", **spec):
    spec = {
        "provider": "kernel",
        "fields": [
            {"name": "username", "type": "email", "value": "a@example.com"},
            {"name": "password", "type": "password", "value": SECRET},
        ],
        **spec,
    }
    return tenant.call("PUT", f"/vaults/checkout/items/{key}", json={"type": "credential", "spec": spec})


def test_it_upserts_vaults_by_name(tenant):
    first = vault(tenant)
    assert vault(tenant)["id"] == first["id"]
    assert set(first) == {"id", "name", "created_at", "updated_at"}
    assert [v["id"] for v in tenant.call("GET", "/vaults").json()] == [first["id"]]
    key = tenant.call("GET", "/vaults/checkout/encryption_key").json()
    assert key["alg"] == "ECDH-ES" and key["jwk"]["crv"] == "P-256"


def test_it_keeps_sensitive_values_write_only(tenant):
    vault(tenant)
    created = put_item(tenant)
    assert created.status_code == 201, created.text
    item = created.json()
    assert item["type"] == "credential" and item["version"] == 1 and item["state"]["status"] == "ready"
    assert item["state"]["fields"]["password"] == {"has_value": True}
    assert item["state"]["fields"]["username"] == {"has_value": True, "value": "a@example.com"}
    for response in (
        tenant.call("GET", "/vaults/checkout/items/login"),
        tenant.call("GET", "/vaults/checkout/items"),
        tenant.call("GET", "/vaults/checkout/items/login/events"),
    ):
        assert SECRET not in response.text
    assert put_item(tenant).status_code == 200  # the same specification: the existing item
    assert put_item(tenant, description="other").status_code == 409


def test_it_updates_with_a_version_and_records_events_without_values(tenant):
    vault(tenant)
    item = put_item(tenant).json()
    change = {
        "type": "credential",
        "version": item["version"],
        "spec": {
            "fields": {"password": {"value": "new-secret-2"}},
            "add_fields": [{"name": "otp", "type": "totp", "required": False}],
        },
    }
    updated = tenant.call("PATCH", "/vaults/checkout/items/login", json=change)
    assert updated.status_code == 200, updated.text
    assert updated.json()["version"] == 2 and "otp" in updated.json()["state"]["fields"]
    stale = tenant.call("PATCH", "/vaults/checkout/items/login", json=change)
    assert stale.status_code == 409 and stale.json()["code"] == "version_mismatch"
    events = tenant.call("GET", "/vaults/checkout/items/login/events").json()
    assert [e["name"] for e in events] == ["item.created", "item.fields_added", "item.fields_set"]
    assert "new-secret-2" not in str(events)
    after = tenant.call(
        "GET", "/vaults/checkout/items/login/events", params={"after": events[1]["id"]}
    ).json()
    assert [e["name"] for e in after] == ["item.fields_set"]


def test_it_refuses_items_it_cannot_keep(tenant):
    vault(tenant)
    card = tenant.call(
        "PUT", "/vaults/checkout/items/card", json={"type": "card", "spec": {"provider": "kernel"}}
    )
    assert card.status_code == 400 and "type" in [d["code"] for d in card.json()["details"]]
    bad = put_item(tenant, key="x", fields=[{"name": "pin code", "type": "number"}])
    assert bad.status_code == 400


def test_it_deletes_items_and_vaults(tenant):
    vault(tenant)
    put_item(tenant)
    assert tenant.call("DELETE", "/vaults/checkout/items/login").status_code == 204
    assert tenant.call("GET", "/vaults/checkout/items/login").status_code == 404
    assert tenant.call("DELETE", "/vaults/checkout").status_code == 204
    assert tenant.call("GET", "/vaults").json() == []


def test_it_counts_vaults_in_the_org_limits(tenant):
    vault(tenant)
    assert tenant.call("GET", "/org/limits").json()["vaults_used"] == 1
