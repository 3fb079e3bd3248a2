"""The shared cast: two organizations and one user per role, each with a logged-in async client.

`org` is bound to a fresh sandbox tenant (tests/sandbox_fixtures.py), so pages that call the service
talk to a real sandbox over HTTP. The fixtures use the transactional database: async views run their
queries on another thread, which must see the committed rows.
"""

import pytest
from django.contrib.auth import get_user_model
from django.test import AsyncClient

from console.accounts.models import Membership, Organization, Role

pytest_plugins = ["tests.sandbox_fixtures", "tests.database"]

PASSWORD = "a-long-test-password-42"


def make_user(username: str):
    return get_user_model().objects.create_user(username, f"{username}@example.com", PASSWORD)


def make_client(user) -> AsyncClient:
    client = AsyncClient()
    client.force_login(user, backend="console.accounts.backends.UsernameOrEmailBackend")
    return client


@pytest.fixture
def org(transactional_db, tenant) -> Organization:
    org = Organization(name="Acme", slug="acme", service_base_url=tenant.url)
    org.set_api_key(tenant.api_key)
    org.save()
    return org


@pytest.fixture
def other_tenant(sandbox_url):
    from tests.sandbox_fixtures import new_tenant  # a plugin (above): imported here, not before pytest does

    return new_tenant(sandbox_url)


@pytest.fixture
def other_org(transactional_db, other_tenant) -> Organization:
    """A second organization with a sandbox tenant of its own, so using the wrong key shows."""
    org = Organization(name="Globex", slug="globex", service_base_url=other_tenant.url)
    org.set_api_key(other_tenant.api_key)
    org.save()
    return org


@pytest.fixture
def admin(org):
    user = make_user("alice")
    Membership.objects.create(user=user, org=org, role=Role.ADMIN)
    return user


@pytest.fixture
def operator(org):
    user = make_user("oscar")
    Membership.objects.create(user=user, org=org, role=Role.OPERATOR)
    return user


@pytest.fixture
def viewer(org):
    user = make_user("victor")
    Membership.objects.create(user=user, org=org, role=Role.VIEWER)
    return user


@pytest.fixture
def outsider(other_org):
    """A member of another organization only."""
    user = make_user("olga")
    Membership.objects.create(user=user, org=other_org, role=Role.ADMIN)
    return user


@pytest.fixture
def admin_client(admin) -> AsyncClient:
    return make_client(admin)


@pytest.fixture
def operator_client(operator) -> AsyncClient:
    return make_client(operator)


@pytest.fixture
def viewer_client(viewer) -> AsyncClient:
    return make_client(viewer)


@pytest.fixture
def outsider_client(outsider) -> AsyncClient:
    return make_client(outsider)


def pytest_collection_modifyitems(config, items):
    """Browser tests run last, and all carry the `browser` marker.

    Sync Playwright keeps an event loop running in the main thread while its session-wide browser is open,
    so no async test may run after the first browser test starts.
    """
    browser_dir = "tests/browser/"
    for item in items:
        if browser_dir in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.browser)
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
