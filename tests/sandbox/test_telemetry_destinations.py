"""Sandbox conformance: telemetry destinations (/telemetry/destinations; notes §6.6, SDK 0.131)."""

import pytest

SECRET = "hny-write-key-never-returned"


def create(tenant, **body):
    body = {"name": "honeycomb", "endpoint": "https://api.honeycomb.io", **body}
    response = tenant.call("POST", "/telemetry/destinations", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_it_creates_and_never_returns_header_values(tenant):
    made = create(tenant, description="traces", headers={"x-honeycomb-team": SECRET})
    assert made["id"].startswith("otlp_") and made["headers"] == {"x-honeycomb-team": ""}
    assert made["consecutive_failures"] == 0 and made["last_error"] is None
    for response in (
        tenant.call("GET", f"/telemetry/destinations/{made['id']}"),
        tenant.call("GET", "/telemetry/destinations/honeycomb"),
        tenant.call("GET", "/telemetry/destinations"),
    ):
        assert response.status_code == 200 and SECRET not in response.text


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "otlp_abc123"}, "name"),
        ({"endpoint": "ftp://x.example.com"}, "endpoint"),
        ({"endpoint": "http://127.0.0.1:4318"}, "endpoint"),
        ({"endpoint": "https://otel.example.com/v1/traces"}, "endpoint"),
        ({"endpoint": "https://otel.example.com/?token=x"}, "endpoint"),
        ({"headers": {"bad name": "x"}}, "headers"),
        ({"headers": {"x-big": "v" * 9000}}, "headers"),
    ],
)
def test_it_refuses_bad_bodies_with_field_details(tenant, body, field):
    response = tenant.call(
        "POST", "/telemetry/destinations", json={"name": "d", "endpoint": "https://otel.example.com", **body}
    )
    assert response.status_code == 400
    assert field in [d["code"] for d in response.json()["details"]]


def test_it_refuses_a_duplicate_name(tenant):
    create(tenant)
    again = tenant.call(
        "POST", "/telemetry/destinations", json={"name": "HoneyComb", "endpoint": "https://x.example.com"}
    )
    assert again.status_code == 409 and again.json()["code"] == "destination_name_taken"


def test_it_merges_headers_on_update_and_removes_with_null(tenant):
    made = create(tenant, headers={"a": "1", "b": "2"})
    updated = tenant.call(
        "PATCH",
        f"/telemetry/destinations/{made['id']}",
        json={"headers": {"a": None, "c": "3"}, "name": "hc"},
    ).json()
    assert updated["headers"] == {"b": "", "c": ""} and updated["name"] == "hc"


def test_it_refuses_to_delete_a_destination_a_session_exports_to(tenant):
    made = create(tenant)
    export = {"enabled": True, "export": {"otlp": {"enabled": True, "destination": {"name": "honeycomb"}}}}
    session = tenant.call("POST", "/browsers", json={"headless": True, "telemetry": export}).json()
    assert session["telemetry"]["export"]["otlp"] == {"enabled": True, "destination": made["id"]}
    refused = tenant.call("DELETE", f"/telemetry/destinations/{made['id']}")
    assert refused.status_code == 409 and refused.json()["code"] == "destination_in_use"
    tenant.call("DELETE", f"/browsers/{session['session_id']}")
    assert tenant.call("DELETE", f"/telemetry/destinations/{made['id']}").status_code == 204
    assert tenant.call("GET", f"/telemetry/destinations/{made['id']}").status_code == 404


def test_it_refuses_a_session_exporting_to_an_unknown_destination(tenant):
    export = {"enabled": True, "export": {"otlp": {"destination": {"name": "nowhere"}}}}
    response = tenant.call("POST", "/browsers", json={"headless": True, "telemetry": export})
    assert response.status_code == 400


def test_it_seeds_destinations_in_the_demo(demo_tenant):
    listed = demo_tenant.call("GET", "/telemetry/destinations").json()
    assert {d["name"] for d in listed} == {"honeycomb", "collector"}
    assert "demo-honeycomb-key" not in demo_tenant.call("GET", "/telemetry/destinations").text
