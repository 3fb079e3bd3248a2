"""Service audit log page: admins only, filters and paging by token, export streamed or chunk by chunk."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from console.accounts.models import AuditLog


def url(path=""):
    return f"/o/acme/audit_logs/{path}"


def today():
    return datetime.now(UTC).date()


@pytest.fixture
def traffic(tenant):
    for n in range(60):
        tenant.call("GET", "/profiles", params={"query": f"q{n}"})
    tenant.call("POST", "/profiles", json={"name": "from-test"})
    return tenant


async def test_it_lists_the_services_record_newest_first(admin_client, traffic):
    body = (await admin_client.get(url())).content.decode()
    assert "POST /profiles" in body and "GET /profiles" in body
    assert body.index("POST /profiles") < body.index("GET /profiles")
    assert 'rel="next"' in body and "page_token=" in body


async def test_it_filters_on_the_service_and_serves_the_table_partial(admin_client, traffic):
    response = await admin_client.get(
        url(),
        {"hide_reads": "on", "service": "profiles"},
        headers={"HX-Request": "true", "HX-Target": "audit-logs-table"},
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="audit-logs-table">')
    assert "POST /profiles" in body and "GET /profiles" not in body
    audit_reads = [r for r in traffic.requests() if r["path"] == "/audit-logs"]
    assert "exclude_method=GET" in audit_reads[-1]["query"] and "service=profiles" in audit_reads[-1]["query"]


async def test_it_follows_the_next_page_token(admin_client, traffic):
    first = (await admin_client.get(url())).content.decode()
    token = first.split("page_token=", 1)[1].split('"', 1)[0].split("&", 1)[0]
    second = (await admin_client.get(url(), {"page_token": token})).content.decode()
    assert "First page" in second and "GET /profiles" in second


async def test_it_refuses_a_window_over_30_days_without_calling_the_service(admin_client, tenant):
    start = (today() - timedelta(days=45)).isoformat()
    body = (await admin_client.get(url(), {"start": start, "end": today().isoformat()})).content.decode()
    assert "at most 30 days" in body
    assert not [r for r in tenant.requests() if r["path"] == "/audit-logs"]


async def test_it_exports_the_window_as_one_streamed_file_and_audits_it(admin_client, traffic, admin):
    response = await admin_client.get(url("export/"), {"service": "profiles"})
    assert response["Content-Disposition"].startswith('attachment; filename="audit-log-')
    content = b"".join([chunk async for chunk in response.streaming_content])
    rows = [json.loads(line) for line in content.decode().splitlines()]
    assert len(rows) == 61 and rows[-1]["method"] == "POST"
    entry = await AuditLog.objects.aget(action="audit_logs.export")
    assert entry.actor_id == admin.pk and "profiles" in entry.detail


async def test_it_serves_chunks_with_progress_for_the_exporter(admin_client, traffic):
    response = await admin_client.get(url("export/chunk/"), {"service": "profiles"})
    assert response["X-Has-More"] == "false" and response["X-Progress"] == "100"
    assert int(response["X-Row-Count"]) == 61
    page = (await admin_client.get(url())).content.decode()
    assert "js/audit_logs.js" in page and "data-chunk-url=" in page and "<progress" in page


async def test_it_is_for_admins_only(viewer_client, operator_client, outsider_client, tenant):
    for client in (viewer_client, operator_client):
        for path in ("", "export/", "export/chunk/"):
            assert (await client.get(url(path))).status_code == 403
    assert (await outsider_client.get(url())).status_code == 404


async def test_the_consoles_audit_page_links_to_the_services(admin_client):
    body = (await admin_client.get("/o/acme/audit/")).content.decode()
    assert 'href="/o/acme/audit_logs/"' in body


def hostile_export(org, *, row_count: str, timestamp):
    """A loopback service whose export chunk is checksummed but otherwise what it likes."""
    import hashlib
    import http.server

    from tests.listener import serving

    body = (json.dumps({"id": "a1", "timestamp": timestamp}) + "\n").encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("X-Content-Sha256", hashlib.sha256(body).hexdigest())
            self.send_header("X-Row-Count", row_count)
            self.send_header("X-Has-More", "true")
            self.send_header("X-Next-Cursor", "c2")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return serving(Handler)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("row_count", "timestamp", "status"),
    [
        ("many", "2026-01-01T00:00:00Z", 503),  # a row count that is not a number: a malformed answer
        ("1", "2026-01-01T00:00:00", 200),  # no time zone: no progress to tell
        ("1", 1767225600, 200),  # a number, not a timestamp
    ],
)
async def test_it_answers_a_chunk_it_cannot_read_without_a_500(
    admin_client, org, row_count, timestamp, status
):
    """A row count that is not a number (``int()`` raised), a timestamp without a time zone (compared with
    the window's aware bounds) or not a string (``.replace`` on an int) made the chunk a 500."""
    with hostile_export(org, row_count=row_count, timestamp=timestamp) as org.service_base_url:
        await org.asave()
        response = await admin_client.get(url("export/chunk/"))
    assert response.status_code == status
    if status == 200:
        assert response["X-Progress"] == "0" and response["X-Row-Count"] == row_count
