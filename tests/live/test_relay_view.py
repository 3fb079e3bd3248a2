"""The relay seen from the console: many viewers of one session's telemetry share one upstream stream."""

import asyncio

import pytest


@pytest.fixture
def session_id(tenant):
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    body = {"telemetry": {"enabled": True, "browser": {"console": {"enabled": True}}}}
    response = tenant.call("POST", "/browsers", json=body)
    assert response.status_code in (200, 201), response.text
    return response.json()["session_id"]


async def wait_until(check, tries=200):
    for _ in range(tries):
        if check():
            return True
        await asyncio.sleep(0.025)
    return check()


def upstreams(tenant, session_id):
    return tenant.control("GET", "streams").json().get(f"/browsers/{session_id}/telemetry/stream", 0)


async def read_until(stream, needle: bytes) -> bytes:
    received = b""
    while needle not in received:
        received += await anext(stream)
    return received


async def test_it_serves_twenty_viewers_from_one_upstream_and_closes_it_after_the_last(
    viewer_client, tenant, session_id
):
    url = f"/o/acme/browsers/{session_id}/telemetry/stream/"
    responses = [await viewer_client.get(url) for _ in range(20)]
    assert all(r["Content-Type"] == "text/event-stream" for r in responses)
    # no-cache as streams need, and no-store like every signed-in response (EventSource minds neither).
    assert all(set(r["Cache-Control"].split(", ")) == {"no-cache", "no-store", "private"} for r in responses)
    streams = [r.streaming_content for r in responses]
    for stream in streams:
        await read_until(stream, b"connected")
    assert await wait_until(lambda: upstreams(tenant, session_id) == 1)

    first_seq = tenant.control("POST", "telemetry/burst", {"session_id": session_id, "count": 5}).json()[
        "first_seq"
    ]
    for stream in streams:
        received = await read_until(stream, f"id: {first_seq + 4}\n".encode())
        assert received.count(b"event: telemetry\n") == 5
    assert upstreams(tenant, session_id) == 1

    # Leaving: under ASGI a browser that goes away cancels the response's iterator; the test client only
    # wraps it, so close the iterator itself.
    for response in responses:
        await response._iterator.aclose()
    assert await wait_until(lambda: upstreams(tenant, session_id) == 0)


async def test_it_refuses_the_stream_to_outsiders(outsider_client, session_id):
    response = await outsider_client.get(f"/o/acme/browsers/{session_id}/telemetry/stream/")
    assert response.status_code == 404
