"""Audit-log export destinations beside the service audit log: create (paused) → test → resume, a failing
probe said, edit, pause, delete; roles; bad input never sent."""

import pytest

from console.accounts.models import AuditLog

VALID = {
    "bucket": "acme-audit",
    "prefix": "kernel",
    "region": "us-east-1",
    "role_arn": "arn:aws:iam::123456789012:role/kernel-export",
    "kms_key_id": "",
}


def url(path=""):
    return f"/o/acme/audit_logs/destinations/{path}"


def changes(tenant):
    return [r for r in tenant.requests() if r["method"] != "GET" and "/export/destinations" in r["path"]]


@pytest.fixture
def destination(tenant):
    body = {"type": "s3", "format": "jsonl.gz", **{k: v for k, v in VALID.items() if v}}
    return tenant.call("POST", "/audit-logs/export/destinations", json=body).json()


async def test_the_audit_log_links_its_export_destinations(admin_client, destination):
    assert "/audit_logs/destinations/" in (await admin_client.get("/o/acme/audit_logs/")).content.decode()
    listing = (await admin_client.get(url())).content.decode()
    assert "s3://acme-audit/kernel" in listing and "paused" in listing and "New destination" in listing
    detail = (await admin_client.get(url(f"{destination['id']}/"))).content.decode()
    assert destination["external_id"] in detail and "Resume delivery" in detail


async def test_a_viewer_or_an_operator_cannot_read_or_change_them(
    viewer_client, operator_client, tenant, destination
):
    before = len(changes(tenant))
    did = destination["id"]
    for client in (viewer_client, operator_client):
        assert (await client.get(url())).status_code == 403
        assert (await client.get(url(f"{did}/"))).status_code == 403
        assert (await client.post(url("new/"), VALID)).status_code == 403
        assert (await client.post(url(f"{did}/test/"))).status_code == 403
        assert (await client.post(url(f"{did}/status/"), {"status": "active"})).status_code == 403
        assert (await client.post(url(f"{did}/delete/"))).status_code == 403
    assert len(changes(tenant)) == before


@pytest.mark.parametrize(
    ("field", "value"),
    [("bucket", "Not_A_Bucket"), ("region", "mars"), ("role_arn", "arn:aws:iam::1:user/x"), ("prefix", "/x")],
)
async def test_it_refuses_bad_input_without_calling_the_service(admin_client, tenant, field, value):
    response = await admin_client.post(url("new/"), {**VALID, field: value})
    assert response.status_code == 200 and "errorlist" in response.content.decode()
    assert changes(tenant) == []


async def test_it_creates_paused_tests_and_resumes(admin_client, tenant):
    response = await admin_client.post(url("new/"), VALID)
    assert response.status_code == 302
    made = tenant.call("GET", "/audit-logs/export/destinations").json()[0]
    assert made["status"] == "paused"
    probe = await admin_client.post(
        url(f"{made['id']}/test/"), headers={"HX-Request": "true", "HX-Target": "destination-probe"}
    )
    assert "ready to resume delivery" in probe.content.decode()
    assert (await admin_client.post(url(f"{made['id']}/status/"), {"status": "active"})).status_code == 302
    assert tenant.call("GET", f"/audit-logs/export/destinations/{made['id']}").json()["status"] == "active"
    actions = [a async for a in AuditLog.objects.order_by("pk").values_list("action", flat=True)]
    assert actions == [
        "audit_log_export_destination.create",
        "audit_log_export_destination.test",
        "audit_log_export_destination.status",
    ]


async def test_it_says_where_a_probe_failed_and_edits_only_what_changed(admin_client, tenant, destination):
    did = destination["id"]
    response = await admin_client.post(url(f"{did}/"), {**VALID, "bucket": "denied-bucket"})
    assert response.status_code == 302
    patches = [r for r in changes(tenant) if r["method"] == "PATCH"]
    assert len(patches) == 1
    probe = (await admin_client.post(url(f"{did}/test/"))).content.decode()
    assert "Failed at put_object" in probe and "put_object_failed" in probe
    detail = (await admin_client.get(url(f"{did}/"))).content.decode()
    assert "access denied writing to s3://denied-bucket" in detail


async def test_it_explains_when_the_service_refuses_a_delete(admin_client, tenant, destination):
    tenant.fault(method="DELETE", path="^/audit-logs/export/destinations/", status=409, message="busy")
    response = await admin_client.post(url(f"{destination['id']}/delete/"))
    assert response.status_code == 200 and "busy" in response.content.decode()


async def test_it_deletes_after_a_confirmation(admin_client, tenant, destination):
    before = len(changes(tenant))
    asked = await admin_client.get(url(f"{destination['id']}/delete/"))
    assert "Delete export destination" in asked.content.decode() and len(changes(tenant)) == before
    assert (await admin_client.post(url(f"{destination['id']}/delete/"))).status_code == 302
    assert tenant.call("GET", "/audit-logs/export/destinations").json() == []
