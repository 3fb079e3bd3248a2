"""Browser session pages: list, create, session page with the telemetry pane, history, stream, delete."""

import asyncio
import re

import pytest

from console.accounts.models import AuditLog
from tests.sandbox_fixtures import create_session as create

ON = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}


def url(path=""):
    return f"/o/acme/browsers/{path}"


def hx(target):
    return {"HX-Request": "true", "HX-Target": target}


def mutations(tenant):
    return [
        r
        for r in tenant.requests()
        if r["method"] in ("POST", "PATCH", "DELETE") and r["path"].startswith("/browsers")
    ]


def emit(tenant, sid, *events):
    body = {"session_id": sid, "events": [e if isinstance(e, dict) else {"type": e} for e in events]}
    return tenant.control("POST", "telemetry/emit", body).json()["seqs"]


# List ----------------------------------------------------------------------------------------------


async def test_it_lists_sessions_with_their_configuration(viewer_client, quiet):
    create(quiet, name="checkout-smoke", tags={"team": "checkout"}, stealth=True)
    create(quiet, name="crawler", headless=True, region="eu-west")
    body = (await viewer_client.get(url())).content.decode()
    assert "checkout-smoke" in body and "crawler" in body
    assert "stealth" in body and "headless" in body and "eu-west" in body
    assert "team=checkout" in body and "?tag=team%3Acheckout" in body
    assert "New session" not in body and "Delete…" not in body


async def test_it_filters_by_search_status_and_tag(viewer_client, quiet):
    create(quiet, name="alpha", tags={"team": "checkout", "env": "prod"})
    create(quiet, name="beta", tags={"team": "search"})
    gone = create(quiet, name="gamma", tags={"team": "checkout"})
    quiet.call("DELETE", f"/browsers/{gone['session_id']}")

    async def names(**params):
        response = await viewer_client.get(url(), params, headers=hx("browsers-table"))
        body = response.content.decode()
        assert body.lstrip().startswith('<section id="browsers-table">')
        return [n for n in ("alpha", "beta", "gamma") if f">{n}<" in body]

    assert await names() == ["alpha", "beta"]
    assert await names(q="alpha") == ["alpha"]
    assert await names(status="deleted") == ["gamma"]
    assert await names(status="all", tag="team:checkout") == ["alpha", "gamma"]
    assert await names(tag=["team:checkout", "env:prod"]) == ["alpha"]
    body = (await viewer_client.get(url(), {"tag": "team:checkout"})).content.decode()
    assert "chip--on" in body and "team=checkout \u00d7" in body


async def test_it_pages_through_sessions(viewer_client, quiet):
    for n in range(3):
        create(quiet, name=f"s{n}")
    body = (await viewer_client.get(url(), {"limit": 2})).content.decode()
    assert "Next →" in body and "offset=2" in body


# Create --------------------------------------------------------------------------------------------


async def test_it_refuses_the_create_form_to_viewers(viewer_client):
    assert (await viewer_client.get(url("new/"))).status_code == 403
    assert (await viewer_client.post(url("new/"), {"region": "us-east"})).status_code == 403


FORM = {
    "name": "from-console",
    "tags": "team=checkout\nenv=prod",
    "viewport": "1440x900@25",
    "region": "eu-west",
    "timeout_seconds": "600",
    "memory": "16GiB",
    "stealth": "on",
    "proxy": "mode:direct",
    "start_url": "https://shop.example.com/",
    "categories": ["control", "console", "network"],
}


async def test_it_creates_a_session_and_audits_it(operator_client, quiet, operator):
    quiet.call("POST", "/profiles", json={"name": "shop-login"})
    profile = quiet.call("GET", "/profiles/shop-login").json()
    form = {**FORM, "profile": profile["id"], "profile_save_changes": "on"}
    response = await operator_client.post(url("new/"), form)
    assert response.status_code == 302
    session = quiet.call("GET", "/browsers/from-console").json()
    assert response["Location"] == url(f"{session['session_id']}/")
    assert session["tags"] == {"team": "checkout", "env": "prod"}
    assert session["viewport"] == {"width": 1440, "height": 900, "refresh_rate": 25}
    assert (session["region"], session["memory"], session["timeout_seconds"]) == ("eu-west", "16GiB", 600)
    assert session["stealth"] is True and session["proxy"] == {"mode": "direct"}
    assert session["profile"]["name"] == "shop-login" and session["profile_save_changes"] is True
    enabled = {k for k, v in session["telemetry"]["browser"].items() if v["enabled"]}
    assert enabled == {"control", "console", "network"}
    entry = await AuditLog.objects.aget(action="browser.create")
    assert entry.target_id == session["session_id"] and entry.outcome == "ok"


async def test_it_creates_without_telemetry_when_no_category_is_checked(operator_client, quiet):
    form = {**FORM, "categories": []}
    assert (await operator_client.post(url("new/"), form)).status_code == 302
    assert "telemetry" not in quiet.call("GET", "/browsers/from-console").json()


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"tags": "team checkout"}, "tags", "is not key=value"),
        ({"headless": "on", "memory": "16GiB"}, "memory", "headful browsers"),
        ({"timeout_seconds": "5"}, "timeout_seconds", "greater than or equal to 10"),
        ({"start_url": "ftp://example.com"}, "start_url", "http:// or https://"),
        ({"profile_save_changes": "on"}, "profile_save_changes", "Choose a profile"),
    ],
)
async def test_it_validates_the_form_before_sending_anything(operator_client, quiet, change, field, message):
    response = await operator_client.post(url("new/"), {**FORM, **change}, headers=hx("browser-create"))
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<section id="browser-create"')
    assert message in body
    assert mutations(quiet) == []


async def test_it_explains_a_name_conflict_next_to_the_name(operator_client, quiet):
    create(quiet, name="from-console")
    response = await operator_client.post(url("new/"), FORM)
    body = response.content.decode()
    assert response.status_code == 200
    assert re.search(r"already exists", body)
    entry = await AuditLog.objects.aget(action="browser.create")
    assert entry.outcome == "error"


async def test_it_shows_the_service_validation_errors(operator_client, quiet):
    quiet.fault(
        method="POST", path="^/browsers$", status=400, code="invalid_request", message="region is full"
    )
    response = await operator_client.post(url("new/"), FORM)
    assert response.status_code == 200
    assert "region is full" in response.content.decode()


# Session page ----------------------------------------------------------------------------------------


async def test_it_shows_the_configuration_to_viewers_without_any_live_view_url(viewer_client, quiet):
    session = create(quiet, name="watch", tags={"team": "checkout"}, kiosk_mode=True, telemetry=ON)
    sid = session["session_id"]
    body = (await viewer_client.get(url(f"{sid}/"))).content.decode()
    assert "watch" in body and sid in body and "kiosk" in body
    assert "1920\u00d71080 @ 25 Hz" in body and "3 d 0 h" in body  # the 72 h timeout
    assert "console, network, page, control" in body
    interactive = session["browser_live_view_url"].split("jwt=")[1]
    view_only = session["sandbox"]["read_only_live_view_url"].split("jwt=")[1].split("&")[0]
    assert interactive not in body and view_only not in body
    jwt = session["cdp_ws_url"].split("jwt=")[1]
    assert jwt not in body  # the CDP token gives full control: never on a page
    assert "Delete…" not in body


@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
async def test_it_never_gives_anyone_a_live_view_url_in_any_form(
    role, admin_client, operator_client, viewer_client, quiet
):
    """The service's live-view URLs are capabilities the console cannot take back from a member who lost
    access (its screen is its own: console/browsers/panes/screen.py): no page holds one, for any role."""
    client = {"admin": admin_client, "operator": operator_client, "viewer": viewer_client}[role]
    session = create(quiet, name="watch", telemetry=ON)
    sid = session["session_id"]
    tokens = [
        session["browser_live_view_url"].split("jwt=")[1],
        session["sandbox"]["read_only_live_view_url"].split("jwt=")[1].split("&")[0],
        session["cdp_ws_url"].split("jwt=")[1],
    ]
    pages = [
        await client.get(url(f"{sid}/"), {"wait": "1"}),
        await client.get(url(f"{sid}/"), {"view": "embed", "wait": "1"}),
        await client.get(url(f"{sid}/"), headers=hx("telemetry-pane")),
        await client.get(url(f"{sid}/screen/")),
        await client.get(url(), {"wait": "1"}),
        await client.get(url(), {"status": "all"}, headers=hx("browsers-table")),
        await client.get(url("wall/")),
    ]
    for response in pages:
        body = response.content.decode()
        assert response.status_code == 200
        assert not [t for t in tokens if t in body]
        assert "/_sandbox/live/" not in body and "<iframe" not in body
        assert response["Content-Security-Policy"].endswith("; frame-src 'none'")


async def test_it_says_when_the_browser_is_simulated(viewer_client, quiet):
    session = create(quiet, name="sim")
    body = (await viewer_client.get(url(f"{session['session_id']}/"))).content.decode()
    assert "simulated browser" in body


@pytest.mark.parametrize(
    "hostile",
    [
        "javascript:alert(document.domain)",
        "data:text/html,<script>alert(1)</script>",
        "https://trusted.example@evil.example/",
        "https://evil.example/live?jwt=x",
    ],
)
async def test_it_shows_nothing_of_a_live_view_url_the_service_sends(operator_client, quiet, hostile):
    session = create(quiet, name="odd")
    sid = session["session_id"]
    planted = {"browser_live_view_url": hostile}
    quiet.fault(method="GET", path=f"^/browsers/{sid}$", fields=planted, count=None)
    for query in ({"wait": "1"}, {"view": "embed", "wait": "1"}):
        response = await operator_client.get(url(f"{sid}/"), query)
        body = response.content.decode()
        assert "<iframe" not in body and "evil.example" not in body and "script:" not in body
        assert response["Content-Security-Policy"].endswith("; frame-src 'none'")


async def test_it_opens_the_pane_with_recent_history_and_a_resumable_stream(viewer_client, quiet):
    session = create(quiet, telemetry=ON)
    sid = session["session_id"]
    seqs = emit(
        quiet,
        sid,
        {"type": "page_navigation", "data": {"url": "https://shop.example.com/cart"}},
        "network_response",
        {
            "type": "console_error",
            "data": {
                "text": "TypeError: cart is undefined",
                "level": "error",
                "url": "https://shop.example.com/cart",
                "stack_trace": {
                    "callFrames": [
                        {
                            "functionName": "renderCart",
                            "scriptId": "7",
                            "url": "https://shop.example.com/app.js",
                            "lineNumber": 41,
                            "columnNumber": 9,
                        }
                    ],
                    "parent": {
                        "description": "Promise.then",
                        "callFrames": [
                            {
                                "functionName": "load",
                                "scriptId": "7",
                                "url": "https://shop.example.com/app.js",
                                "lineNumber": 3,
                                "columnNumber": 0,
                            }
                        ],
                    },
                },
            },
        },
    )
    body = (await viewer_client.get(url(f"{sid}/"))).content.decode()
    assert body.index(f'data-seq="{seqs[0]}"') < body.index(f'data-seq="{seqs[2]}"')  # oldest first
    assert "→ https://shop.example.com/cart" in body
    assert "TypeError: cart is undefined" in body and "level--error" in body
    assert "at renderCart (https://shop.example.com/app.js:42:10)" in body
    assert "--- Promise.then ---" in body
    assert "Copy JSON" in body and '<pre data-json>{"seq": ' in body
    assert f'sse-connect="/o/acme/browsers/{sid}/telemetry/stream/?last_event_id={seqs[2]}"' in body
    assert 'sse-swap="telemetry"' in body and 'sse-swap="status"' in body
    assert "telemetry.js" in body


async def test_it_says_so_when_telemetry_is_off(operator_client, viewer_client, quiet):
    sid = create(quiet)["session_id"]
    body = (await viewer_client.get(url(f"{sid}/"))).content.decode()
    assert "Telemetry is off for this session" in body
    assert "Turn telemetry on" not in body
    body = (await operator_client.get(url(f"{sid}/"))).content.decode()
    assert "Turn telemetry on" in body
    response = await operator_client.post(url(f"{sid}/telemetry/enable/"))
    assert response.status_code == 302
    assert quiet.call("GET", f"/browsers/{sid}").json()["telemetry"]["browser"]["console"]["enabled"]
    assert (await viewer_client.post(url(f"{sid}/telemetry/enable/"))).status_code == 403


async def test_it_filters_the_pane_by_category_and_type_from_the_url(viewer_client, quiet):
    sid = create(quiet, telemetry=ON)["session_id"]
    seqs = emit(quiet, sid, "console_log", "console_error", "network_request", "page_load")
    response = await viewer_client.get(
        url(f"{sid}/"), {"category": "console,network"}, headers=hx("telemetry-pane")
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="telemetry-pane"')
    assert f'data-seq="{seqs[3]}"' not in body and f'data-seq="{seqs[2]}"' in body
    assert 'data-categories="console,network"' in body
    typed = (await viewer_client.get(url(f"{sid}/"), {"type": "console_error"})).content.decode()
    assert f'data-seq="{seqs[1]}"' in typed and f'data-seq="{seqs[0]}"' not in typed
    assert 'data-types="console_error"' in typed and "Clear filters" in typed
    nothing = (await viewer_client.get(url(f"{sid}/"), {"category": "captcha"})).content.decode()
    assert "No recent events match these filters" in nothing


async def test_it_asks_the_service_to_filter_the_pane_by_type(viewer_client, quiet):
    sid = create(quiet, telemetry=ON)["session_id"]
    emit(quiet, sid, "console_log", "console_error")
    await viewer_client.get(url(f"{sid}/"), {"type": "console_error,page_load"})
    reads = [r for r in quiet.requests() if r["path"] == f"/browsers/{sid}/telemetry/events"]
    # Besides the pane's own reads, one for the tab list (its page events, a fixed query).
    reads = [r for r in reads if "type=page_navigation%2Cpage_tab_opened" not in r["query"]]
    assert reads and all("type=console_error%2Cpage_load" in r["query"] for r in reads)
    assert all("category=" not in r["query"] for r in reads)


async def test_it_loads_older_history_with_the_cursor(viewer_client, quiet):
    sid = create(quiet, telemetry=ON)["session_id"]
    quiet.control("POST", "telemetry/emit", {"session_id": sid, "count": 120})
    newest = quiet.call("GET", f"/browsers/{sid}/telemetry/events", params={"order": "desc", "limit": 100})
    seqs = [e["seq"] for e in newest.json()]
    body = (await viewer_client.get(url(f"{sid}/"))).content.decode()
    assert f'data-seq="{seqs[0]}"' in body and "Load older events" in body
    older_url = re.search(r'hx-get="([^"]+/telemetry/\?before=[^"]+)"', body).group(1).replace("&amp;", "&")
    older = (await viewer_client.get(older_url, headers=hx("telemetry-older"))).content.decode()
    assert older.lstrip().startswith('<li id="telemetry-older"')
    assert "Start of the retained history." in older
    assert f'data-seq="{seqs[-1] - 1}"' in older and f'data-seq="{seqs[0]}"' not in older
    # Without htmx the same link shows the page ending there.
    plain = await viewer_client.get(older_url)
    assert plain.status_code == 302 and "before=" in plain["Location"]


@pytest.mark.parametrize("before", ["not-a-cursor", "12", "9" * 5000, "../x", "1 2"])
async def test_it_shows_the_newest_events_for_a_bad_cursor(viewer_client, quiet, before):
    sid = create(quiet, telemetry=ON)["session_id"]
    emit(quiet, sid, "page_load")
    response = await viewer_client.get(url(f"{sid}/"), {"before": before})
    body = response.content.decode()
    assert response.status_code == 200
    assert "not a position in this session" in body and "data-seq=" in body
    older = await viewer_client.get(
        url(f"{sid}/telemetry/"), {"before": before}, headers=hx("telemetry-older")
    )
    assert older.status_code == 200 and "not a position in this session" in older.content.decode()


async def test_it_shows_an_ended_session_without_a_stream(viewer_client, quiet):
    sid = create(quiet, telemetry=ON)["session_id"]
    emit(quiet, sid, "page_load")
    quiet.call("DELETE", f"/browsers/{sid}")
    body = (await viewer_client.get(url(f"{sid}/"))).content.decode()
    assert "Session ended" in body and "no more events will arrive" in body
    assert "sse-connect" not in body and "page_load" in body


async def test_it_answers_404_for_a_missing_session_and_outsiders(viewer_client, outsider_client, quiet):
    sid = create(quiet)["session_id"]
    assert (await viewer_client.get(url("nope/"))).status_code == 404
    for path in ("", f"{sid}/", f"{sid}/telemetry/", f"{sid}/telemetry/stream/", f"{sid}/delete/"):
        assert (await outsider_client.get(url(path))).status_code == 404


# Live stream ---------------------------------------------------------------------------------------------


async def next_chunk(stream, timeout=5.0) -> str:
    return (await asyncio.wait_for(anext(stream), timeout)).decode()


async def test_it_relays_live_events_as_rendered_rows(viewer_client, quiet):
    sid = create(quiet, telemetry=ON)["session_id"]
    first = emit(quiet, sid, "page_load")[0]
    response = await viewer_client.get(url(f"{sid}/telemetry/stream/"), {"last_event_id": first})
    assert response["Content-Type"].startswith("text/event-stream")
    stream = aiter(response.streaming_content)
    received = ""
    new = await asyncio.to_thread(
        emit, quiet, sid, {"type": "console_log", "data": {"text": "live-marker-7"}}
    )
    while "live-marker-7" not in received:
        received += await next_chunk(stream)
    assert "event: telemetry" in received and f"id: {new[0]}" in received
    assert f"id: {first}\n" not in received  # resumed after the history's last event
    await response.streaming_content.aclose()


async def test_it_loses_and_repeats_nothing_when_the_upstream_drops(viewer_client, quiet):
    sid = create(quiet, telemetry=ON)["session_id"]
    first = emit(quiet, sid, "page_load")[0]
    quiet.fault(method="GET", path=f"/browsers/{sid}/telemetry/stream", drop_after_events=2, count=1)
    response = await viewer_client.get(url(f"{sid}/telemetry/stream/"), {"last_event_id": first})
    stream = aiter(response.streaming_content)
    emitted = await asyncio.to_thread(emit, quiet, sid, *["console_log"] * 5)
    received = ""
    while f"id: {emitted[-1]}\n" not in received:
        received += await next_chunk(stream)
    await response.streaming_content.aclose()
    ids = [int(i) for i in re.findall(r"^id: (\d+)$", received, re.M)]
    assert ids == emitted
    opened = [r for r in quiet.requests() if r["path"].endswith("/telemetry/stream")]
    assert len(opened) == 2  # the drop, then the resume with Last-Event-ID


# Delete ------------------------------------------------------------------------------------------------


async def test_it_deletes_a_session_after_confirmation(operator_client, viewer_client, quiet):
    sid = create(quiet, name="doomed")["session_id"]
    assert (await viewer_client.get(url(f"{sid}/delete/"))).status_code == 403
    confirm = (await operator_client.get(url(f"{sid}/delete/"))).content.decode()
    assert "End browser session “doomed”?" in confirm
    assert [r for r in mutations(quiet) if r["method"] == "DELETE"] == []
    response = await operator_client.post(url(f"{sid}/delete/"))
    assert response.status_code == 302 and response["Location"] == url()
    assert quiet.call("GET", f"/browsers/{sid}").status_code == 404
    entry = await AuditLog.objects.aget(action="browser.delete")
    assert entry.target_id == sid
    htmx = await operator_client.post(url(f"{sid}/delete/"), headers={"HX-Request": "true"})
    assert htmx["HX-Redirect"] == url()


async def test_it_explains_a_refusal_by_the_projects_cap_and_links_to_its_limits(
    operator_client, quiet, operator
):
    project = quiet.call("POST", "/org/projects", json={"name": "capped"}).json()
    quiet.call("PATCH", f"/org/projects/{project['id']}/limits", json={"max_concurrent_sessions": 1})
    membership = await operator.memberships.aget()
    membership.project_id = project["id"]
    await membership.asave()
    quiet.call("POST", "/browsers", json={"headless": True}, headers={"X-Kernel-Project-Id": project["id"]})
    response = await operator_client.post(url("new/"), FORM)
    assert response.status_code == 200
    body = response.content.decode()
    assert "This project is at its cap: 1 of 1 in use (1 on-demand session (1 running, 0 in standby)" in body
    assert "would exceed" not in body  # the service's sentence is not repeated beside ours
    assert 'Using it: <a href="/o/acme/browsers/?status=active">1 on-demand session</a>' in body
    assert f'href="/o/acme/projects/{project["id"]}/#project-limits"' in body
    entry = await AuditLog.objects.aget(action="browser.create")
    assert entry.outcome == "error"


async def test_it_explains_a_cap_refusal_in_the_banner_where_a_view_does_not_catch_it(operator_client, quiet):
    quiet.fault(
        method="DELETE",
        path="^/browsers/",
        status=429,
        code="concurrent_sessions_limit_exceeded",
        message="2 concurrent sessions would exceed the project's max_concurrent_sessions of 1",
        count=None,
    )
    session = create(quiet, name="doomed")
    response = await operator_client.post(
        url(f"{session['session_id']}/delete/"), headers={"HX-Request": "true", "HX-Target": "x"}
    )
    assert response["HX-Retarget"] == "#banner"
    body = response.content.decode()
    assert "Project cap reached" in body and 'href="/o/acme/projects/' in body


async def test_it_renders_sessions_with_newer_enums_and_unknown_fields_raw(viewer_client, quiet):
    import json as _json

    record = {
        "session_id": "sess_future1",
        "created_at": "2026-11-20T10:00:00Z",
        "cdp_ws_url": "wss://x/cdp?jwt=j",
        "webdriver_ws_url": "wss://x/s?jwt=j",
        "headless": True,
        "stealth": False,
        "memory": "12GiB",
        "region": "ap-southeast",
        "timeout_seconds": 60,
        "usage_status": "pending",
        "location": {"locale": "en-SG", "timezone": "Asia/Singapore"},
        "vaults": [{"id": "vlt_1"}],
        "video_memory": "4GiB",
    }
    quiet.fault(method="GET", path="^/browsers$", status=200, body=_json.dumps([record]))
    response = await viewer_client.get(url())
    assert response.status_code == 200
    assert "ap-southeast" in response.content.decode()


async def test_it_renders_the_frame_at_once_and_the_session_after(viewer_client, quiet, settings):
    session = create(quiet, name="slow-one")
    sid = session["session_id"]
    settings.SERVICE_READ_TIMEOUT = 0.5
    quiet.fault(method="GET", path=f"^/browsers/{sid}$", latency_ms=2000, count=1)
    frame = await viewer_client.get(url(f"{sid}/"), headers={"Sec-Fetch-Mode": "navigate"})
    assert 'id="session-detail" class="deferred deferred-loading"' in frame.content.decode()
    part = url(f"{sid}/?part=session-detail")
    failed = (await viewer_client.get(part, headers={"HX-Request": "true"})).content.decode()
    assert "did not answer within 0.5 s" in failed and ">Retry</a>" in failed
    loaded = (await viewer_client.get(part, headers={"HX-Request": "true"})).content.decode()
    assert loaded.lstrip().startswith('<div id="session-detail"') and "slow-one" in loaded
    assert 'id="telemetry-pane"' in loaded
