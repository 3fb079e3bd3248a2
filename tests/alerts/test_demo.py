"""`manage.py demo` gives the Demo organization rules on the in-console channel: after one round the bell
shows the demo tenant's logins that need a human."""

import io

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.test import AsyncClient

from console.accounts.models import Organization
from console.alerts import kinds
from console.alerts.models import Alert, Rule
from tests.alerts.conftest import run_round
from tests.sandbox_fixtures import TEST_DEMO_KEY

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_demo_rings_the_bell_for_its_logins_that_need_a_human(settings, sandbox_url):
    settings.SANDBOX_URL, settings.SANDBOX_DEMO_KEY = sandbox_url, TEST_DEMO_KEY
    call_command("demo", stdout=io.StringIO())
    call_command("demo", stdout=io.StringIO())  # idempotent: the rules are not made twice
    org = Organization.objects.get(slug="demo")
    assert Rule.objects.filter(org=org, kind=kinds.AUTH_NEEDS_HUMAN).count() == 1
    run_round(org)
    firing = Alert.objects.filter(org=org, rule__kind=kinds.AUTH_NEEDS_HUMAN, state=Alert.State.FIRING)
    labels = {a.subject_label for a in firing}
    assert "support-team on mfa.example.com" in labels  # NEEDS_AUTH after an SMS login expired
    assert "partner-portal on accounts.example.com" in labels  # a flow waiting for input
    assert "price-watch on bot.example.com" in labels  # bot_detected
    assert "ci-bot on github.com" not in labels  # authenticated, re-auths on its own
    client = AsyncClient()
    client.force_login(org.memberships.get(user__username="viewer").user)
    bell = async_to_sync(client.get)("/o/demo/alerts/bell/").content.decode()
    everything = Alert.objects.filter(org=org, state=Alert.State.FIRING).count()
    assert everything >= firing.count() >= 3 and f'data-count="{everything}"' in bell
