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


async def test_it_hides_reads_unless_asked(admin_client, traffic):
    body = (await admin_client.get(url())).content.decode()
    assert "POST /profiles" in body and "GET /profiles" not in body
    assert "exclude_method=GET" in [r for r in traffic.requests() if r["path"] == "/audit-logs"][-1]["query"]
    for asked in ({"show_reads": "on"}, {"method": "GET"}):
        body = (await admin_client.get(url(), asked)).content.decode()
        assert "GET /profiles" in body, asked


async def test_it_says_reads_are_hidden_when_nothing_else_matches(admin_client, tenant):
    tenant.call("GET", "/profiles")
    body = (await admin_client.get(url(), {"service": "profiles"})).content.decode()
    assert "No requests match in this window. Reads (GET) are hidden" in body


async def test_it_lists_the_services_record_newest_first(admin_client, traffic):
    body = (await admin_client.get(url(), {"show_reads": "on"})).content.decode()
    assert "POST /profiles" in body and "GET /profiles" in body
    assert body.index("POST /profiles") < body.index("GET /profiles")
    assert 'rel="next"' in body and "page_token=" in body


async def test_it_filters_on_the_service_and_serves_the_table_partial(admin_client, traffic):
    response = await admin_client.get(
        url(),
        {"service": "profiles"},
        headers={"HX-Request": "true", "HX-Target": "audit-logs-table"},
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="audit-logs-table">')
    assert "POST /profiles" in body and "GET /profiles" not in body
    audit_reads = [r for r in traffic.requests() if r["path"] == "/audit-logs"]
    assert "exclude_method=GET" in audit_reads[-1]["query"] and "service=profiles" in audit_reads[-1]["query"]


async def test_it_follows_the_next_page_token(admin_client, traffic):
    first = (await admin_client.get(url(), {"show_reads": "on"})).content.decode()
    token = first.split("page_token=", 1)[1].split('"', 1)[0].split("&", 1)[0]
    second = (await admin_client.get(url(), {"page_token": token, "show_reads": "on"})).content.decode()
    assert "First page" in second and "GET /profiles" in second


async def test_it_refuses_a_window_over_30_days_without_calling_the_service(admin_client, tenant):
    start = (today() - timedelta(days=45)).isoformat()
    body = (await admin_client.get(url(), {"start": start, "end": today().isoformat()})).content.decode()
    assert "at most 30 days" in body
    assert not [r for r in tenant.requests() if r["path"] == "/audit-logs"]


async def test_it_exports_the_window_as_one_streamed_file_and_audits_it(admin_client, traffic, admin):
    response = await admin_client.get(url("export/"), {"service": "profiles", "show_reads": "on"})
    assert response["Content-Disposition"].startswith('attachment; filename="audit-log-')
    content = b"".join([chunk async for chunk in response.streaming_content])
    rows = [json.loads(line) for line in content.decode().splitlines()]
    assert len(rows) == 61 and rows[-1]["method"] == "POST"
    entry = await AuditLog.objects.aget(action="audit_logs.export")
    assert entry.actor_id == admin.pk and "profiles" in entry.detail


async def test_it_serves_chunks_with_progress_for_the_exporter(admin_client, traffic):
    response = await admin_client.get(url("export/chunk/"), {"service": "profiles", "show_reads": "on"})
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


def endless_export(org, *, rows: bytes = b'{"id": "a1", "timestamp": "2026-01-01T00:00:00Z"}\n', limit=50):
    """A loopback service whose export always says "more" with a new cursor (until ``limit`` chunks, so that a
    console without bounds still ends); ``asked`` counts the chunks it was asked for."""
    import hashlib
    import http.server

    from tests.listener import serving

    asked = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("X-Content-Sha256", hashlib.sha256(rows).hexdigest())
            self.send_header("X-Row-Count", "1")
            self.send_header("X-Has-More", "true" if len(asked) < limit else "false")
            self.send_header("X-Next-Cursor", f"c{len(asked)}")
            self.send_header("Content-Length", str(len(rows)))
            self.end_headers()
            self.wfile.write(rows)

    return asked, serving(Handler)


async def read_all(response) -> list[dict]:
    content = b"".join([chunk async for chunk in response.streaming_content])
    return [json.loads(line) for line in content.decode().splitlines()]


@pytest.mark.django_db(transaction=True)
async def test_it_stops_the_streamed_export_at_its_chunk_bound_and_ends_the_file_saying_so(
    admin_client, org, settings
):
    # A hostile service that always said "more" streamed 1,153 MB in 20 s into one export.
    settings.AUDIT_EXPORT_MAX_CHUNKS = 5
    asked, running = endless_export(org)
    with running as org.service_base_url:
        await org.asave()
        rows = await read_all(await admin_client.get(url("export/")))
    assert len(asked) == 5 and [row.get("id") for row in rows[:5]] == ["a1"] * 5
    assert len(rows) == 6 and rows[-1]["complete"] is False
    assert "stopped early" in rows[-1]["console_notice"] and "after 5 chunks" in rows[-1]["console_notice"]


@pytest.mark.django_db(transaction=True)
async def test_it_stops_the_streamed_export_before_its_byte_bound(admin_client, org, settings):
    row = b'{"id": "a1", "pad": "' + b"x" * 1000 + b'"}\n'
    settings.AUDIT_EXPORT_MAX_BYTES = 5 * len(row) + 10
    asked, running = endless_export(org, rows=row)
    with running as org.service_base_url:
        await org.asave()
        rows = await read_all(await admin_client.get(url("export/")))
    assert len(rows) == 6 and "stopped early" in rows[-1]["console_notice"] and len(asked) == 6


@pytest.mark.django_db(transaction=True)
async def test_it_ends_a_streamed_export_whose_service_fails_with_a_line_saying_so(
    admin_client, tenant, traffic
):
    tenant.fault(method="GET", path="^/audit-logs/export/chunk$", status=500, message="it broke", count=None)
    rows = await read_all(await admin_client.get(url("export/")))
    assert rows == [
        {"console_notice": "The export stopped early: the service failed: it broke.", "complete": False}
    ]


@pytest.mark.django_db(transaction=True)
async def test_it_answers_the_exporter_past_its_bounds_with_the_notice_and_asks_nothing(
    admin_client, org, settings
):
    settings.AUDIT_EXPORT_MAX_CHUNKS, settings.AUDIT_EXPORT_MAX_BYTES = 5, 1000
    asked, running = endless_export(org)
    with running as org.service_base_url:
        await org.asave()
        first = await admin_client.get(url("export/chunk/"), {"n": "0", "sent": "0"})
        assert first["X-Has-More"] == "true" and "X-Export-Stopped" not in first and len(asked) == 1
        for counts in ({"n": "5", "sent": "100"}, {"n": "1", "sent": "1001"}):
            response = await admin_client.get(url("export/chunk/"), {**counts, "cursor": "c1"})
            assert (
                response["X-Has-More"] == "false" and "most the console reads" in response["X-Export-Stopped"]
            )
            assert json.loads(response.content)["complete"] is False
        assert len(asked) == 1
        refused = await admin_client.get(url("export/chunk/"), {"n": "²", "cursor": "c1"})
        assert refused.status_code == 400 and len(asked) == 1
