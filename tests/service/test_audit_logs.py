"""console.service.audit_logs against the sandbox, and its export against a service that never ends one."""

import hashlib
import http.server
import threading
from datetime import datetime, timedelta

import pytest

from console.service import Invalid, Service, Unavailable, audit_logs, profiles
from tests.listener import serving


def window(tenant):
    now = datetime.fromisoformat(tenant.control("GET", "clock").json()["now"].replace("Z", "+00:00"))
    return now - timedelta(hours=1), now + timedelta(minutes=1)


async def test_it_pages_newest_first_with_filters(service, tenant):
    for n in range(5):
        await profiles.create_profile(service, f"p{n}")
    start, end = window(tenant)
    first = await audit_logs.list_entries(
        service, start=start, end=end, limit=2, method="POST", service="profiles"
    )
    assert [e.method for e in first.items] == ["POST", "POST"] and first.has_more and first.next_token
    second = await audit_logs.list_entries(
        service, start=start, end=end, limit=2, method="POST", service="profiles", page_token=first.next_token
    )
    assert second.items and second.items[0].timestamp <= first.items[-1].timestamp


async def test_it_refuses_a_window_over_30_days(service):
    now = datetime.now().astimezone()
    with pytest.raises(Invalid):
        await audit_logs.list_entries(service, start=now - timedelta(days=40), end=now)


async def test_it_exports_every_chunk_and_checks_each_checksum(service, tenant):
    for n in range(5):
        await profiles.create_profile(service, f"e{n}")
    start, end = window(tenant)
    chunks = [
        c
        async for c in audit_logs.export(
            service, start=start, end=end, limit=2, max_chunks=100, max_bytes=2**20, service="profiles"
        )
    ]
    assert len(chunks) == 3 and sum(c.row_count for c in chunks) == 5
    tenant.fault(method="GET", path="^/audit-logs/export/chunk$", status=200, body='{"broken": true}\n')
    with pytest.raises(Unavailable):
        await audit_logs.export_chunk(service, start=start, end=end)


class EndlessExport:
    """A loopback service whose export always says "more": ``rows`` bytes a chunk, a new cursor each time (or
    the same one, ``repeat``); it gives up after ``limit`` chunks, so a console without bounds still ends."""

    def __init__(self, *, rows: bytes = b'{"id": "a1"}\n', repeat: bool = False, limit: int = 200):
        self.asked = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with lock:
                    outer.asked += 1
                    n = outer.asked
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("X-Content-Sha256", hashlib.sha256(rows).hexdigest())
                self.send_header("X-Row-Count", "1")
                self.send_header("X-Has-More", "true" if n < limit else "false")
                self.send_header("X-Next-Cursor", "same" if repeat else f"c{n}")
                self.send_header("Content-Length", str(len(rows)))
                self.end_headers()
                self.wfile.write(rows)

        lock = threading.Lock()
        self.handler = Handler


def endless(**kwargs):
    export = EndlessExport(**kwargs)
    return export, serving(export.handler)


async def export_all(url, **caps):
    svc = Service(base_url=url, api_key="k", allow_private=True)
    now = datetime.now().astimezone()
    return [c async for c in audit_logs.export(svc, start=now - timedelta(days=1), end=now, **caps)]


async def test_it_stops_an_export_at_its_chunk_bound_and_says_why():
    export, running = endless()
    with running as url:
        chunks = await export_all(url, max_chunks=5, max_bytes=2**20)
    assert export.asked == 5 and [c.stopped for c in chunks[:5]] == [None] * 5
    assert len(chunks) == 6 and "after 5 chunks" in chunks[-1].stopped and chunks[-1].content == b""


async def test_it_stops_an_export_before_the_chunk_that_passes_its_byte_bound():
    export, running = endless(rows=b'{"id": "a1", "pad": "' + b"x" * 1000 + b'"}\n')
    with running as url:
        chunks = await export_all(url, max_chunks=100, max_bytes=5000)
    rows = b"".join(c.content for c in chunks)
    assert len(rows) <= 5000 and export.asked == 5 and len(chunks) == 5
    assert "after 5000 bytes, the most the console reads in one export" in chunks[-1].stopped


async def test_it_stops_an_export_at_a_cursor_it_was_given_before():
    export, running = endless(repeat=True)
    with running as url:
        chunks = await export_all(url, max_chunks=100, max_bytes=2**20)
    assert export.asked == 2 and "given before" in chunks[-1].stopped
