"""The tools pane of a session page: requests through the browser, extensions loaded live, the logs pane
through the relay; roles, bad input (nothing sent), the audit log without queries, headers or bodies."""

import asyncio
import io
import json
import zipfile

import pytest

from console.accounts.models import AuditLog

LONG = 259_200


@pytest.fixture
def session(tenant):
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    return tenant.call("POST", "/browsers", json={"headless": True, "timeout_seconds": LONG}).json()[
        "session_id"
    ]


def url(session, path=""):
    return f"/o/acme/browsers/{session}/{path}"


def hx(target):
    return {"HX-Request": "true", "HX-Target": target}


def calls(tenant, fragment):
    return [r for r in tenant.requests() if r["method"] == "POST" and r["path"].endswith(fragment)]


def extension_zip(name="ext.zip"):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps({"manifest_version": 3, "name": "x", "version": "1"}))
    buffer.seek(0)
    buffer.name = name
    return buffer


async def test_the_session_page_offers_the_tools_pane(viewer_client, session):
    page = (await viewer_client.get(url(session))).content.decode()
    assert f"/browsers/{session}/tools/" in page
    pane = (await viewer_client.get(url(session, "tools/"), headers=hx("tools-pane"))).content.decode()
    assert pane.lstrip().startswith('<section id="tools-pane"')
    assert "Request through the browser" not in pane and "Logs" in pane


async def test_it_sends_a_request_through_the_browser_and_audits_no_secrets(operator_client, tenant, session):
    form = {
        "method": "POST",
        "url": "https://shop.example.com/status/201?token=query-secret",
        "headers": "Authorization: Bearer header-secret",
        "body": "body-secret",
        "response_encoding": "utf8",
    }
    response = await operator_client.post(url(session, "tools/curl/"), form, headers=hx("tools-curl"))
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="tools-curl"')
    assert "HTTP 201" in body and "shop.example.com" in body
    entry = await AuditLog.objects.aget(action="browser.curl")
    assert entry.detail == "POST https://shop.example.com/status/201 → 201"
    for secret in ("query-secret", "header-secret", "body-secret"):
        assert secret not in entry.detail


async def test_it_keeps_the_urls_user_info_out_of_the_audit_log(operator_client, tenant, session):
    form = {
        "method": "GET",
        "url": "https://bot:url-secret@shop.example.com/status/200",
        "response_encoding": "utf8",
    }
    await operator_client.post(url(session, "tools/curl/"), form, headers=hx("tools-curl"))
    entry = await AuditLog.objects.aget(action="browser.curl")
    assert entry.detail == "GET https://shop.example.com/status/200 → 200"


async def test_it_explains_an_unreachable_target_in_the_pane(operator_client, session):
    response = await operator_client.post(
        url(session, "tools/curl/"),
        {"method": "GET", "url": "https://www.google.com/", "response_encoding": "utf8"},
    )
    assert response.status_code == 200
    assert "could not be made" in response.content.decode()
    assert await AuditLog.objects.filter(action="browser.curl", outcome="error").aexists()


async def test_it_refuses_bad_requests_without_calling_the_service(operator_client, tenant, session):
    bad = {"method": "GET", "url": "file:///etc/passwd", "headers": "no colon", "response_encoding": "utf8"}
    body = (await operator_client.post(url(session, "tools/curl/"), bad)).content.decode()
    assert "http://" in body and "Line 1" in body
    assert calls(tenant, "/curl") == []


async def test_it_loads_an_extension_into_the_running_browser(operator_client, tenant, session):
    response = await operator_client.post(
        url(session, "tools/extensions/"),
        {"name": "adblock", "zip_file": extension_zip()},
        headers=hx("tools-extensions"),
    )
    assert "Extension “adblock” loaded" in response.content.decode()
    info = tenant.call(
        "GET",
        f"/browsers/{session}/fs/file_info",
        params={"path": "/home/kernel/extensions/adblock/manifest.json"},
    )
    assert info.status_code == 200
    assert await AuditLog.objects.filter(action="browser.extensions.load", detail="adblock").aexists()


async def test_it_refuses_a_file_that_is_not_a_zip_without_calling_the_service(
    operator_client, tenant, session
):
    not_zip = io.BytesIO(b"hello")
    not_zip.name = "x.zip"
    body = (
        await operator_client.post(url(session, "tools/extensions/"), {"name": "x", "zip_file": not_zip})
    ).content.decode()
    assert "not a zip archive" in body
    assert calls(tenant, "/extensions") == []


async def test_viewers_cannot_use_the_tools(viewer_client, tenant, session):
    assert (
        await viewer_client.post(url(session, "tools/curl/"), {"url": "https://example.com"})
    ).status_code == 403
    assert (await viewer_client.post(url(session, "tools/extensions/"), {"name": "x"})).status_code == 403
    assert calls(tenant, "/curl") == []


async def test_it_relays_the_log_stream_to_the_logs_pane(viewer_client, tenant, session):
    tenant.call("POST", f"/browsers/{session}/curl", json={"url": "https://example.com/<b>"})
    pane = (
        await viewer_client.get(
            url(session, "tools/"), {"source": "supervisor", "supervisor_process": "kernel-images-api"}
        )
    ).content.decode()
    assert 'sse-connect="' in pane and "tools/logs/?" in pane
    stream_url = url(
        session, "tools/logs/?source=supervisor&supervisor_process=kernel-images-api&follow=true"
    )
    response = await viewer_client.get(stream_url)
    assert response["Content-Type"].startswith("text/event-stream")
    chunks = []

    async def read():
        async for chunk in response.streaming_content:
            chunks.append(chunk.decode())
            if "curl GET" in "".join(chunks):
                return

    await asyncio.wait_for(read(), 10)
    text = "".join(chunks)
    assert "event: log" in text and "curl GET https://example.com/&lt;b&gt;" in text
    assert "<b>" not in text.replace("&lt;b&gt;", "")


async def test_it_refuses_a_relative_log_path(viewer_client, session):
    pane = (
        await viewer_client.get(url(session, "tools/"), {"source": "path", "path": "../etc/passwd"})
    ).content.decode()
    assert "absolute path" in pane and "sse-connect" not in pane
    assert (await viewer_client.get(url(session, "tools/logs/?source=path&path=relative"))).status_code == 404


async def test_outsiders_see_nothing(outsider_client, session):
    for path in ("tools/", "tools/logs/?source=supervisor&supervisor_process=chromium"):
        assert (await outsider_client.get(url(session, path))).status_code == 404
