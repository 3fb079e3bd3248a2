"""console.service.projects against the sandbox (notes §1, §15)."""

import pytest

from console.service import Invalid, projects
from console.service.pagination import iter_all, page_from_reply
from console.service.records import Project


async def test_it_creates_gets_renames_archives_and_deletes(service):
    created = await projects.create_project(service, "alpha")
    assert created.id.startswith("proj_")
    assert created.status == "active"
    assert created.created_at.tzinfo is not None

    assert (await projects.get_project(service, "alpha")).id == created.id
    renamed = await projects.update_project(service, created.id, name="beta")
    assert renamed.name == "beta"
    archived = await projects.update_project(service, "beta", status="archived")
    assert archived.archived
    restored = await projects.update_project(service, "beta", status="active")
    assert not restored.archived

    await projects.delete_project(service, created.id)
    page = await projects.list_projects(service, name="beta")
    assert page.items == []


async def test_it_walks_pages_of_twenty(service):
    for n in range(45):
        await projects.create_project(service, f"bulk-{n:02d}")

    first = await projects.list_projects(service, limit=20, offset=0, query="bulk-")
    assert (len(first.items), first.has_more, first.next_offset) == (20, True, 20)
    second = await projects.list_projects(service, limit=20, offset=first.next_offset, query="bulk-")
    assert (len(second.items), second.has_more, second.next_offset) == (20, True, 40)
    third = await projects.list_projects(service, limit=20, offset=second.next_offset, query="bulk-")
    assert (len(third.items), third.has_more, third.next_offset) == (5, False, None)

    names = [p.name for p in [*first.items, *second.items, *third.items]]
    assert names == [f"bulk-{n:02d}" for n in range(45)]
    exported = [p.name async for p in iter_all(service, "/org/projects", Project, params={"query": "bulk-"})]
    assert exported == names


def test_it_stops_on_each_stop_rule():
    assert not page_from_reply(
        [], {"x-has-more": "false", "x-next-offset": "20"}, limit=20, offset=0
    ).has_more
    assert not page_from_reply([], {"x-has-more": "true"}, limit=20, offset=0).has_more
    last = page_from_reply([], {"x-has-more": "true", "x-next-offset": "0"}, limit=20, offset=0)
    assert (last.has_more, last.next_offset) == (False, None)
    cursor = page_from_reply([], {"x-has-more": "true", "x-next-offset": "abc"}, limit=20, offset=None)
    assert (cursor.has_more, cursor.next_offset) == (True, "abc")


async def test_it_reads_and_changes_limits(service):
    await projects.create_project(service, "capped")
    limits = await projects.get_limits(service, "capped")
    assert limits.max_concurrent_sessions is None
    assert limits.max_pooled_sessions is None

    limits = await projects.update_limits(service, "capped", max_concurrent_sessions=5)
    assert limits.max_concurrent_sessions == 5
    assert limits.max_concurrent_invocations is None
    limits = await projects.update_limits(service, "capped", max_concurrent_invocations=2)
    assert (limits.max_concurrent_sessions, limits.max_concurrent_invocations) == (5, 2)
    limits = await projects.update_limits(service, "capped", max_concurrent_sessions=0)
    assert limits.max_concurrent_sessions is None

    # max_pooled_sessions is deprecated: silently left out, never sent (the service answers 400).
    limits = await projects.update_limits(service, "capped", max_pooled_sessions=3)
    assert limits.max_pooled_sessions is None


async def test_it_shows_limit_errors_by_field(service):
    await projects.create_project(service, "neg")
    with pytest.raises(Invalid) as caught:
        await projects.update_limits(service, "neg", max_concurrent_sessions=-1)
    assert "max_concurrent_sessions" in caught.value.field_errors


async def test_it_reads_org_limits_and_the_auth_context(service):
    org = await projects.get_org_limits(service)
    assert org.max_concurrent_sessions is not None
    assert org.min_health_check_interval_seconds is not None

    context = await projects.get_auth_context(service)
    assert context.organization_id
    assert context.principal_type in ("api_key", "user")
