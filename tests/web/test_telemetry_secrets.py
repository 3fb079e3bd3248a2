"""Secrets in telemetry never reach a page, a stream frame or a log, whatever the service sends.

The sandbox redacts what its own pages post, so these tests plant events through its control interface
(``/_sandbox/telemetry/emit`` stores ``data`` as given), as a service that redacts nothing would send them:
credential headers, a login form's password, a JSON body's token, a session cookie set by a response, a
token in a URL, a bearer token quoted by a console message, a password typed key by key. Every page that
shows telemetry is read as a viewer and must hold none of the secrets, and still what an operator
debugs with (methods, URL paths, header names, the fields that are not secrets).
"""

import asyncio
import html
import json
import logging
from datetime import timedelta

from console.service.records import parse_datetime
from tests.web.test_upstream_text import read_stream

ON = {
    "enabled": True,
    "browser": {c: {"enabled": True} for c in ("console", "network", "page", "interaction")},
}
LONG = 259_200

SECRETS = {
    "query": "qs-secret-1",
    "authorization": "hdr-secret-2",
    "cookie": "cookie-secret-3",
    "api_key": "apikey-secret-4",
    "csrf": "csrf-secret-5",
    "referer": "referer-secret-6",
    "form": "form-secret-7",
    "json": "json-secret-8",
    "text": "text-secret-9",
    "set_cookie": "setcookie-secret-10",
    "body": "body-secret-11",
    "log": "log-secret-12",
    "error": "error-secret-13",
    "failed": "failed-secret-14",
    "userinfo": "userinfo-secret-15",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqbyJ9.c2lnbmF0dXJlLXNlY3JldA",
}

EVENTS = [
    {
        "type": "network_request",
        "data": {
            "request_id": "r1",
            "method": "POST",
            "url": f"https://shop.example.com/login?token={SECRETS['query']}&step=2",
            "resource_type": "Document",
            "headers": {
                "Authorization": f"Bearer {SECRETS['authorization']}",
                "Cookie": f"sid={SECRETS['cookie']}; theme=dark",
                "X-Api-Key": SECRETS["api_key"],
                "X-CSRF-Token": SECRETS["csrf"],
                "Referer": f"https://shop.example.com/start?session={SECRETS['referer']}&lang=en",
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "text/html",
            },
            "post_data": f"email=jo%40example.com&password={SECRETS['form']}&remember=on",
        },
    },
    {
        "type": "network_request",
        "data": {
            "request_id": "r2",
            "method": "POST",
            "url": "https://shop.example.com/api/session",
            "headers": {"content-type": "application/json"},
            "post_data": json.dumps({"email": "jo@example.com", "password": SECRETS["json"], "plan": "gold"}),
        },
    },
    {
        "type": "network_request",
        "data": {
            "request_id": "r3",
            "method": "PUT",
            "url": f"https://jo:{SECRETS['userinfo']}@files.example.com/upload",
            "headers": {"content-type": "text/plain"},
            "post_data": f"not a form: password={SECRETS['text']} and more",
        },
    },
    {
        "type": "network_response",
        "data": {
            "request_id": "r2",
            "method": "POST",
            "status": 200,
            "url": "https://shop.example.com/api/session",
            "mime_type": "application/json",
            "headers": {
                "content-type": "application/json",
                "set-cookie": f"sid={SECRETS['set_cookie']}; HttpOnly",
            },
            "body": json.dumps(
                {"access_token": SECRETS["body"], "id_token": SECRETS["jwt"], "expires_in": 3600}
            ),
        },
    },
    {
        "type": "console_log",
        "data": {"level": "log", "text": f"retrying with Authorization: Bearer {SECRETS['log']}"},
    },
    {
        "type": "console_error",
        "data": {"text": f"TypeError loading https://api.example.com/v1/cart?api_key={SECRETS['error']}"},
    },
    {
        "type": "network_loading_failed",
        "data": {
            "request_id": "r4",
            "url": f"https://shop.example.com/pay?access_token={SECRETS['failed']}",
            "error_text": "net::ERR_CONNECTION_REFUSED",
        },
    },
    {"type": "interaction_key", "data": {"key": "Q", "selector": "input#password", "tag": "INPUT"}},
    {"type": "interaction_key", "data": {"key": "Enter", "selector": "input#password", "tag": "INPUT"}},
    {"type": "interaction_key", "data": {"key": "W", "selector": "input#search", "tag": "INPUT"}},
    {"type": "console_log", "data": {"level": "log", "text": "end-of-planted-events"}},
]


def session(tenant) -> str:
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    response = tenant.call("POST", "/browsers", json={"timeout_seconds": LONG, "telemetry": ON})
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def planted(tenant) -> str:
    sid = session(tenant)
    tenant.control("POST", "telemetry/emit", {"session_id": sid, "events": EVENTS})
    return sid


def assert_no_secret(body: str) -> None:
    leaked = [name for name, secret in SECRETS.items() if secret in body]
    assert not leaked, f"secrets shown: {leaked}"


def assert_debuggable(body: str) -> None:
    """What an operator needs is still there: methods, paths, header names, fields that are no secret."""
    text = html.unescape(body)
    for kept in (
        "POST https://shop.example.com/login?token=%5Bredacted%5D&step=2",
        '"Authorization": "[redacted]"',
        '"X-CSRF-Token": "[redacted]"',
        '"Cookie": "[redacted]"',
        '"set-cookie": "[redacted]"',
        '"Accept": "text/html"',
        "https://shop.example.com/start?session=%5Bredacted%5D&lang=en",
        "email=jo%40example.com&password=%5Bredacted%5D&remember=on",
        '\\"password\\": \\"[redacted]\\", \\"plan\\": \\"gold\\"',  # the JSON body, inside the event's JSON
        "not a form: password=[redacted] and more",
        '\\"expires_in\\": 3600',
        "retrying with Authorization: Bearer [redacted]",
        "https://jo:%5Bredacted%5D@files.example.com/upload",
        "key \u2022 in input#password",
        "key Enter in input#password",
        "key W in input#search",
    ):
        assert kept in text, kept


async def test_it_shows_no_secret_of_telemetry_on_the_session_page_or_in_its_history(
    viewer_client, tenant, caplog
):
    caplog.set_level(logging.DEBUG)
    sid = planted(tenant)
    page = (await viewer_client.get(f"/o/acme/browsers/{sid}/")).content.decode()
    assert "end-of-planted-events" in page
    assert_no_secret(page)
    assert_debuggable(page)
    history = await viewer_client.get(f"/o/acme/browsers/{sid}/telemetry/", headers={"HX-Request": "true"})
    assert history.status_code == 200 and "end-of-planted-events" in history.content.decode()
    assert_no_secret(history.content.decode())
    filtered = await viewer_client.get(
        f"/o/acme/browsers/{sid}/",
        {"type": "network_request,network_response"},
        headers={"HX-Request": "true", "HX-Target": "telemetry-pane"},
    )
    assert filtered.status_code == 200 and "files.example.com" in filtered.content.decode()
    assert_no_secret(filtered.content.decode())
    assert_no_secret(caplog.text)


async def test_it_relays_no_secret_in_live_frames(viewer_client, tenant, caplog):
    caplog.set_level(logging.DEBUG)
    sid = session(tenant)
    response = await viewer_client.get(f"/o/acme/browsers/{sid}/telemetry/stream/", {"last_event_id": 0})
    assert response.status_code == 200
    await asyncio.to_thread(tenant.control, "POST", "telemetry/emit", {"session_id": sid, "events": EVENTS})
    frames = await read_stream(response, "end-of-planted-events")
    assert frames.count("event: telemetry") == len(EVENTS)
    assert_no_secret(frames)
    assert_debuggable(frames)
    assert_no_secret(caplog.text)


async def test_it_shows_no_secret_on_the_overview_errors_card(viewer_client, tenant):
    planted(tenant)
    response = await viewer_client.get("/o/acme/?part=card-telemetry", headers={"HX-Request": "true"})
    body = html.unescape(response.content.decode())
    assert response.status_code == 200
    assert "TypeError loading https://api.example.com/v1/cart?api_key=%5Bredacted%5D" in body
    assert "https://shop.example.com/pay?access_token=%5Bredacted%5D" in body
    assert_no_secret(body)


async def test_it_shows_no_secret_in_the_replay_players_events(viewer_client, tenant):
    sid = planted(tenant)
    now = parse_datetime(tenant.control("GET", "clock").json()["now"])
    replay = {
        "replay_id": "rep_planted",
        "started_at": (now - timedelta(seconds=30)).isoformat(),
        "finished_at": (now + timedelta(seconds=30)).isoformat(),
    }
    # A service whose session has a finished replay around the planted events (the simulated engine
    # records none): its list, planted as the answer.
    tenant.fault(method="GET", path=f"^/browsers/{sid}/replays$", status=200, body=json.dumps([replay]))
    response = await viewer_client.get(f"/o/acme/browsers/{sid}/replays/rep_planted/")
    body = html.unescape(response.content.decode())
    assert response.status_code == 200
    assert "end-of-planted-events" in body and "revent--error" in body
    assert "key \u2022 in input#password" in body and "key Q" not in body
    assert_no_secret(body)
