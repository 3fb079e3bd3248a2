"""Invocation pages: list with filters, detail with live events, cancel, and the browsers a run created."""

import json

import pytest

from console.accounts.models import AuditLog
from tests.sandbox_fixtures import new_tenant


@pytest.fixture
def tenant(sandbox_url):
    """The demo tenant: invocations in every state, apps to invoke."""
    return new_tenant(sandbox_url, demo=True)


def url(path=""):
    return f"/o/acme/invocations/{path}"


def start(tenant, action="get-page-title", **payload):
    body = {
        "app_name": "web-scraper",
        "action_name": action,
        "version": "1.2.0",
        "payload": json.dumps({"url": "https://example.com", **payload}),
        "async": True,
    }
    response = tenant.call("POST", "/invocations", json=body)
    assert response.status_code == 202, response.text
    return response.json()["id"]


async def read_stream(client, path) -> str:
    """The relayed event stream until the relay ends it (the run is finished, so it ends promptly)."""
    response = await client.get(path)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    chunks = []
    async for chunk in response.streaming_content:
        chunks.append(chunk.decode())
        if "event: ended" in chunks[-1]:
            break
    return "".join(chunks)


async def test_it_lists_invocations_with_filters(viewer_client, tenant):
    body = (await viewer_client.get(url())).content.decode()
    for status in ("queued", "running", "succeeded", "failed"):
        assert f"status-{status}" in body
    failed = (await viewer_client.get(url(), {"status": "failed", "limit": 100})).content.decode()
    assert "status-failed" in failed and "status-succeeded" not in failed
    scoped = (
        await viewer_client.get(
            url(), {"app_name": "checkout-bot", "action_name": "place-order", "since": "7d"}
        )
    ).content.decode()
    assert "place-order" in scoped and "get-page-title" not in scoped


async def test_it_refuses_a_bad_since_without_asking_the_service(viewer_client, tenant):
    response = await viewer_client.get(url(), {"since": "last tuesday"})
    assert response.status_code == 200
    assert "Use a duration" in response.content.decode()
    assert [r for r in tenant.requests() if r["path"] == "/invocations"] == []


async def test_it_corrects_out_of_range_paging(viewer_client, tenant):
    body = (await viewer_client.get(url(), {"limit": "0", "offset": "x"})).content.decode()
    assert "between 1 and 100" in body and "0 or more" in body
    assert [r["status"] for r in tenant.requests() if r["path"] == "/invocations"] == [200]


async def test_it_serves_the_table_partial_to_htmx(viewer_client):
    headers = {"HX-Request": "true", "HX-Target": "invocations-table"}
    body = (await viewer_client.get(url(), {"status": "running"}, headers=headers)).content.decode()
    assert body.lstrip().startswith('<section id="invocations-table">')


async def test_it_shows_status_timings_payload_and_output(viewer_client, tenant):
    invocation_id = start(tenant)
    tenant.advance(5)
    response = await viewer_client.get(url(f"{invocation_id}/"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "status-succeeded" in body and 'data-terminal="true"' in body
    assert "&quot;title&quot;: &quot;Example Domain&quot;" in body  # output, pretty-printed
    assert "&quot;url&quot;: &quot;https://example.com&quot;" in body  # payload
    assert f'sse-connect="/o/acme/invocations/{invocation_id}/events/"' in body
    assert "Cancel invocation" not in body  # viewers read only


async def test_it_collapses_a_large_output(viewer_client, tenant):
    body = {
        "app_name": "report-builder",
        "action_name": "build-report",
        "version": "latest",
        "payload": json.dumps({"format": "json", "rows": 300}),
        "async": True,
    }
    invocation_id = tenant.call("POST", "/invocations", json=body).json()["id"]
    tenant.advance(5)
    page = (await viewer_client.get(url(f"{invocation_id}/"))).content.decode()
    assert "<details><summary>Output" in page


async def test_it_relays_log_lines_and_states_until_the_run_ends(viewer_client, tenant):
    invocation_id = start(tenant, fail=True)
    tenant.advance(5)
    stream = await read_stream(viewer_client, url(f"{invocation_id}/events/"))
    assert "event: log" in stream and "Navigating to https://example.com" in stream
    assert "State: Queued" in stream and "State: Running" in stream and "State: Failed" in stream
    assert "event: state" in stream and 'id="invocation-summary"' in stream
    assert "event: ended" in stream


async def test_it_cancels_a_running_invocation_after_confirmation(operator_client, tenant, operator):
    invocation_id = start(tenant, duration_seconds=600)
    confirm = await operator_client.get(url(f"{invocation_id}/cancel/"))
    assert "marks it <strong>failed</strong>" in confirm.content.decode()
    response = await operator_client.post(url(f"{invocation_id}/cancel/"))
    assert response.status_code == 302
    cancelled = tenant.call("GET", f"/invocations/{invocation_id}").json()
    assert (cancelled["status"], cancelled["status_reason"]) == ("failed", "cancelled")
    entry = await AuditLog.objects.aget(action="invocation.cancel")
    assert (entry.target_id, entry.actor_id, entry.outcome) == (invocation_id, operator.pk, "ok")


async def test_it_explains_that_a_finished_invocation_cannot_be_cancelled(operator_client, tenant):
    invocation_id = start(tenant)
    tenant.advance(5)
    response = await operator_client.post(url(f"{invocation_id}/cancel/"))
    assert response.status_code == 200
    assert "Nothing to cancel: this invocation already succeeded" in response.content.decode()
    assert (await AuditLog.objects.aget(action="invocation.cancel")).outcome == "error"


async def test_it_lists_and_deletes_the_browsers_it_created(operator_client, tenant):
    invocation_id = start(tenant)
    (browser,) = tenant.call("GET", f"/invocations/{invocation_id}/browsers").json()["browsers"]
    page = (await operator_client.get(url(f"{invocation_id}/"))).content.decode()
    assert f'href="/o/acme/browsers/{browser["session_id"]}/"' in page  # its session page
    assert "Delete its browsers…" in page
    confirm = (await operator_client.get(url(f"{invocation_id}/browsers/delete/"))).content.decode()
    assert browser["session_id"] in confirm and "Delete 1 browser session" in confirm
    response = await operator_client.post(url(f"{invocation_id}/browsers/delete/"))
    assert response.status_code == 302
    assert tenant.call("GET", f"/invocations/{invocation_id}/browsers").json() == {"browsers": []}
    assert (await AuditLog.objects.aget(action="invocation.delete_browsers")).target_id == invocation_id
    partial = await operator_client.get(
        url(f"{invocation_id}/browsers/"), headers={"HX-Request": "true", "HX-Target": "invocation-browsers"}
    )
    assert "No active browser session" in partial.content.decode()


async def test_it_answers_the_browsers_refresh_link_without_htmx_with_the_invocation(viewer_client, tenant):
    invocation_id = start(tenant)
    response = await viewer_client.get(url(f"{invocation_id}/browsers/"))
    assert response.status_code == 302
    assert response["Location"] == url(f"{invocation_id}/#invocation-browsers")


async def test_it_forbids_viewers_to_cancel_or_delete_browsers(viewer_client, tenant):
    invocation_id = start(tenant, duration_seconds=600)
    for path in (f"{invocation_id}/cancel/", f"{invocation_id}/browsers/delete/"):
        assert (await viewer_client.get(url(path))).status_code == 403
        assert (await viewer_client.post(url(path))).status_code == 403
    assert tenant.call("GET", f"/invocations/{invocation_id}").json()["status"] != "failed"


async def test_it_answers_404_for_an_unknown_invocation(viewer_client, operator_client):
    assert (await viewer_client.get(url("inv_missing/"))).status_code == 404
    assert (await operator_client.post(url("inv_missing/cancel/"))).status_code == 404


async def test_it_hides_the_org_from_outsiders(outsider_client, tenant):
    invocation_id = start(tenant)
    for path in ("", f"{invocation_id}/", f"{invocation_id}/events/", f"{invocation_id}/browsers/"):
        assert (await outsider_client.get(url(path))).status_code == 404


async def test_it_shows_terminal_escapes_and_bidi_overrides_in_output_and_logs_as_symbols(
    viewer_client, tenant
):
    hostile = "https://example.com/\x1b[31mred\u202etxt.exe"
    shown = "https://example.com/\u241b[31mred[U+202E]txt.exe"
    invocation_id = start(tenant, url=hostile)
    tenant.advance(5)
    tenant.fault(
        method="GET",
        path=f"^/invocations/{invocation_id}$",
        fields={"output": json.dumps({"title": hostile})},
        count=None,
    )
    body = (await viewer_client.get(url(f"{invocation_id}/"))).content.decode()
    stream = await read_stream(viewer_client, url(f"{invocation_id}/events/"))
    for text in (body, stream):
        assert "\x1b" not in text and "\u202e" not in text
    assert shown in stream  # "Navigating to …"
    assert "txt.exe" in body  # the payload and output, as JSON (which escapes controls itself)


@pytest.mark.parametrize("value", [{"title": "Example"}, ["a", 1], 42, True])
async def test_it_shows_an_output_or_payload_that_is_not_a_json_string(viewer_client, tenant, value):
    """The notes give output and payload as JSON strings; a service that sends the value itself still
    renders, never a 500."""
    invocation_id = start(tenant)
    tenant.advance(5)
    planted = {"output": value, "payload": value}
    tenant.fault(method="GET", path=f"^/invocations/{invocation_id}$", fields=planted, count=None)
    response = await viewer_client.get(url(f"{invocation_id}/"))
    assert response.status_code == 200
    assert json.dumps(value, indent=2).splitlines()[0] in response.content.decode()


async def test_it_renders_the_frame_at_once_and_the_invocation_after(viewer_client, tenant, settings):
    invocation_id = start(tenant)
    settings.SERVICE_READ_TIMEOUT = 0.5
    tenant.fault(method="GET", path=f"^/invocations/{invocation_id}$", latency_ms=2000, count=1)
    frame = await viewer_client.get(url(f"{invocation_id}/"), headers={"Sec-Fetch-Mode": "navigate"})
    body = frame.content.decode()
    assert frame.status_code == 200 and 'id="invocation-detail" class="deferred deferred-loading"' in body
    part = url(f"{invocation_id}/?part=invocation-detail")
    failed = (await viewer_client.get(part, headers={"HX-Request": "true"})).content.decode()
    assert "did not answer within 0.5 s" in failed and ">Retry</a>" in failed
    loaded = (await viewer_client.get(part, headers={"HX-Request": "true"})).content.decode()
    assert loaded.lstrip().startswith('<div id="invocation-detail"') and invocation_id in loaded
    assert "?part=invocation-browsers" in loaded  # the browsers it made load on their own
    browsers = url(f"{invocation_id}/?part=invocation-browsers")
    assert (
        "Browsers it created"
        in (await viewer_client.get(browsers, headers={"HX-Request": "true"})).content.decode()
    )
