"""The overview: live figures per card, each card its own deferred part with its own errors, links to the
filtered lists, 24-hour charts."""

import itertools
import re
from datetime import UTC, datetime, timedelta

import pytest

from console.accounts.models import AuditLog
from console.dashboard import charts
from console.usage.views import RangeForm, window

URL = "/o/acme/"
NAVIGATE = {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}


async def card(client, name: str) -> str:
    response = await client.get(f"{URL}?part=card-{name}", headers={"HX-Request": "true"})
    assert response.status_code == 200
    return response.content.decode()


def figure(html: str, name: str) -> str:
    found = re.search(rf'data-figure="{name}">([^<]*)<', html)
    assert found, html
    return found.group(1)


async def test_it_renders_the_frame_at_once_for_a_browser(viewer_client, tenant):
    tenant.fault(method="*", path=".*", latency_ms=3000, count=None)
    response = await viewer_client.get(URL, headers=NAVIGATE)
    body = response.content.decode()
    assert response.status_code == 200
    assert tenant.requests() == []  # nothing asked of the service before the frame went out
    for name in ("sessions", "pools", "auth", "invocations", "deployments", "usage", "telemetry"):
        assert f'id="card-{name}" class="deferred deferred-loading"' in body
        assert f'hx-get="/o/acme/?part=card-{name}"' in body
    assert "card-audit" not in body  # the audit log is for admins


async def test_it_counts_running_sessions_against_the_caps(viewer_client, tenant):
    tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 40})
    for _ in range(3):
        tenant.call("POST", "/browsers", json={})
    html = await card(viewer_client, "sessions")
    assert figure(html, "running-sessions") == "3"
    assert "3 of 40 concurrent sessions in use in this project" in html
    assert "Cap: the organization&#x27;s default cap per project; 37 left." in html
    assert 'href="/o/acme/browsers/?status=active"' in html
    assert 'hx-trigger="poll" data-poll="10"' in html  # refreshes itself


async def test_it_lists_pools_with_their_fill(viewer_client, tenant):
    tenant.call("POST", "/browser_pools", json={"name": "warm", "size": 4})
    tenant.advance(60)
    html = await card(viewer_client, "pools")
    assert "warm" in html
    assert 'data-size="4" data-acquired="0" data-available="1"' in html


async def test_it_shows_connections_that_need_a_person_with_the_reason(viewer_client, tenant):
    created = tenant.call("POST", "/auth/connections", json={"domain": "example.com", "profile_name": "ops"})
    assert created.status_code in (200, 201), created.text
    html = await card(viewer_client, "auth")
    assert figure(html, "needs-auth") == "1"
    assert "ops @ example.com" in html
    assert "never logged in successfully" in html
    assert 'href="/o/acme/auth/?status=NEEDS_AUTH"' in html


async def test_it_counts_invocations_running_and_failed_in_the_last_hour(viewer_client, tenant):
    html = await card(viewer_client, "invocations")
    assert figure(html, "running-invocations") == "0"
    assert figure(html, "failed-invocations") == "0"
    assert 'href="/o/acme/invocations/?since=1h&amp;status=failed"' in html
    assert 'href="/o/acme/invocations/?status=running"' in html


async def test_it_draws_the_last_day_as_svg_bars(viewer_client, tenant):
    tenant.call("POST", "/browsers", json={})
    html = await card(viewer_client, "usage")
    assert html.count('class="ov-bars"') == 2
    assert "style=" not in html  # the CSP allows no inline styles
    assert re.search(r'class="ov-bar" [^>]*data-value="1"', html)


def test_it_buckets_the_last_day_on_whole_hours_as_the_usage_page_does():
    # The buckets rolled with the clock: every bar's tooltip ("07:33-08:33 UTC") changed each minute, so each
    # poll's answer did, and the card was swapped and drawn again though nothing had happened.
    now = datetime(2026, 11, 28, 8, 33, 12, tzinfo=UTC)
    starts = charts.hours(now)
    assert len(starts) == 24
    assert starts[-1] == datetime(2026, 11, 28, 8, tzinfo=UTC)  # the last bucket holds now
    assert starts[0] == datetime(2026, 11, 27, 9, tzinfo=UTC)
    assert all(b - a == timedelta(hours=1) for a, b in itertools.pairwise(starts))
    form = RangeForm({"range": "24h"})
    assert window(form, now).starts() == starts
    moments = (now, now.replace(minute=59, second=59))
    drawn = [charts.bars(charts.hours(moment), [0] * 24, "sessions") for moment in moments]
    assert drawn[0] == drawn[1]
    assert drawn[0]["bars"][-1]["label"] == "08:00-09:00 UTC: 0 sessions"


async def test_it_shows_one_failing_card_with_a_retry_and_leaves_the_others(viewer_client, tenant, settings):
    settings.SERVICE_READ_TIMEOUT = 0.5
    tenant.fault(method="GET", path="^/browser_pools$", latency_ms=2000, count=1)
    html = await card(viewer_client, "pools")
    assert 'class="deferred deferred-failed"' in html
    assert "did not answer within 0.5 s" in html
    assert 'hx-get="/o/acme/?part=card-pools" hx-target="#card-pools"' in html and ">Retry</a>" in html
    assert figure(await card(viewer_client, "sessions"), "running-sessions") == "0"
    assert "Pools" in await card(viewer_client, "pools")  # the retry works once the service answers


async def test_it_renders_the_whole_page_for_a_client_without_navigation(viewer_client, tenant):
    body = (await viewer_client.get(URL)).content.decode()
    assert 'data-figure="running-sessions">0<' in body
    assert "deferred-loading" not in body


async def test_it_shows_the_latest_audit_entries_to_admins(admin_client, org, tenant):
    await AuditLog.objects.acreate(org=org, actor_username="alice", action="pool.create", detail="warm")
    html = await card(admin_client, "audit")
    assert "pool.create" in html and "alice" in html


async def test_it_hides_the_audit_card_from_viewers(viewer_client, tenant):
    response = await viewer_client.get(f"{URL}?part=card-audit", headers={"HX-Request": "true"})
    assert response.status_code == 404


async def test_it_gathers_console_errors_and_failed_requests_of_recent_sessions(viewer_client, tenant):
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    on = {"browser": {c: {"enabled": True} for c in ("console", "network")}}
    session = tenant.call("POST", "/browsers", json={"name": "checkout", "telemetry": on}).json()
    events = [
        {"type": "console_error", "data": {"text": "TypeError: cart is undefined"}},
        {"type": "console_log", "data": {"text": "all fine", "level": "info"}},
        {
            "type": "network_loading_failed",
            "data": {"url": "https://shop.example/api", "error_text": "refused"},
        },
        {  # given up on by the browser (a favicon headless Chromium drops): not a failure
            "type": "network_loading_failed",
            "data": {
                "url": "https://shop.example/favicon.ico",
                "error_text": "net::ERR_ABORTED",
                "canceled": True,
            },
        },
    ]
    tenant.control("POST", "telemetry/emit", {"session_id": session["session_id"], "events": events})
    html = await card(viewer_client, "telemetry")
    assert "TypeError: cart is undefined" in html
    assert "shop.example/api" in html
    assert "all fine" not in html
    assert "favicon.ico" not in html
    assert f'href="/o/acme/browsers/{session["session_id"]}/?type=console_error' in html


@pytest.mark.parametrize("name", ["deployments", "telemetry"])
async def test_it_answers_every_card(viewer_client, tenant, name):
    assert f'id="card-{name}" class="card' in await card(viewer_client, name)
