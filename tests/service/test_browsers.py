"""console.service.browsers against the sandbox (notes §2)."""

import pytest

from console.service import CapReached, Conflict, Invalid, NotFound, browsers

LONG = 259_200


async def test_it_creates_and_reads_a_session_as_a_typed_record(service):
    created = await browsers.create_session(
        service,
        name="typed",
        tags={"team": "checkout"},
        timeout_seconds=LONG,
        viewport={"width": 1280, "height": 800, "refresh_rate": 60},
        telemetry={"enabled": True, "browser": {"console": {"enabled": True}}},
    )
    assert created.label == "typed" and created.id == created.session_id
    assert created.tags == {"team": "checkout"}
    assert str(created.viewport) == "1280\u00d7800 @ 60 Hz"
    assert created.telemetry_categories == ["console", "control", "connection", "system", "captcha"]
    assert created.telemetry_enabled and not created.ended
    assert created.browser_live_view_url
    fetched = await browsers.get_session(service, "typed")
    assert fetched.session_id == created.session_id
    assert fetched.uptime is not None and fetched.created_at.tzinfo is not None


async def test_it_maps_field_errors_and_conflicts(service):
    with pytest.raises(Invalid) as caught:
        await browsers.create_session(service, timeout_seconds=1)
    assert "timeout_seconds" in caught.value.field_errors
    await browsers.create_session(service, name="taken", timeout_seconds=LONG)
    with pytest.raises(Conflict):
        await browsers.create_session(service, name="taken")


async def test_it_updates_and_deletes(service):
    session = await browsers.create_session(service, name="before", tags={"a": "1"}, timeout_seconds=LONG)
    updated = await browsers.update_session(service, session.id, name="after", tags={"b": "2"})
    assert (updated.name, updated.tags) == ("after", {"b": "2"})
    await browsers.delete_session(service, session.id)
    with pytest.raises(NotFound):
        await browsers.get_session(service, session.id)
    ended = await browsers.get_session(service, session.id, include_deleted=True)
    assert ended.ended and not ended.telemetry_enabled


async def test_it_lists_one_page_with_filters_and_tags(service):
    for n, word in enumerate(("red-one", "green-two", "blue-three")):
        await browsers.create_session(
            service, name=word, tags={"team": "a" if n else "b", "env": "prod"}, timeout_seconds=LONG
        )
    page = await browsers.list_sessions(service, limit=2)
    assert (len(page), page.has_more, page.next_offset) == (2, True, 2)
    assert [s.name for s in page] == ["blue-three", "green-two"]
    tagged = await browsers.list_sessions(service, tags={"team": "a", "env": "prod"})
    assert sorted(s.name for s in tagged) == ["blue-three", "green-two"]
    assert [s.name for s in await browsers.list_sessions(service, query="red-one")] == ["red-one"]
    assert (await browsers.list_sessions(service, status="deleted")).items == []


async def test_it_raises_cap_reached_when_the_project_is_at_its_sessions_cap(service, tenant):
    tenant.call("PATCH", "/org/projects/default/limits", json={"max_concurrent_sessions": 1})
    await browsers.create_session(service, headless=True)
    with pytest.raises(CapReached) as caught:
        await browsers.create_session(service, headless=True)
    assert caught.value.cap == "max_concurrent_sessions"
    assert caught.value.details == [{"code": "max_concurrent_sessions", "message": "1 of 1 in use"}]
