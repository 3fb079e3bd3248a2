"""A JSON body is read up to a bound: the sandbox read every request's body whole into memory, and kept
what it held (a session's tag values have no size of their own), in memory, in every answer that lists it
and in the state file. A tenant's 64 MiB tag was kept; 413 now, before the body is read past the bound."""

import json

import httpx
import pytest

from console.sandbox.core.http import MAX_JSON_BYTES

LONG = 259_200


def post(tenant, path: str, body: bytes) -> httpx.Response | None:
    """The answer, or None when the sandbox closed the connection while the body was still being sent
    (it answers 413 without reading the rest)."""
    try:
        return httpx.post(
            f"{tenant.url}{path}",
            content=body,
            headers={"Authorization": f"Bearer {tenant.api_key}", "Content-Type": "application/json"},
            timeout=60,
        )
    except httpx.TransportError:
        return None


@pytest.mark.parametrize("size", [MAX_JSON_BYTES + 1, 64 * 1024 * 1024])
def test_it_refuses_a_json_body_past_the_bound_and_keeps_nothing_of_it(tenant, size):
    head = b'{"name": "huge", "timeout_seconds": %d, "tags": {"blob": "' % LONG
    tail = b'"}}'
    body = head + b"x" * (size - len(head) - len(tail)) + tail
    assert len(body) == size and json.loads(body)["name"] == "huge"
    response = post(tenant, "/browsers", body)
    if response is not None:
        assert response.status_code == 413, response.status_code
        assert response.json()["code"] == "request_too_large"
    listed = tenant.call("GET", "/browsers", params={"status": "all"}).json()
    assert [s for s in listed if s.get("name") == "huge"] == []


def test_it_still_takes_a_large_body_within_the_bound(tenant):
    body = {"name": "big", "timeout_seconds": LONG, "tags": {"blob": "x" * (MAX_JSON_BYTES // 2)}}
    response = post(tenant, "/browsers", json.dumps(body).encode())
    assert response is not None and response.status_code == 201, response and response.text[:200]
