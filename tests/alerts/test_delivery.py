"""Notifications reach real receivers on loopback: a webhook server and an SMTP server run by the test."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from console.alerts import delivery as sending
from console.alerts import kinds, webhooks
from console.alerts.models import Alert, Channel, Delivery, DeliveryAttempt, Notification, Silence
from tests.alerts.conftest import Queue, at_mfa_code, finish_login, make_rule, run_round, send_all

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "a-webhook-secret-of-some-length"


def webhook(org, url, fmt="json") -> Channel:
    channel = Channel(org=org, kind=Channel.Kind.WEBHOOK, name="hook", url=url, format=fmt)
    channel.set_secret(SECRET)
    channel.save()
    return channel


def test_it_posts_one_signed_firing_then_the_resolve_after_the_login_succeeds(org, tenant, receiver):
    make_rule(org, kinds.AUTH_NEEDS_HUMAN, channels=[webhook(org, receiver.url)])
    code = at_mfa_code(tenant)
    queue = Queue()
    run_round(org, queue)
    assert len(queue.deliveries) == 1  # one task for the worker, enqueued with the transition
    assert send_all() == 1
    [first] = receiver.wait_for(1)
    assert webhooks.verify(first["body"], SECRET, first["headers"][webhooks.SIGNATURE_HEADER])
    assert not webhooks.verify(
        first["body"], "another-secret-entirely", first["headers"][webhooks.SIGNATURE_HEADER]
    )
    fired = json.loads(first["body"])
    assert fired["event"] == "firing" and fired["alert"]["subject"]["id"] == code["id"]
    assert fired["delivery_id"] == first["headers"][webhooks.DELIVERY_HEADER]
    assert fired["alert"]["subject"]["url"].endswith(f"/o/{org.slug}/auth/{code['id']}/")

    run_round(org)  # still waiting: nothing new to say
    assert send_all() == 0
    finish_login(tenant, code)
    run_round(org)
    send_all()
    second = receiver.wait_for(2)[1]
    assert webhooks.verify(second["body"], SECRET, second["headers"][webhooks.SIGNATURE_HEADER])
    resolved = json.loads(second["body"])
    assert resolved["event"] == "resolved" and resolved["alert"]["resolved_at"]
    assert len(receiver.requests) == 2
    attempt = DeliveryAttempt.objects.filter(delivery__channel__kind="webhook").order_by("started_at").first()
    assert attempt.outcome == "ok" and attempt.status_code == 200 and attempt.latency_ms is not None


def test_it_sends_a_slack_compatible_body(org, tenant, receiver):
    make_rule(org, kinds.AUTH_NEEDS_HUMAN, channels=[webhook(org, receiver.url, fmt="slack")])
    at_mfa_code(tenant)
    run_round(org)
    send_all()
    body = json.loads(receiver.wait_for(1)[0]["body"])
    assert body["text"].startswith("*[FIRING] [warning]") and "Open in the console" in body["text"]


def test_it_retries_a_refused_webhook_with_a_growing_wait_and_logs_each_attempt(
    org, tenant, receiver, settings
):
    settings.ALERTS_RETRY_SECONDS = 0  # the retry is due at once: the test sends it without waiting
    receiver.status = 500
    make_rule(org, kinds.AUTH_NEEDS_HUMAN, channels=[webhook(org, receiver.url)])
    at_mfa_code(tenant)
    run_round(org)
    assert sending.deliver()  # one try: refused
    row = Delivery.objects.get(channel__kind="webhook")
    assert row.state == Delivery.State.PENDING and row.last_error.startswith("HTTP 500")
    receiver.status = 200
    assert sending.deliver()
    delivery = Delivery.objects.get(channel__kind="webhook")
    assert delivery.state == Delivery.State.SENT and delivery.attempts == 2
    outcomes = list(delivery.attempt_log.order_by("number").values_list("outcome", "status_code"))
    assert outcomes[0] == ("refused", 500) and outcomes[-1] == ("ok", 200)
    bodies = {r["headers"][webhooks.DELIVERY_HEADER] for r in receiver.requests}
    assert bodies == {str(delivery.pk)}  # the same delivery id on every try


def test_it_mails_a_firing_alert_through_a_real_smtp_server(org, tenant, smtp_server):
    channel = Channel.objects.create(
        org=org, kind=Channel.Kind.EMAIL, name="on-call", addresses="oncall@example.com"
    )
    make_rule(org, kinds.AUTH_NEEDS_HUMAN, channels=[channel], name="Logins")
    at_mfa_code(tenant)
    run_round(org)
    send_all()
    [message] = smtp_server.wait_for(1)
    assert message.rcpt_tos == ["oncall@example.com"]
    text = message.content.decode()
    assert "[FIRING] [warning] Logins: support on mfa.example.com" in text
    assert "waiting for input" in text


def test_a_silence_keeps_the_notification_from_the_channels(org, tenant, receiver):
    rule = make_rule(org, kinds.AUTH_NEEDS_HUMAN, channels=[webhook(org, receiver.url)])
    Silence.objects.create(
        org=org, rule=rule, ends_at=timezone.now() + timezone.timedelta(hours=1), note="deploy"
    )
    at_mfa_code(tenant)
    run_round(org)
    assert send_all() == 0 and receiver.requests == []
    alert = Alert.objects.get(rule=rule)
    assert alert.state == Alert.State.FIRING  # it still fires and shows; only the channels are quiet
    [note] = Notification.objects.filter(alert=alert)
    assert note.silenced_by is not None and not note.deliveries.exists()
    Silence.objects.update(ends_at=timezone.now())
    run_round(org)  # the silence ended while it fires: said now, once
    send_all()
    assert json.loads(receiver.wait_for(1)[0]["body"])["event"] == "firing"
    run_round(org)
    assert send_all() == 0
