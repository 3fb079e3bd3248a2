"""console.service.invocations against the sandbox (notes §13)."""

import pytest

from console.service import Conflict, Invalid, NotFound, invocations


@pytest.fixture
def demo_service(demo_tenant):
    from console.service import Service

    return Service(base_url=demo_tenant.url, api_key=demo_tenant.api_key, allow_private=True)


async def start(svc, action="get-page-title", payload=None, **kwargs):
    return await invocations.invoke(
        svc,
        app_name="web-scraper",
        action_name=action,
        version="1.2.0",
        payload={"url": "https://example.com"} if payload is None else payload,
        **kwargs,
    )


async def test_it_invokes_asynchronously_and_reads_the_outcome(demo_service, demo_tenant):
    started = await start(demo_service)
    assert (started.status, started.action_name) == ("queued", "get-page-title")
    demo_tenant.advance(5)
    done = await invocations.get_invocation(demo_service, started.id)
    assert done.terminal
    assert done.status == "succeeded"
    assert done.payload_value == {"url": "https://example.com"}
    assert done.output_value == {"title": "Example Domain", "url": "https://example.com"}
    assert done.duration.total_seconds() > 0


async def test_it_maps_the_services_validation_errors(demo_service):
    with pytest.raises(Invalid) as caught:
        await start(demo_service, action="no-such-action")
    assert "action_name" in caught.value.field_errors
    with pytest.raises(Invalid) as caught:
        await start(demo_service, async_timeout_seconds=1)
    assert "async_timeout_seconds" in caught.value.field_errors
    with pytest.raises(NotFound):
        await invocations.invoke(demo_service, app_name="nope", action_name="x", version="1")


async def test_it_cancels_and_then_conflicts(demo_service):
    started = await start(demo_service, payload={"url": "https://example.com", "duration_seconds": 600})
    cancelled = await invocations.cancel_invocation(demo_service, started.id)
    assert (cancelled.status, cancelled.status_reason) == ("failed", "cancelled")
    with pytest.raises(Conflict):
        await invocations.cancel_invocation(demo_service, started.id)


async def test_it_lists_one_page_with_filters(demo_service):
    page = await invocations.list_invocations(demo_service, limit=5)
    assert (len(page.items), page.has_more, page.next_offset) == (5, True, 5)
    failed = await invocations.list_invocations(demo_service, status="failed", limit=100)
    assert failed.items and all(i.status == "failed" for i in failed.items)
    recent = await invocations.list_invocations(demo_service, since="1h", app_name="web-scraper")
    assert recent.items and all(i.app_name == "web-scraper" for i in recent.items)


async def test_it_lists_and_deletes_the_invocations_browsers(demo_service):
    started = await start(demo_service)
    (browser,) = await invocations.list_browsers(demo_service, started.id)
    assert browser.session_id
    await invocations.delete_browsers(demo_service, started.id)
    assert await invocations.list_browsers(demo_service, started.id) == []


async def test_it_reads_the_events_stream_until_terminal(demo_service, demo_tenant):
    started = await start(demo_service, payload={"url": "https://example.com", "fail": True})
    demo_tenant.advance(5)
    events = [e async for e in invocations.events(demo_service, started.id)]
    assert events and all(e.id is None for e in events)
    last = events[-1].data
    assert last["event"] == "invocation_state"
    assert invocations.Invocation.from_json(last["invocation"]).status == "failed"
