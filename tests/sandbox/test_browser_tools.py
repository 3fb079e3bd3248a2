"""Sandbox conformance: curl through a session, extensions loaded live, log streams, direct-to-VM routes."""

import io
import json
import zipfile

import httpx
import pytest

from tests.sandbox_fixtures import new_tenant

LONG = 259_200


def session(tenant, **body):
    response = tenant.call("POST", "/browsers", json={"headless": True, "timeout_seconds": LONG, **body})
    assert response.status_code == 201, response.text
    return response.json()


def extension_zip(name="hello"):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps({"manifest_version": 3, "name": name, "version": "1.0"}))
        archive.writestr("background.js", "console.log('hi')")
    return buffer.getvalue()


def sse_frames(response) -> list[dict]:
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def test_it_answers_curl_for_example_hosts_in_the_service_shape(tenant):
    sid = session(tenant)["session_id"]
    response = tenant.call(
        "POST",
        f"/browsers/{sid}/curl",
        json={"url": "https://shop.example.com/status/404", "headers": {"x-a": "1"}},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"status", "headers", "body", "duration_ms"}
    assert body["status"] == 404 and body["headers"]["content-type"] == ["text/html; charset=utf-8"]
    assert "shop.example.com" in body["body"]
    encoded = tenant.call(
        "POST", f"/browsers/{sid}/curl", json={"url": "https://example.com/", "response_encoding": "base64"}
    ).json()
    assert b"example.com" in __import__("base64").b64decode(encoded["body"])


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"url": "file:///etc/passwd"}, 400, "url"),
        ({"url": "https://example.com", "method": "TRACE"}, 400, "method"),
        ({"url": "https://example.com", "timeout_ms": 0}, 400, "timeout_ms"),
        ({"url": "https://internal.invalid/"}, 502, None),
        ({"url": "https://www.google.com/"}, 502, None),
    ],
)
def test_it_refuses_bad_curl_requests_and_says_what_it_cannot_reach(tenant, body, status, field):
    sid = session(tenant)["session_id"]
    response = tenant.call("POST", f"/browsers/{sid}/curl", json=body)
    assert response.status_code == status
    if field:
        assert field in [d["code"] for d in response.json()["details"]]
    else:
        assert response.json()["code"] == "upstream_unreachable"


def test_it_loads_every_extension_of_the_indexed_form_into_the_session(tenant):
    sid = session(tenant)["session_id"]
    files = [
        ("extensions[0][name]", (None, "first")),
        ("extensions[1][name]", (None, "second")),
        ("extensions[0][zip_file]", ("a.zip", extension_zip("a"), "application/zip")),
        ("extensions[1][zip_file]", ("b.zip", extension_zip("b"), "application/zip")),
    ]
    assert tenant.call("POST", f"/browsers/{sid}/extensions", files=files).status_code == 204
    for name in ("first", "second"):
        info = tenant.call(
            "GET",
            f"/browsers/{sid}/fs/file_info",
            params={"path": f"/home/kernel/extensions/{name}/manifest.json"},
        )
        assert info.status_code == 200
    logs = tenant.call(
        "GET",
        f"/browsers/{sid}/logs/stream",
        params={"source": "supervisor", "supervisor_process": "chromium"},
    )
    assert any("first, second" in f["message"] for f in sse_frames(logs))


def test_it_refuses_a_bad_extension_and_loads_none(tenant):
    sid = session(tenant)["session_id"]
    files = [
        ("extensions[0][name]", (None, "good")),
        ("extensions[0][zip_file]", ("a.zip", extension_zip(), "application/zip")),
        ("extensions[1][name]", (None, "bad")),
        ("extensions[1][zip_file]", ("b.zip", b"not a zip", "application/zip")),
    ]
    response = tenant.call("POST", f"/browsers/{sid}/extensions", files=files)
    assert response.status_code == 400
    assert "extensions[1].zip_file" in [d["code"] for d in response.json()["details"]]
    info = tenant.call(
        "GET", f"/browsers/{sid}/fs/file_info", params={"path": "/home/kernel/extensions/good"}
    )
    assert info.status_code == 404


def test_it_streams_a_file_log_and_the_supervisor_logs(tenant):
    sid = session(tenant)["session_id"]
    tenant.call(
        "PUT",
        f"/browsers/{sid}/fs/write_file",
        params={"path": "/tmp/app.log"},
        content=b"one\ntwo\n",
        headers={"Content-Type": "application/octet-stream"},
    )
    frames = sse_frames(
        tenant.call("GET", f"/browsers/{sid}/logs/stream", params={"source": "path", "path": "/tmp/app.log"})
    )
    assert [f["message"] for f in frames] == ["one", "two"]
    assert all(f["event"] == "log" and f["timestamp"].endswith("Z") for f in frames)
    tenant.call("POST", f"/browsers/{sid}/curl", json={"url": "https://example.com/"})
    api = sse_frames(
        tenant.call(
            "GET",
            f"/browsers/{sid}/logs/stream",
            params={"source": "supervisor", "supervisor_process": "kernel-images-api"},
        )
    )
    assert any("curl GET https://example.com/" in f["message"] for f in api)
    missing = tenant.call("GET", f"/browsers/{sid}/logs/stream", params={"source": "supervisor"})
    assert missing.status_code == 400
    assert (
        tenant.call(
            "GET", f"/browsers/{sid}/logs/stream", params={"source": "path", "path": "/nope"}
        ).status_code
        == 404
    )


def test_it_serves_session_subresources_on_the_vm_base_url_with_the_jwt(tenant):
    record = session(tenant)
    sid = record["session_id"]
    assert record["base_url"] == f"{tenant.url}/_vm/{sid}"
    jwt = httpx.URL(record["cdp_ws_url"]).params["jwt"]
    direct = httpx.post(
        f"{record['base_url']}/curl", params={"jwt": jwt}, json={"url": "https://example.com/"}
    )
    assert direct.status_code == 200 and direct.json()["status"] == 200
    listing = httpx.get(f"{record['base_url']}/fs/list_files", params={"path": "/home/kernel", "jwt": jwt})
    assert listing.status_code == 200 and isinstance(listing.json(), list)
    assert (
        httpx.post(
            f"{record['base_url']}/curl", params={"jwt": "wrong"}, json={"url": "https://example.com/"}
        ).status_code
        == 401
    )
    assert httpx.get(f"{record['base_url']}/telemetry/events", params={"jwt": jwt}).status_code == 404
    tenant.call("DELETE", f"/browsers/{sid}")
    assert (
        httpx.post(
            f"{record['base_url']}/curl", params={"jwt": jwt}, json={"url": "https://example.com/"}
        ).status_code
        == 404
    )


def test_it_answers_an_unknown_session_on_the_vm_as_a_known_one_with_a_wrong_jwt(tenant):
    """No existence oracle: a wrong jwt on a real session id and any jwt on an unknown id (or on the id of
    another tenant's ended session) get the same answer, status and body."""
    other = new_tenant(tenant.url)
    known, ended = session(tenant), session(other)
    other.call("DELETE", f"/browsers/{ended['session_id']}")
    answers = []
    for target in (known["base_url"], ended["base_url"], f"{tenant.url}/_vm/bs_doesnotexist0000"):
        for jwt in ("wrong", "", "é"):
            response = httpx.get(f"{target}/fs/list_files", params={"path": "/", "jwt": jwt})
            answers.append((response.status_code, response.json()))
    assert answers[0][0] == 401 and answers[0][1]["code"] == "invalid_jwt"
    assert all(answer == answers[0] for answer in answers), answers
