"""console.service.browser_replays against the sandbox (notes §2): the simulated engine refuses to record; a
sandbox running Chromium records real MP4s."""

import http.server

import pytest

from console.service import BadResponse, Conflict, Invalid, NotFound, Service, browser_replays, browsers
from tests.listener import serving
from tests.sandbox_fixtures import new_tenant


@pytest.fixture
async def session(service):
    return (await browsers.create_session(service, timeout_seconds=3600)).session_id


async def test_it_lists_no_replays_of_a_new_session(service, session):
    assert await browser_replays.list_replays(service, session) == []


async def test_it_says_a_simulated_session_cannot_record(service, session, tenant):
    with pytest.raises(Conflict) as caught:
        await browser_replays.start(service, session, framerate=10, max_duration_in_seconds=60)
    assert caught.value.code == "replays_unavailable"
    sent = [r for r in tenant.requests() if r["path"].endswith("/replays")]
    assert sent[-1]["method"] == "POST"


async def test_it_passes_on_the_services_refusal_of_bad_settings(service, session):
    with pytest.raises(Invalid) as caught:
        await browser_replays.start(service, session, framerate=30)
    assert "framerate" in str(caught.value.details) or "framerate" in caught.value.message


async def test_it_raises_not_found_for_an_unknown_replay(service, session):
    with pytest.raises(NotFound):
        async with browser_replays.download(service, session, "rep_nope"):
            pass
    with pytest.raises(NotFound):
        await browser_replays.stop(service, session, "rep_nope")


# Real recordings ------------------------------------------------------------------------------------


@pytest.fixture
async def real(chromium_sandbox):
    tenant = new_tenant(chromium_sandbox[0])
    svc = Service(base_url=tenant.url, api_key=tenant.api_key, allow_private=True)
    created = await browsers.create_session(
        svc, timeout_seconds=600, headless=True, viewport={"width": 640, "height": 480}
    )
    yield svc, created.session_id, tenant
    await browsers.delete_session(svc, created.session_id)


async def read_all(chunks) -> bytes:
    return b"".join([chunk async for chunk in chunks])


@pytest.mark.chromium
async def test_it_records_stops_lists_and_downloads_a_replay_with_ranges(real):
    svc, sid, tenant = real
    started = await browser_replays.start(svc, sid, framerate=5, max_duration_in_seconds=120)
    assert started.replay_id.startswith("rep") and started.recording and started.replay_view_url is None
    with pytest.raises(Conflict) as busy:
        await browser_replays.start(svc, sid)
    assert busy.value.code == "replay_in_progress"
    with pytest.raises(Conflict):
        async with browser_replays.download(svc, sid, started.replay_id):
            pass
    # The service times a replay on its clock: the tenant's moves on a minute instead of the test waiting.
    tenant.advance(60)
    await browser_replays.stop(svc, sid, started.replay_id)

    (listed,) = await browser_replays.list_replays(svc, sid)
    assert listed.replay_id == started.replay_id and not listed.recording
    assert listed.duration is not None and 60 <= listed.duration.total_seconds() < 120

    async with browser_replays.download(svc, sid, listed.replay_id) as video:
        whole = await read_all(video.chunks)
        assert video.status == 200 and video.content_type == "video/mp4"
        assert video.content_length == len(whole)
    assert whole[4:8] == b"ftyp"

    async with browser_replays.download(svc, sid, listed.replay_id, byte_range="bytes=4-11") as part:
        assert part.status == 206 and part.content_range == f"bytes 4-11/{len(whole)}"
        assert await read_all(part.chunks) == whole[4:12]


@pytest.fixture
def html_server():
    """A loopback server answering every GET with an HTML page (what a proxy's error page looks like)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<!doctype html><p>Sign in to continue</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as url:
        yield url


async def test_it_refuses_a_download_that_is_not_a_video(html_server):
    svc = Service(base_url=html_server, api_key="k", allow_private=True)
    with pytest.raises(BadResponse) as caught:
        async with browser_replays.download(svc, "bs_1", "rep_1"):
            pass
    assert "text/html" in caught.value.message
