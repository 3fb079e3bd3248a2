"""Replays of a real browser session through the console: record, stop, list, play beside the telemetry
of the recording's window, download whole or by range; the service's capability URL never shows."""

import asyncio
import re
import time

import pytest

from console.accounts.models import AuditLog
from console.browsers.panes import replays as replays_pane

pytestmark = pytest.mark.chromium

ALL = {name: {"enabled": True} for name in ("console", "network", "page", "interaction")}
LOGIN = [
    {"type": "press_key", "press_key": {"keys": ["Tab"]}},
    {"type": "type_text", "type_text": {"text": "jo@example.com"}},
    {"type": "press_key", "press_key": {"keys": ["Tab"]}},
    {"type": "type_text", "type_text": {"text": "hunter22"}},
    {"type": "press_key", "press_key": {"keys": ["Return"]}},
]


@pytest.fixture
def tenant(chromium_tenant):
    """The organization's tenant lives on the sandbox whose sessions run Chromium."""
    return chromium_tenant


@pytest.fixture
def session(tenant):
    body = {
        "headless": True,
        "viewport": {"width": 640, "height": 480},
        "timeout_seconds": 600,
        "start_url": "https://plain.example.com/login",
        "telemetry": {"enabled": True, "browser": ALL},
    }
    response = tenant.call("POST", "/browsers", json=body, timeout=60)
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def url(session, path=""):
    return f"/o/acme/browsers/{session}/{path}"


def hx():
    return {"HX-Request": "true", "HX-Target": "replays-pane"}


async def wait_for_event(tenant, sid, kind, seconds=30.0, **data) -> dict:
    """The session's first ``kind`` event whose data holds ``data`` (its envelope), once it is there."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        events = tenant.call(
            "GET", f"/browsers/{sid}/telemetry/events", params={"type": kind, "limit": 100}
        ).json()
        for envelope in events:
            if all(envelope["event"]["data"].get(key) == value for key, value in data.items()):
                return envelope
        await asyncio.sleep(0.2)
    raise AssertionError(f"no {kind} event with {data}")


async def body_of(response) -> bytes:
    return b"".join([chunk async for chunk in response.streaming_content])


async def test_it_records_plays_and_downloads_a_replay(
    operator_client, viewer_client, tenant, session, monkeypatch
):
    form = {"framerate": "10", "max_duration_in_seconds": "120"}
    started = await operator_client.post(url(session, "replays/start/"), form, headers=hx())
    body = started.content.decode()
    assert started.status_code == 200 and "recording" in body and "Stop recording" in body
    assert 'hx-trigger="every 5s"' in body  # the pane follows the recording
    entry = await AuditLog.objects.aget(action="browser.replay.start")
    assert entry.outcome == "ok" and entry.target_id == session
    replay_id = entry.detail.split(":")[0]
    assert replay_id.startswith("rep") and entry.detail.endswith("10 frames/s, at most 120 s")

    # The recording and its events are timed on the tenant's clock: it moves on two seconds before the
    # login and two after the failures (the events sit well inside the recording) instead of the test
    # waiting for them.
    tenant.advance(2)
    assert (
        tenant.call("POST", f"/browsers/{session}/computer/batch", json={"actions": LOGIN}).status_code == 204
    )
    navigation = await wait_for_event(
        tenant, session, "page_navigation", url="https://plain.example.com/home"
    )
    await wait_for_event(tenant, session, "interaction_key", key="Enter")
    failures = [
        {"type": "console_error", "data": {"text": "marker-error", "level": "error"}},
        {
            "type": "network_loading_failed",
            "data": {"error_text": "net::ERR_FAILED", "url": "https://x.test/"},
        },
    ]
    emit = {"session_id": session, "events": failures}
    emitted = tenant.call("POST", "/_sandbox/telemetry/emit", json=emit)
    assert emitted.status_code == 201
    tenant.advance(2)

    # A viewer may not stop it; an operator does.
    assert (await viewer_client.post(url(session, f"replays/{replay_id}/stop/"))).status_code == 403
    stopped = await operator_client.post(url(session, f"replays/{replay_id}/stop/"), headers=hx())
    body = stopped.content.decode()
    assert "Play with telemetry" in body and "Download MP4" in body and "every 5s" not in body
    assert (await AuditLog.objects.aget(action="browser.replay.stop")).detail == replay_id

    # The player: the console's own video URL, the window's events with their moments, the markers.
    player = await viewer_client.get(url(session, f"replays/{replay_id}/"))
    page = player.content.decode()
    assert player.status_code == 200
    assert f'src="/o/acme/browsers/{session}/replays/{replay_id}/video/"' in page
    assert "token=" not in page and "/_sandbox/" not in page and tenant.url not in page
    assert "page_navigation" in page and "replay-marker--navigation" in page
    assert "interaction_key" in page
    assert "replay-marker--error" in page and "replay-marker--failed" in page and "marker-error" in page
    assert "data-capped" not in page
    offsets = [float(v) for v in _attributes(page, "data-offset")]
    length = float(_attributes(page, "data-length")[0])
    assert offsets and all(0 <= o <= length for o in offsets) and offsets == sorted(offsets)
    assert _offset(page, navigation["seq"]) >= 2  # two seconds into the recording
    for seq in emitted.json()["seqs"]:  # two seconds before its end
        assert length - _offset(page, seq) > 1.99
    seq = _attributes(page, "data-seq")[0]

    monkeypatch.setattr(replays_pane, "MAX_EVENTS", 3)
    capped = (await viewer_client.get(url(session, f"replays/{replay_id}/"))).content.decode()
    assert "data-capped" in capped and "Showing the first 3 events" in capped
    assert len(_attributes(capped, "data-offset")) == 3
    monkeypatch.undo()

    linked = await viewer_client.get(url(session, f"replays/{replay_id}/?t=1.5&event={seq}"))
    shared = linked.content.decode()
    assert 'data-position="1.5"' in shared and f'data-selected="{seq}"' in shared
    assert f'id="event-{seq}" class="revent' in shared and "is-selected" in shared

    whole = await viewer_client.get(url(session, f"replays/{replay_id}/video/"))
    video = await body_of(whole)
    assert whole.status_code == 200 and whole["Content-Type"] == "video/mp4" and video[4:8] == b"ftyp"
    assert whole["Accept-Ranges"] == "bytes" and whole["Content-Disposition"].startswith("inline")
    part = await viewer_client.get(
        url(session, f"replays/{replay_id}/video/"), headers={"Range": "bytes=4-11"}
    )
    assert part.status_code == 206 and part["Content-Range"] == f"bytes 4-11/{len(video)}"
    assert await body_of(part) == video[4:12]
    download = await viewer_client.get(url(session, f"replays/{replay_id}/video/?download=1"))
    assert download["Content-Disposition"] == f'attachment; filename="{replay_id}.mp4"'
    await body_of(download)


def _attributes(page: str, name: str) -> list[str]:
    return re.findall(rf'{name}="([^"]*)"', page)


def _offset(page: str, seq: int) -> float:
    """The moment in the video of the player's event ``seq``."""
    (offset,) = re.findall(rf'<li id="event-{seq}" [^>]*data-offset="([^"]*)"', page)
    return float(offset)
