"""Rules evaluated against a sandbox tenant, the way the worker runs a round (rounds.run)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console.accounts.models import Organization
from console.alerts import builtins, kinds
from console.alerts.models import Alert, Channel, EvaluationRound, Notification, Rule
from tests.alerts.conftest import at_mfa_code, finish_login, make_rule, run_round

pytestmark = pytest.mark.django_db(transaction=True)


def active(org, kind):
    return list(Alert.objects.filter(org=org, rule__kind=kind, state__in=Alert.ACTIVE))


def test_it_fires_for_a_login_left_at_its_mfa_step_within_one_round(org, tenant):
    make_rule(org, kinds.AUTH_NEEDS_HUMAN)
    code = at_mfa_code(tenant)
    record = run_round(org)
    assert record.state == EvaluationRound.State.OK, record.notes
    [alert] = active(org, kinds.AUTH_NEEDS_HUMAN)
    assert alert.state == Alert.State.FIRING
    assert alert.subject_id == code["id"] and "waiting for input" in alert.summary
    assert alert.values["flow_step"] == "AWAITING_INPUT"
    assert [n.event for n in alert.notifications.all()] == ["firing"]


def test_it_resolves_once_the_login_succeeds_and_says_so_once(org, tenant):
    make_rule(org, kinds.AUTH_NEEDS_HUMAN)
    code = at_mfa_code(tenant)
    run_round(org)
    run_round(org)  # still waiting: no second notification before the repeat interval
    finish_login(tenant, code)
    run_round(org)
    alert = Alert.objects.get(org=org, subject_id=code["id"])
    assert alert.state == Alert.State.RESOLVED and alert.resolved_at is not None
    assert [n.event for n in alert.notifications.order_by("seq")] == ["firing", "resolved"]


def test_it_keeps_alerts_as_they_are_when_a_round_cannot_read(org, tenant):
    make_rule(org, kinds.AUTH_NEEDS_HUMAN)
    at_mfa_code(tenant)
    run_round(org)
    tenant.fault(method="GET", path="^/auth/connections$", status=503, count=20)
    record = run_round(org)
    assert record.state == EvaluationRound.State.INCOMPLETE
    assert any("auth connections" in note for note in record.notes), record.notes
    assert len(active(org, kinds.AUTH_NEEDS_HUMAN)) == 1


def test_it_waits_for_the_pending_time_before_firing(org, tenant):
    make_rule(org, kinds.AUTH_NEEDS_HUMAN, for_seconds=3600)
    at_mfa_code(tenant)
    run_round(org)
    [alert] = active(org, kinds.AUTH_NEEDS_HUMAN)
    assert alert.state == Alert.State.PENDING
    assert not Notification.objects.filter(alert=alert).exists()


def test_every_organization_has_the_service_rule(org):
    rule = Rule.objects.get(org=org, builtin=True)
    assert rule.kind == kinds.SERVICE


def test_a_new_organization_gets_its_channel_and_rule_without_looking_for_them(transactional_db):
    # Its insert, then the channel, the rule and the rule's channel: no lookups for what cannot exist yet.
    # (An organization saved again is looked at by every evaluation round's ensure(), which makes either.)
    org = Organization(name="Initech", slug="initech", service_base_url="http://127.0.0.1:9")
    org.set_api_key("a-key")
    with CaptureQueriesContext(connection) as queries:
        org.save()
    statements = [query["sql"].split(None, 1)[0].upper() for query in queries]
    assert [verb for verb in statements if verb not in ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE")] == [
        "INSERT"
    ] * 4
    rule = Rule.objects.get(org=org, builtin=True)
    assert list(rule.channels.values_list("kind", flat=True)) == [Channel.Kind.CONSOLE]
    assert builtins.ensure(org) == rule  # a second call finds them and makes nothing
    assert Channel.objects.filter(org=org).count() == 1


def test_it_fires_when_the_service_refuses_the_key(org, tenant):
    Rule.objects.filter(org=org, builtin=True).update(for_seconds=0)
    org.set_api_key("not-a-key-of-this-sandbox")
    org.save()
    record = run_round(org)
    [alert] = active(org, kinds.SERVICE)
    assert alert.state == Alert.State.FIRING and alert.values["problem"] == "refused"
    assert record.state == EvaluationRound.State.OK


def test_it_fires_for_a_crashed_session_and_reads_telemetry_within_its_bounds(org, tenant, settings):
    from tests.sandbox_fixtures import create_session

    make_rule(org, kinds.SESSION_CRASHED)
    session = create_session(tenant, telemetry={"enabled": True})
    quiet = create_session(tenant, telemetry={"enabled": True})
    tenant.control(
        "POST",
        "telemetry/emit",
        {
            "session_id": session["session_id"],
            "events": [
                {
                    "type": "service_crashed",
                    "category": "system",
                    "data": {"service_name": "chromium", "phase": "running"},
                }
            ],
        },
    )
    settings.ALERTS_TELEMETRY_SESSIONS = 1  # one session's telemetry per round: the other waits its turn
    first = run_round(org)
    assert any("read 1 of 2 sessions" in remark for remark in first.remarks), first.remarks
    assert first.state == EvaluationRound.State.OK  # a bound, not a failure
    run_round(org)
    [alert] = active(org, kinds.SESSION_CRASHED)
    assert alert.subject_id == session["session_id"] and alert.state == Alert.State.FIRING
    assert "crashed" in alert.summary and alert.values["what"] == "chromium"
    assert quiet["session_id"] != alert.subject_id


def test_it_fires_for_an_oom_kill_and_resolves_when_the_session_ends(org, tenant):
    from tests.sandbox_fixtures import create_session

    make_rule(org, kinds.SESSION_CRASHED)
    session = create_session(tenant, telemetry={"enabled": True})
    tenant.control(
        "POST",
        "telemetry/emit",
        {
            "session_id": session["session_id"],
            "events": [
                {
                    "type": "system_oom_kill",
                    "category": "system",
                    "data": {"pid": 7, "process_name": "chrome", "rss_kb": 900000},
                }
            ],
        },
    )
    run_round(org)
    [alert] = active(org, kinds.SESSION_CRASHED)
    assert "lack of memory" in alert.summary
    # The session ends: nothing is left to look at, and the alert resolves.
    assert tenant.call("DELETE", f"/browsers/{session['session_id']}").status_code == 204
    run_round(org)
    assert active(org, kinds.SESSION_CRASHED) == []
