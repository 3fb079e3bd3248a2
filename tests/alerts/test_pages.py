"""The alerts pages: what each role sees and may do; every change audited; bad input refused."""

from __future__ import annotations

import pytest

from console.accounts.models import AuditLog
from console.alerts import kinds
from console.alerts.models import Alert, Channel, Rule, Silence
from tests.alerts.conftest import at_mfa_code, make_rule, run_round

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def firing(org, tenant):
    make_rule(org, kinds.AUTH_NEEDS_HUMAN, name="Logins")
    at_mfa_code(tenant)
    run_round(org)
    return Alert.objects.get(org=org, state=Alert.State.FIRING, rule__kind=kinds.AUTH_NEEDS_HUMAN)


def url(org, rest=""):
    return f"/o/{org.slug}/alerts/{rest}"


async def test_it_lists_firing_alerts_with_a_link_to_the_subject(viewer_client, org, firing):
    response = await viewer_client.get(url(org), headers={"HX-Request": "true", "HX-Target": "alerts-table"})
    html = response.content.decode()
    assert response.status_code == 200
    assert f"/o/{org.slug}/auth/{firing.subject_id}/" in html and "Firing" in html
    assert "Acknowledge…" not in html  # viewers see, they do not acknowledge


async def test_it_shows_the_bell_count_of_firing_alerts(viewer_client, org, firing):
    response = await viewer_client.get(url(org, "bell/"))
    assert 'data-count="1"' in response.content.decode()


async def test_it_lets_an_operator_acknowledge_with_a_note_and_audits_it(operator_client, org, firing):
    response = await operator_client.post(url(org, f"{firing.pk}/acknowledge/"), {"note": "on it"})
    assert response.status_code == 302
    await firing.arefresh_from_db()
    assert firing.acknowledged_at is not None and firing.ack_note == "on it"
    row = await AuditLog.objects.aget(org=org, action="alert.acknowledge")
    assert row.target_id == str(firing.pk)
    bell = await operator_client.get(url(org, "bell/"))
    assert 'data-count="0"' in bell.content.decode()


async def test_it_refuses_an_acknowledgement_without_a_note(operator_client, org, firing):
    response = await operator_client.post(url(org, f"{firing.pk}/acknowledge/"), {"note": ""})
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    await firing.arefresh_from_db()
    assert firing.acknowledged_at is None


async def test_it_refuses_viewers_every_change(viewer_client, org, firing):
    rule = await Rule.objects.aget(org=org, name="Logins")
    channel = await Channel.objects.aget(org=org, kind="console")
    for path, data in [
        (f"{firing.pk}/acknowledge/", {"note": "x"}),
        ("silences/", {"scope": "all", "minutes": "60", "note": "x"}),
        ("rules/new/", {"name": "x", "kind": "pool_exhausted", "severity": "info"}),
        (f"rules/{rule.pk}/delete/", {}),
        (f"channels/{channel.pk}/test/", {}),
    ]:
        response = await viewer_client.post(url(org, path), data)
        assert response.status_code == 403, path
    assert not await AuditLog.objects.filter(org=org).aexists()


async def test_it_silences_everything_for_a_while_and_audits_it(operator_client, org, firing):
    response = await operator_client.post(
        url(org, "silences/"), {"scope": "all", "minutes": "60", "note": "deploy"}
    )
    assert response.status_code == 302
    silence = await Silence.objects.aget(org=org)
    assert silence.rule_id is None and silence.subject_key == "" and silence.note == "deploy"
    assert await AuditLog.objects.filter(org=org, action="alert.silence").aexists()
    bell = await operator_client.get(url(org, "bell/"))
    assert 'data-count="0"' in bell.content.decode()


async def test_it_never_deletes_the_service_rule(admin_client, org):
    rule = await Rule.objects.aget(org=org, builtin=True)
    response = await admin_client.post(url(org, f"rules/{rule.pk}/delete/"))
    assert response.status_code == 302
    assert await Rule.objects.filter(pk=rule.pk).aexists()


async def test_it_lets_an_admin_create_a_rule(admin_client, org):
    channel = await Channel.objects.aget(org=org, kind="console")
    response = await admin_client.post(
        url(org, "rules/new/"),
        {
            "name": "Pools",
            "kind": "pool_exhausted",
            "severity": "warning",
            "for_seconds": "0",
            "repeat_minutes": "60",
            "channels": [channel.pk],
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    rule = await Rule.objects.aget(org=org, name="Pools")
    assert rule.kind == kinds.POOL_EXHAUSTED
    assert await AuditLog.objects.filter(
        org=org, action="alert.rule.create", target_id=str(rule.pk)
    ).aexists()


async def test_it_refuses_a_webhook_on_a_metadata_address(admin_client, org):
    response = await admin_client.post(
        url(org, "channels/new/"),
        {
            "name": "evil",
            "kind": "webhook",
            "url": "http://169.254.169.254/latest",
            "format": "json",
            "secret": "s" * 20,
            "enabled": "on",
        },
    )
    assert response.status_code == 200
    assert "link-local" in response.content.decode() or "metadata" in response.content.decode()
    assert not await Channel.objects.filter(org=org, kind="webhook").aexists()


async def test_it_pages_render_for_each_role(viewer_client, admin_client, org, firing):
    for client in (viewer_client, admin_client):
        for path in ("", "?wait=1&state=all", f"{firing.pk}/", "rules/", "channels/"):
            response = await client.get(url(org, path))
            assert response.status_code == 200, path
    for path in ("rules/new/", "channels/new/?kind=email", "channels/new/?kind=webhook"):
        assert (await admin_client.get(url(org, path))).status_code == 200


async def test_it_creates_a_webhook_whose_secret_is_never_shown_and_sends_a_signed_test(
    admin_client, org, receiver
):
    import json

    from console.alerts import webhooks

    secret = "a-long-and-random-signing-secret"
    response = await admin_client.post(
        url(org, "channels/new/?kind=webhook"),
        {
            "name": "ops hook",
            "kind": "webhook",
            "url": receiver.url,
            "format": "json",
            "secret": secret,
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    channel = await Channel.objects.aget(org=org, kind="webhook")
    page = (await admin_client.get(url(org, f"channels/{channel.pk}/"))).content.decode()
    assert secret not in page and "••••cret" in page
    response = await admin_client.post(url(org, f"channels/{channel.pk}/test/"))
    assert response.status_code == 302
    [sent] = receiver.requests
    assert webhooks.verify(sent["body"], secret, sent["headers"][webhooks.SIGNATURE_HEADER])
    assert json.loads(sent["body"])["event"] == "test"
    page = (await admin_client.get(url(org, f"channels/{channel.pk}/"))).content.decode()
    assert "Delivered" in page and " ms</td>" in page
    row = await AuditLog.objects.aget(org=org, action="alert.channel.test")
    assert row.outcome == "ok" and secret not in row.detail


async def test_it_says_when_a_test_was_refused_and_logs_the_status(admin_client, org, receiver):
    receiver.status = 503
    channel = Channel(org=org, kind="webhook", name="down", url=receiver.url)
    channel.set_secret("a-long-and-random-signing-secret")
    await channel.asave()
    response = await admin_client.post(url(org, f"channels/{channel.pk}/test/"), follow=True)
    assert "The test was not delivered: HTTP 503" in response.content.decode()
    row = await AuditLog.objects.aget(org=org, action="alert.channel.test")
    assert row.outcome == "error"


async def test_it_sends_a_test_mail_to_a_real_smtp_server(admin_client, org, smtp_server):
    response = await admin_client.post(
        url(org, "channels/new/?kind=email"),
        {"name": "on-call", "kind": "email", "addresses": "a@example.com\nb@example.com", "enabled": "on"},
    )
    assert response.status_code == 302
    channel = await Channel.objects.aget(org=org, kind="email")
    await admin_client.post(url(org, f"channels/{channel.pk}/test/"))
    [message] = smtp_server.wait_for(1)
    assert sorted(message.rcpt_tos) == ["a@example.com", "b@example.com"]
    assert "[TEST]" in message.content.decode()
