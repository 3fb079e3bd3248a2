"""Web pages cannot use the sandbox (console/sandbox/control.py ``LocalOnly``): any site a developer
visits can send requests to 127.0.0.1, and one whose name it re-points there (DNS rebinding) can read the
answers too. The requests below carry the headers a browser sends for such a page.
"""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.sandbox_fixtures import new_tenant, running_sandbox


def port_of(url: str) -> int:
    return httpx.URL(url).port


def create_tenant(url: str, *, content: str = '{"demo": false}', **headers: str) -> httpx.Response:
    """``POST /_sandbox/tenants`` as a page would send it: raw content, the page's headers."""
    return httpx.post(
        f"{url}/_sandbox/tenants",
        content=content,
        headers={"Content-Type": "application/json", **headers},
        timeout=10,
    )


def assert_refused(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code and body["message"], body
    assert "api_key" not in body


# Drive-by: a page of another origin -----------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        # The audit's request: a form or fetch of another site, text/plain so that no preflight is asked.
        {"Content-Type": "text/plain;charset=UTF-8", "Origin": "http://attacker.example"},
        {"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://attacker.example"},
        {"Origin": "http://attacker.example"},
        {"Origin": "null"},  # a sandboxed frame, a file: page
        {"Origin": "http://127.0.0.1:1"},  # another port of the same machine: another origin
        {"Origin": "http://localhost:{port}"},  # another name of it: another origin
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
    ids=["text-plain", "form", "json", "null", "other-port", "other-name", "cross-site", "same-site"],
)
def test_it_refuses_to_create_a_tenant_for_a_page_of_another_origin(sandbox_url, headers):
    headers = {name: value.format(port=port_of(sandbox_url)) for name, value in headers.items()}
    assert_refused(create_tenant(sandbox_url, **headers), 403, "cross_origin_refused")


def test_it_refuses_a_control_body_that_is_not_json_even_without_an_origin(sandbox_url, tenant):
    # An old browser sends no Origin with a form: a form's body is never JSON.
    assert_refused(
        create_tenant(sandbox_url, **{"Content-Type": "text/plain"}), 415, "unsupported_media_type"
    )
    refused = httpx.post(
        f"{sandbox_url}/_sandbox/clock",
        content=b"advance_seconds=60",
        headers={
            "Authorization": f"Bearer {tenant.api_key}",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    assert_refused(refused, 415, "unsupported_media_type")
    untyped = httpx.post(
        f"{sandbox_url}/_sandbox/clock",
        content=b'{"advance_seconds": 60}',
        headers={"Authorization": f"Bearer {tenant.api_key}"},
    )
    assert_refused(untyped, 415, "unsupported_media_type")
    now = datetime.fromisoformat(tenant.control("GET", "clock").json()["now"].replace("Z", "+00:00"))
    assert abs((now - datetime.now(UTC)).total_seconds()) < 30  # not moved a minute


def test_it_takes_control_requests_from_tools_and_from_its_own_origin(sandbox_url):
    # httpx, curl, the tests and the console send no Origin: as before.
    created = create_tenant(sandbox_url)
    assert created.status_code == 201 and created.json()["api_key"]
    own = create_tenant(
        sandbox_url,
        **{
            "Origin": sandbox_url,
            "Sec-Fetch-Site": "same-origin",
            "Content-Type": "application/json; charset=utf-8",
        },
    )
    assert own.status_code == 201, own.text
    # A body-less request needs no type.
    bare = httpx.post(f"{sandbox_url}/_sandbox/tenants", timeout=10)
    assert bare.status_code == 201, bare.text


def test_it_lets_a_page_of_another_origin_open_the_capability_urls(sandbox_url, tenant):
    """The console frames the live view (another origin): its token guards it, not its origin."""
    record = tenant.call("POST", "/browsers", json={"headless": False}).json()
    page = httpx.get(
        record["browser_live_view_url"],
        headers={
            "Sec-Fetch-Site": "cross-site",
            "Sec-Fetch-Dest": "iframe",
            "Origin": "http://localhost:8000",
        },
    )
    assert page.status_code == 200 and "Live view" in page.text


# DNS rebinding: a page of another name, re-pointed at the sandbox ----------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/_sandbox/tenants"),
        ("GET", "/_sandbox/health"),
        ("GET", "/browsers"),
        ("GET", "/"),
        ("GET", "/_vm/bs_x/fs/list_files"),
        ("GET", "/_sandbox/live/bs_x"),
    ],
)
def test_it_answers_to_its_own_names_only(sandbox_url, tenant, method, path):
    port = port_of(sandbox_url)
    for host in (
        f"attacker.example:{port}",
        "attacker.example",
        f"127.0.0.1:{port + 1}",
        f"localhost.:{port}",
    ):
        response = httpx.request(
            method,
            f"{sandbox_url}{path}",
            json={} if method == "POST" else None,
            # Same-origin to the page once its name points here: the Host is all that tells.
            headers={"Host": host, "Origin": f"http://{host}", "Authorization": f"Bearer {tenant.api_key}"},
        )
        assert_refused(response, 400, "host_not_allowed")
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
        response = httpx.request(
            method,
            f"{sandbox_url}{path}",
            json={} if method == "POST" else None,
            headers={"Host": host, "Authorization": f"Bearer {tenant.api_key}"},
        )
        assert "host_not_allowed" not in response.text, (host, response.text)


def test_it_opens_no_websocket_for_another_name(sandbox_url):
    port = port_of(sandbox_url)
    answers = {}
    for name in ("attacker.example", "localhost"):
        # The page's name, resolved to the sandbox's address: the socket is made here, the name is the URL's.
        reached = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            with pytest.raises(InvalidStatus) as refused:
                connect(f"ws://{name}:{port}/_sandbox/live/bs_x/ws?jwt=x", sock=reached, open_timeout=10)
        finally:
            reached.close()
        answers[name] = refused.value.response
    assert answers["attacker.example"].status_code == 400
    assert json.loads(answers["attacker.example"].body)["code"] == "host_not_allowed"
    assert answers["localhost"].status_code == 403  # the live view's own refusal of an unknown session


def test_it_answers_to_the_names_it_is_given(tmp_path):
    with running_sandbox(
        SANDBOX_ENGINE="simulated", SANDBOX_ALLOWED_HOSTS="sandbox.internal, other:1"
    ) as url:
        port = port_of(url)
        named = create_tenant(
            url, **{"Host": f"sandbox.internal:{port}", "Origin": f"http://sandbox.internal:{port}"}
        )
        assert named.status_code == 201, named.text
        wrong_port = create_tenant(url, **{"Host": f"other:{port}"})
        assert_refused(wrong_port, 400, "host_not_allowed")
        tenant = new_tenant(url)  # 127.0.0.1 still
        assert tenant.call("GET", "/browsers").json() == []
        assert (
            json.loads(create_tenant(url, **{"Host": f"evil.example:{port}"}).text)["code"]
            == "host_not_allowed"
        )
