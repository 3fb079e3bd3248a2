import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command

from console.accounts import crypto
from console.accounts.models import Organization

pytestmark = pytest.mark.django_db


def test_it_rotates_keys(settings):
    old = settings.KEY_ENCRYPTION_KEYS[0]
    org = Organization(name="R", slug="r", service_base_url="http://x.invalid")
    org.set_api_key("sk-rotate-me-1234")
    org.save()
    new = Fernet.generate_key().decode()
    settings.KEY_ENCRYPTION_KEYS = [new, old]
    call_command("rotate_org_keys")
    org.refresh_from_db()
    settings.KEY_ENCRYPTION_KEYS = [new]
    crypto.reset()
    try:
        assert org.api_key == "sk-rotate-me-1234"
    finally:
        settings.KEY_ENCRYPTION_KEYS = [old]
        crypto.reset()


def test_it_seeds_the_demo_idempotently(settings):
    call_command("demo")
    call_command("demo")
    org = Organization.objects.get(slug="demo")
    assert org.api_key == settings.SANDBOX_DEMO_KEY
    assert sorted(org.memberships.values_list("user__username", "role")) == [
        ("demo", "admin"),
        ("operator", "operator"),
        ("viewer", "viewer"),
    ]
