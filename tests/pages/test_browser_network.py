"""The Network view of a session page, a request's detail (copy as curl) and the HAR 1.2 export: requests
put together from the session's network telemetry, with the page's window and filters, valid HAR, no
secret anywhere, members only."""

import json
import re
import shlex

import pytest

from console.accounts.models import AuditLog
from tests.har import errors as har_errors

LONG = 259_200
TELEMETRY = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}


@pytest.fixture
def session(quiet):
    body = {"name": "net", "timeout_seconds": LONG, "telemetry": TELEMETRY}
    return quiet.call("POST", "/browsers", json=body).json()["session_id"]


def url(session, path=""):
    return f"/o/acme/browsers/{session}/{path}"


def emit(tenant, sid, *events):
    response = tenant.control("POST", "telemetry/emit", {"session_id": sid, "events": list(events)})
    assert response.status_code == 201, response.text
    return response.json()["seqs"]


def request(rid, url, method="GET", kind="Fetch", **data):
    return {
        "type": "network_request",
        "data": {"request_id": rid, "method": method, "url": url, "resource_type": kind, **data},
    }


def response(rid, url, status, **data):
    return {
        "type": "network_response",
        "data": {
            "request_id": rid,
            "url": url,
            "status": status,
            "status_text": "",
            "resource_type": "Fetch",
            **data,
        },
    }


def checkout(tenant, sid):
    """The shop's checkout as its telemetry tells it: the page (12 s), the quote that fails with 503 after
    250 s, a tracker the browser blocks, and a request the session's proxy refused. The tenant's clock also
    flows with real time between the calls: the steps are long enough for that to stay in the noise."""
    page = "https://shop.example.com/checkout"
    quote = "https://shop.example.com/api/checkout/quote"
    emit(tenant, sid, request("doc", page, kind="Document", headers={"accept": "text/html"}))
    tenant.advance(12)
    emit(
        tenant,
        sid,
        response(
            "doc",
            page,
            200,
            mime_type="text/html",
            headers={"content-length": "2048"},
            body="<h1>Checkout</h1>",
        ),
        request(
            "q1",
            quote,
            method="POST",
            headers={"content-type": "application/json", "Authorization": "Bearer sk_live_abc123"},
            post_data='{"country": "DE", "password": "hunter2"}',
        ),
        request("gtm", "https://www.googletagmanager.com/gtm.js?id=GTM-K2X9", kind="Script"),
        request("px", "https://ads.example.net/pixel.gif", kind="Image"),
    )
    tenant.advance(1)
    emit(
        tenant,
        sid,
        {
            "type": "network_loading_failed",
            "data": {"request_id": "gtm", "error_text": "net::ERR_BLOCKED_BY_CLIENT"},
        },
        {
            "type": "proxy_error",
            "data": {"request_id": "px", "code": "destination_blocked", "status": 502, "method": "GET"},
        },
    )
    tenant.advance(249)
    emit(
        tenant,
        sid,
        response("q1", quote, 503, method="POST", mime_type="application/json", body='{"error": "no quote"}'),
    )
    return page, quote


async def har_of(client, sid, query=""):
    answer = await client.get(url(sid, f"telemetry/har/{query}"))
    assert answer.status_code == 200, answer.content[:500]
    assert answer["Content-Type"] == "application/json"
    assert answer["Content-Disposition"] == f'attachment; filename="{sid}.har"'
    assert answer["X-Content-Type-Options"] == "nosniff"
    return json.loads(answer.content)


async def test_it_exports_the_failing_checkout_as_valid_har_with_statuses_and_timings(
    viewer_client, quiet, session
):
    page, quote = checkout(quiet, session)
    har = await har_of(viewer_client, session)
    assert har_errors(har) == []
    entries = {e["request"]["url"]: e for e in har["log"]["entries"]}
    assert list(entries) == [
        page,
        quote,
        "https://www.googletagmanager.com/gtm.js?id=GTM-K2X9",
        "https://ads.example.net/pixel.gif",
    ]
    assert entries[page]["response"]["status"] == 200 and 12_000 <= entries[page]["time"] < 14_000
    assert entries[page]["response"]["content"]["size"] == 2048
    failed = entries[quote]
    assert failed["request"]["method"] == "POST" and failed["response"]["status"] == 503
    assert 250_000 <= failed["time"] < 255_000 and failed["timings"]["wait"] == failed["time"]
    assert failed["response"]["content"]["text"] == '{"error": "no quote"}'
    gtm = entries["https://www.googletagmanager.com/gtm.js?id=GTM-K2X9"]
    assert gtm["response"]["status"] == 0 and gtm["response"]["_error"] == "net::ERR_BLOCKED_BY_CLIENT"
    assert gtm["request"]["queryString"] == [{"name": "id", "value": "GTM-K2X9"}]
    pixel = entries["https://ads.example.net/pixel.gif"]
    assert pixel["response"]["status"] == 502 and pixel["response"]["_error"] == "destination_blocked"
    # The started times are the service's clock, in order.
    started = [e["startedDateTime"] for e in har["log"]["entries"]]
    assert started == sorted(started)


async def test_it_keeps_secrets_out_of_the_har_the_detail_and_the_curl(viewer_client, quiet, session):
    _, quote = checkout(quiet, session)
    har = json.dumps(await har_of(viewer_client, session))
    page = (await viewer_client.get(url(session, "telemetry/requests/q1/"))).content.decode()
    for text in (har, page):
        assert "sk_live_abc123" not in text and "hunter2" not in text
    assert "[redacted]" in har
    curl = re.search(r'<pre class="request__curl"[^>]*>(.*?)</pre>', page, re.S)[1]
    curl = curl.replace("&#x27;", "'").replace("&quot;", '"').replace("&amp;", "&")
    words = shlex.split(curl.replace("\\\n", " "))
    assert words[:4] == ["curl", quote, "-X", "POST"]
    assert "Authorization: [redacted]" in words and "content-type: application/json" in words
    assert json.loads(words[words.index("--data-raw") + 1]) == {"country": "DE", "password": "[redacted]"}


async def test_it_exports_only_what_the_page_filters_keep(viewer_client, quiet, session):
    _, quote = checkout(quiet, session)
    only_quote = await har_of(viewer_client, session, "?q=checkout/quote")
    assert [e["request"]["url"] for e in only_quote["log"]["entries"]] == [quote]
    failed = await har_of(viewer_client, session, "?errors=1")
    assert len(failed["log"]["entries"]) == 3 and har_errors(failed) == []
    assert "3 of 4 requests" in failed["log"]["comment"]
    # A window that ends before the checkout began holds nothing.
    empty = await har_of(viewer_client, session, "?until=2000-01-01T00:00:00Z")
    assert empty["log"]["entries"] == []
    assert await AuditLog.objects.filter(action="browser.har", target_id=session).acount() == 3


async def test_it_draws_the_waterfall_with_failed_and_blocked_requests_marked(viewer_client, quiet, session):
    checkout(quiet, session)
    page = (await viewer_client.get(url(session, "?view=network"))).content.decode()
    rows = re.findall(r'<tr class="nrow ([^"]*)" data-request="([^"]+)" data-status="([^"]+)"', page)
    assert [(key, status) for _, key, status in rows] == [
        ("doc", "200"),
        ("q1", "503"),
        ("gtm", "net::ERR_BLOCKED_BY_CLIENT"),
        ("px", "proxy: destination_blocked"),
    ]
    classes = {key: cls for cls, key, _ in rows}
    assert (
        "nrow--error" in classes["q1"]
        and "nrow--blocked" in classes["gtm"]
        and "nrow--blocked" in classes["px"]
    )
    # The bars sit on one time axis: the quote starts 12 s into 262 s and fills the rest.
    bars = dict(re.findall(r'data-request="([^"]+)".*?<rect class="wf__bar" x="([\d.]+)"', page, re.S))
    assert float(bars["doc"]) == 0 and 4 < float(bars["q1"]) < 6
    assert f"/browsers/{session}/telemetry/har/" in page


async def test_it_shows_one_request_as_the_service_sent_it(viewer_client, quiet, session):
    checkout(quiet, session)
    part = await viewer_client.get(
        url(session, "telemetry/requests/q1/"), headers={"HX-Request": "true", "HX-Target": "request-detail"}
    )
    body = part.content.decode()
    assert body.lstrip().startswith('<section id="request-detail"')
    assert "503" in body and re.search(r"25\d\.\d\d s", body)
    assert "{&quot;error&quot;: &quot;no quote&quot;}" in body
    whole = (await viewer_client.get(url(session, "telemetry/requests/q1/"))).content.decode()
    assert 'id="session-tab"' in whole and 'id="request-detail"' in whole
    missing = await viewer_client.get(url(session, "telemetry/requests/nope/"))
    assert missing.status_code == 404


async def test_it_escapes_what_the_service_reported(viewer_client, quiet, session):
    hostile = "https://shop.example.com/<script>alert(1)</script>"
    emit(quiet, session, request("x1", hostile, headers={"x-note": "<img src=x onerror=alert(2)>"}))
    for path in ("?view=network", "telemetry/requests/x1/"):
        page = (await viewer_client.get(url(session, path))).content.decode()
        assert "<script>alert(1)" not in page and "<img src=x" not in page


async def test_it_hides_the_network_from_outsiders(outsider_client, quiet, session):
    checkout(quiet, session)
    for path in ("telemetry/har/", "telemetry/requests/q1/", "?view=network"):
        assert (await outsider_client.get(url(session, path))).status_code == 404
