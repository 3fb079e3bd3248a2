"""Rules evaluated against a sandbox tenant, the way the worker runs a round (rounds.run)."""

from __future__ import annotations

import pytest

from console.alerts import kinds
from console.alerts.models import Alert, EvaluationRound, Notification, Rule
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


def test_it_fires_when_the_service_refuses_the_key(org, tenant):
    Rule.objects.filter(org=org, builtin=True).update(for_seconds=0)
    org.set_api_key("not-a-key-of-this-sandbox")
    org.save()
    record = run_round(org)
    [alert] = active(org, kinds.SERVICE)
    assert alert.state == Alert.State.FIRING and alert.values["problem"] == "refused"
    assert record.state == EvaluationRound.State.OK
