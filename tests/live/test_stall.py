""" "Live" or "Stalled": what a pane's stream says while the service is frozen, and while it is only quiet.

Over real HTTP (the console under uvicorn in this process, read with httpx as an EventSource would), with the
relay's keepalive set to 1 s and the service's own keepalive interval left at its 15 s. The sandbox freezes
the stream (``stall_seconds``) and, for a frozen service, holds every other answer too (``latency_ms`` on
the probe's path): the tests count keepalive events, never seconds.
"""

from __future__ import annotations

import pytest

from tests.listener import console_on_thread
from tests.live.test_revoke import Stream, signed_in
from tests.sandbox_fixtures import create_session

KEEPALIVE = b"event: keepalive\ndata: "


@pytest.fixture
def console_url(transactional_db, settings):
    settings.LIVE_KEEPALIVE_SECONDS = 1.0
    settings.LIVE_UPSTREAM_KEEPALIVE_SECONDS = 15.0  # the service's own (its spec)
    with console_on_thread() as url:
        yield url


@pytest.fixture
def session_id(tenant):
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    telemetry = {"enabled": True, "browser": {"console": {"enabled": True}}}
    return create_session(tenant, name="watched", telemetry=telemetry)["session_id"]


@pytest.fixture
def cookies(viewer) -> dict:
    return signed_in(viewer)


def keepalives(seen: bytes) -> list[str]:
    return [part.split(b"\n", 1)[0].decode() for part in seen.split(KEEPALIVE)[1:]]


async def test_it_says_stalled_within_two_keepalives_of_a_frozen_service(
    console_url, cookies, tenant, session_id
):
    """During a 20 s SIGSTOP of the service, viewers got ``keepalive: live`` 15 s in and ``stalled`` only
    30 s in. A frozen service sends nothing on the stream and answers nothing else: after one keepalive
    interval of silence the relay probes it, and says "stalled" when the probe goes unanswered too."""
    tenant.fault(method="GET", path=f"^/browsers/{session_id}/telemetry/stream$", stall_seconds=20)
    tenant.fault(method="GET", path="^/auth/context$", latency_ms=20_000, count=None)
    path = f"/o/acme/browsers/{session_id}/telemetry/stream/"
    async with Stream(console_url, cookies, path) as stream:
        await stream.until(b'data-state="live"')  # the upstream is open, and froze right after
        seen = await stream.until(KEEPALIVE, count=6)
    said = keepalives(seen)
    assert "stalled" in said, said
    assert said.index("stalled") <= 2, said  # at most two keepalives said "live" meanwhile


async def test_it_keeps_a_quiet_stream_live_while_the_service_answers(
    console_url, cookies, tenant, session_id
):
    """Quiet is not frozen: the service sends a keepalive comment only every 15 s (here 3 s), and nothing
    else. The probe answers, so the relay keeps saying "live" through many of its own keepalives."""
    tenant.control("POST", "settings", {"keepalive_seconds": 3})
    path = f"/o/acme/browsers/{session_id}/telemetry/stream/"
    async with Stream(console_url, cookies, path) as stream:
        await stream.until(b'data-state="live"')
        seen = await stream.until(KEEPALIVE, count=8)
    assert set(keepalives(seen)) == {"live"}
    assert any(r["path"] == "/auth/context" for r in tenant.requests())  # it asked, and was answered
