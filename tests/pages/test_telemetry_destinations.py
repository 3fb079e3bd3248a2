"""Telemetry destinations pages: list, create, edit (headers merge), delete; header values never shown."""

import logging

import pytest

from console.accounts.models import AuditLog

SECRET = "hny-ingest-key-never-in-html"


def url(path=""):
    return f"/o/acme/telemetry_destinations/{path}"


def changes(tenant):
    return [
        r
        for r in tenant.requests()
        if r["method"] != "GET" and r["path"].startswith("/telemetry/destinations") and r["status"] < 500
    ]


@pytest.fixture
def destination(tenant):
    body = {"name": "honeycomb", "endpoint": "https://api.honeycomb.io", "headers": {"x-team": SECRET}}
    return tenant.call("POST", "/telemetry/destinations", json=body).json()


async def test_it_lists_destinations_with_header_names_only(viewer_client, destination):
    body = (await viewer_client.get(url())).content.decode()
    assert "honeycomb" in body and "https://api.honeycomb.io" in body and "x-team" in body
    assert SECRET not in body and "New destination" not in body
    partial = await viewer_client.get(
        url(), {"q": "honey"}, headers={"HX-Request": "true", "HX-Target": "destinations-table"}
    )
    assert partial.content.decode().lstrip().startswith('<section id="destinations-table">')


async def test_it_creates_and_never_echoes_or_audits_header_values(admin_client, tenant, caplog):
    caplog.set_level(logging.DEBUG)
    form = {
        "name": "collector",
        "endpoint": "https://otel.example.com:4318",
        "headers": f"authorization: {SECRET}",
    }
    response = await admin_client.post(url("new/"), form)
    assert response.status_code == 302
    made = tenant.call("GET", "/telemetry/destinations/collector").json()
    assert made["headers"] == {"authorization": ""}
    entry = await AuditLog.objects.aget(action="telemetry_destination.create")
    assert entry.target_id == made["id"] and SECRET not in entry.detail and "authorization" in entry.detail
    assert SECRET not in caplog.text
    page = (await admin_client.get(url(f"{made['id']}/"))).content.decode()
    assert SECRET not in page and "write-only" in page


async def test_it_does_not_echo_header_values_after_a_validation_error(admin_client, tenant):
    form = {"name": "c", "endpoint": "http://10.0.0.5:4318", "headers": f"authorization: {SECRET}"}
    response = await admin_client.post(url("new/"), form)
    assert response.status_code == 200
    body = response.content.decode()
    assert "not a public host" in body and SECRET not in body
    assert changes(tenant) == []


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"endpoint": "https://otel.example.com/v1/traces"}, "base URL"),
        ({"endpoint": "ftp://otel.example.com"}, "http"),
        ({"headers": "no colon here"}, "Line 1"),
        ({"name": "otlp_abc"}, "look like an id"),
    ],
)
async def test_it_refuses_bad_input_without_calling_the_service(admin_client, tenant, form, message):
    data = {"name": "c", "endpoint": "https://otel.example.com", **form}
    response = await admin_client.post(url("new/"), data)
    assert message in response.content.decode()
    assert changes(tenant) == []


async def test_it_shows_a_duplicate_name_next_to_the_name(admin_client, destination):
    response = await admin_client.post(
        url("new/"), {"name": "honeycomb", "endpoint": "https://x.example.com"}
    )
    assert "already exists" in response.content.decode()


async def test_it_edits_with_merged_headers(admin_client, tenant, destination):
    form = {
        "name": "honeycomb",
        "endpoint": "https://api.honeycomb.io",
        "description": "prod traces",
        "headers": "x-dataset: checkout",
        "remove_headers": ["x-team"],
    }
    response = await admin_client.post(url(f"{destination['id']}/"), form)
    assert response.status_code == 302
    after = tenant.call("GET", f"/telemetry/destinations/{destination['id']}").json()
    assert after["headers"] == {"x-dataset": ""} and after["description"] == "prod traces"
    entry = await AuditLog.objects.aget(action="telemetry_destination.update")
    assert "checkout" not in entry.detail and "x-dataset" in entry.detail


async def test_it_confirms_a_delete_and_explains_a_destination_in_use(admin_client, tenant, destination):
    export = {
        "enabled": True,
        "export": {"otlp": {"enabled": True, "destination": {"id": destination["id"]}}},
    }
    session = tenant.call("POST", "/browsers", json={"headless": True, "telemetry": export}).json()
    confirm = await admin_client.get(url(f"{destination['id']}/delete/"))
    assert "Delete destination" in confirm.content.decode()
    refused = await admin_client.post(url(f"{destination['id']}/delete/"))
    assert refused.status_code == 200 and "in use" in refused.content.decode()
    tenant.call("DELETE", f"/browsers/{session['session_id']}")
    assert (await admin_client.post(url(f"{destination['id']}/delete/"))).status_code == 302
    assert await AuditLog.objects.filter(action="telemetry_destination.delete", outcome="ok").aexists()


@pytest.mark.parametrize("path", ["new/", "{id}/delete/"])
async def test_it_forbids_viewers_and_operators_to_change_destinations(
    viewer_client, operator_client, destination, path
):
    target = url(path.format(id=destination["id"]))
    for client in (viewer_client, operator_client):
        assert (await client.get(target)).status_code == 403
        assert (await client.post(target, {"name": "x"})).status_code == 403
    detail = url(f"{destination['id']}/")
    assert (
        await viewer_client.post(detail, {"name": "x", "endpoint": "https://a.example.com"})
    ).status_code == 403
    page = (await viewer_client.get(detail)).content.decode()
    assert "Save" not in page and "Delete…" not in page


async def test_it_hides_every_page_from_outsiders(outsider_client, destination):
    for path in ("", "new/", f"{destination['id']}/", f"{destination['id']}/delete/"):
        assert (await outsider_client.get(url(path))).status_code == 404


async def test_it_answers_404_for_an_unknown_destination(viewer_client):
    assert (await viewer_client.get(url("otlp_nope/"))).status_code == 404
