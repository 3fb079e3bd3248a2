"""console.service.audit_logs against the sandbox."""

from datetime import datetime, timedelta

import pytest

from console.service import Invalid, Unavailable, audit_logs, profiles


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
    chunks = [c async for c in audit_logs.export(service, start=start, end=end, limit=2, service="profiles")]
    assert len(chunks) == 3 and sum(c.row_count for c in chunks) == 5
    tenant.fault(method="GET", path="^/audit-logs/export/chunk$", status=200, body='{"broken": true}\n')
    with pytest.raises(Unavailable):
        await audit_logs.export_chunk(service, start=start, end=end)
