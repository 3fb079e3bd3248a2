"""Sandbox conformance: the service's audit log (/audit-logs, export chunks; notes §0, §15)."""

import gzip
import hashlib
import json
from datetime import datetime, timedelta

import pytest


def window(tenant, days=1):
    now = datetime.fromisoformat(tenant.control("GET", "clock").json()["now"].replace("Z", "+00:00"))
    start = now - timedelta(days=days)
    end = now + timedelta(minutes=1)
    return {"start": start.isoformat(), "end": end.isoformat()}


def test_it_records_the_tenants_requests_newest_first(tenant):
    tenant.call("GET", "/proxies")
    tenant.call("POST", "/profiles", json={"name": "p1"})
    tenant.call("POST", "/credentials", json={})
    entries = tenant.call("GET", "/audit-logs", params=window(tenant)).json()
    assert [(e["method"], e["path"], e["status"]) for e in entries[:3]] == [
        ("POST", "/credentials", 400),
        ("POST", "/profiles", 201),
        ("GET", "/proxies", 200),
    ]
    entry = entries[0]
    assert entry["route"] == "/credentials" and entry["auth_strategy"] == "api_key"
    assert set(entry) == {
        "timestamp",
        "method",
        "path",
        "route",
        "status",
        "duration_ms",
        "client_ip",
        "domain",
        "user_agent",
        "user_id",
        "email",
        "auth_strategy",
    }


def test_it_pages_with_a_token_and_filters(tenant):
    for n in range(7):
        tenant.call("GET", "/profiles", params={"query": f"q{n}"})
    tenant.call("POST", "/profiles", json={"name": "p"})
    params = {**window(tenant), "method": "GET", "service": "profiles", "limit": 3}
    first = tenant.call("GET", "/audit-logs", params=params)
    assert len(first.json()) == 3 and first.headers["X-Has-More"] == "true"
    second = tenant.call(
        "GET", "/audit-logs", params={**params, "page_token": first.headers["X-Next-Page-Token"]}
    )
    assert len(second.json()) == 3
    excluded = tenant.call("GET", "/audit-logs", params={**window(tenant), "exclude_method": "GET"}).json()
    assert {e["method"] for e in excluded} == {"POST"}
    assert (
        tenant.call("GET", "/audit-logs", params={**window(tenant), "search": "nothing-like-this"}).json()
        == []
    )


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "start"),
        ({"start": "2026-01-01T00:00:00Z", "end": "2026-03-01T00:00:00Z"}, "end"),
        ({"start": "x", "end": "y"}, "start"),
    ],
)
def test_it_refuses_a_bad_window(tenant, params, field):
    response = tenant.call("GET", "/audit-logs", params=params)
    assert response.status_code == 400
    assert field in [d["code"] for d in response.json()["details"]]


def test_it_exports_chunks_with_cursor_count_and_checksum(tenant):
    for _ in range(5):
        tenant.call("GET", "/proxies")
    params = {**window(tenant), "limit": 2}
    rows, cursor, chunks = [], None, 0
    while True:
        response = tenant.call(
            "GET", "/audit-logs/export/chunk", params={**params, **({"cursor": cursor} if cursor else {})}
        )
        assert response.headers["X-Content-Sha256"] == hashlib.sha256(response.content).hexdigest()
        lines = [json.loads(line) for line in response.content.decode().splitlines()]
        assert int(response.headers["X-Row-Count"]) == len(lines)
        rows += lines
        chunks += 1
        if response.headers["X-Has-More"] != "true":
            break
        cursor = response.headers["X-Next-Cursor"]
    assert chunks >= 3 and len(rows) >= 5
    assert rows == sorted(rows, key=lambda r: r["timestamp"])
    gz = tenant.call("GET", "/audit-logs/export/chunk", params={**params, "format": "jsonl.gz"})
    assert gz.headers["X-Content-Sha256"] == hashlib.sha256(gz.content).hexdigest()
    assert gzip.decompress(gz.content).decode().count("\n") == 2


def test_it_seeds_a_week_of_traffic_in_the_demo(demo_tenant):
    entries = demo_tenant.call(
        "GET", "/audit-logs", params={**window(demo_tenant, days=8), "limit": 100}
    ).json()
    assert len(entries) == 100
    assert {"dashboard", "api_key"} <= {e["auth_strategy"] for e in entries}
