"""Rule kinds beyond logins, each against a sandbox tenant set up to meet its condition."""

from __future__ import annotations

import pytest

from console.alerts import kinds
from console.alerts.models import Alert
from tests.alerts.conftest import make_rule, run_round
from tests.sandbox_fixtures import create_session

pytestmark = pytest.mark.django_db(transaction=True)


def firing(org, kind):
    return list(Alert.objects.filter(org=org, rule__kind=kind, state=Alert.State.FIRING))


def test_it_fires_at_the_projects_cap_and_resolves_below_it(org, tenant):
    make_rule(org, kinds.CAPACITY, threshold=100)
    assert (
        tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 2}).status_code
        == 200
    )
    first = create_session(tenant)
    create_session(tenant)
    run_round(org)
    [alert] = firing(org, kinds.CAPACITY)
    assert alert.values["used"] == 2 and alert.values["cap"] == 2
    assert tenant.call("DELETE", f"/browsers/{first['session_id']}").status_code == 204
    run_round(org)
    assert firing(org, kinds.CAPACITY) == []
    assert Alert.objects.get(pk=alert.pk).state == Alert.State.RESOLVED


def test_it_counts_console_errors_across_sessions_against_the_threshold(org, tenant):
    make_rule(org, kinds.TELEMETRY_ERRORS, threshold=3, window_minutes=10)
    one = create_session(tenant, telemetry={"enabled": True, "browser": {"console": {"enabled": True}}})
    two = create_session(tenant, telemetry={"enabled": True, "browser": {"console": {"enabled": True}}})
    errors = [{"type": "console_error", "category": "console", "data": {"text": "boom", "level": "error"}}]
    tenant.control("POST", "telemetry/emit", {"session_id": one["session_id"], "events": errors * 2})
    run_round(org)
    assert firing(org, kinds.TELEMETRY_ERRORS) == []  # 2 of 3
    tenant.control("POST", "telemetry/emit", {"session_id": two["session_id"], "events": errors})
    run_round(org)
    [alert] = firing(org, kinds.TELEMETRY_ERRORS)
    assert alert.values["errors"] >= 3


def test_it_fires_for_an_api_key_that_expires_within_the_threshold(org, tenant):
    make_rule(org, kinds.API_KEY_EXPIRING, threshold=14)
    soon = tenant.call("POST", "/org/api_keys", json={"name": "ci", "days_to_expire": 3}).json()
    tenant.call("POST", "/org/api_keys", json={"name": "long", "days_to_expire": 300})
    run_round(org)
    [alert] = firing(org, kinds.API_KEY_EXPIRING)
    assert alert.subject_id == soon["id"] and "3 day" in alert.summary


def test_it_fires_for_a_pool_whose_browsers_are_all_leased(org, tenant):
    make_rule(org, kinds.POOL_EXHAUSTED)
    pool = tenant.call(
        "POST", "/browser_pools", json={"name": "tiny", "size": 1, "fill_rate_per_minute": 100}
    ).json()
    tenant.advance(120)  # filled on the tenant clock
    acquired = tenant.call(
        "POST", f"/browser_pools/{pool['id']}/acquire", json={"acquire_timeout_seconds": 5}
    )
    assert acquired.status_code == 200, acquired.text
    run_round(org)
    [alert] = firing(org, kinds.POOL_EXHAUSTED)
    assert alert.subject_id == pool["id"]
    release = {"session_id": acquired.json()["session_id"]}
    assert tenant.call("POST", f"/browser_pools/{pool['id']}/release", json=release).status_code == 204
    run_round(org)
    assert firing(org, kinds.POOL_EXHAUSTED) == []
