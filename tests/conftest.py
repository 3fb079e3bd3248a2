"""The shared cast: two organizations and one user per role, each with a logged-in async client.

`org` is bound to a fresh sandbox tenant (tests/sandbox_fixtures.py), so pages that call the service
talk to a real sandbox over HTTP. The fixtures use the transactional database: async views run their
queries on another thread, which must see the committed rows.
"""

import time
from importlib import import_module
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.test import AsyncClient

from console.accounts.models import Membership, Organization, Role
from tests import server_logs

pytest_plugins = ["tests.sandbox_fixtures", "tests.database"]

PASSWORD = "a-long-test-password-42"
BACKEND = "console.accounts.backends.UsernameOrEmailBackend"
ROOT = Path(__file__).resolve().parent.parent


def make_user(username: str):
    return get_user_model().objects.create_user(username, f"{username}@example.com", PASSWORD)


def make_client(user) -> AsyncClient:
    """A client signed in as ``user``: the session ``force_login`` would leave, written directly. Its
    ``login()`` also sends ``user_logged_in``, whose receivers (django-axes' bookkeeping of attempts, the
    user's ``last_login``) cost some 25 ms of CPU a client in a dozen queries, and the suite makes thousands
    of clients. Signing in itself is tested through the login form (tests/accounts/test_login.py,
    tests/browser/test_auth_flow.py), lockouts included."""
    session = import_module(settings.SESSION_ENGINE).SessionStore()
    session[SESSION_KEY] = user._meta.pk.value_to_string(user)
    session[BACKEND_SESSION_KEY] = BACKEND
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    client = AsyncClient()
    client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key
    secure = settings.SESSION_COOKIE_SECURE or None
    cookie = {"max-age": None, "path": "/", "domain": settings.SESSION_COOKIE_DOMAIN, "secure": secure}
    client.cookies[settings.SESSION_COOKIE_NAME].update({**cookie, "expires": None})
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


def pytest_configure(config):
    """Tests hash passwords with a fast hasher: Argon2 is built to be slow, and every fixture user pays it.
    And they wait longer for the sandbox than operators wait for the service (below).

    The console under test in a subprocess (browser tests) keeps its real hashers; the test that checks
    Argon2 is the console's hasher brings it back for itself (tests/accounts/test_login.py)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # A page gives up on a read after SERVICE_READ_TIMEOUT (5 s): on a loaded machine running four workers the
    # sandbox can take that long, and a test about something else then sees "did not answer". The tests of
    # that timeout set their own (the ``settings`` fixture).
    settings.SERVICE_READ_TIMEOUT = 30.0
    config.stash[STARTED] = time.monotonic()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    """Browser tests carry the `browser` marker, and each browser test module is one unit of work for
    pytest-xdist (`--dist loadgroup`): its module-scoped Chromium and consoles start once, on one worker."""
    for item in items:
        path = item.nodeid.replace("\\", "/")
        if path.startswith("tests/browser/"):
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.xdist_group(path.split("::")[0]))


def pytest_addoption(parser):
    parser.addoption("--tier", default="", help="name this run in .run/test-tiers (make test's summary)")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """With --tier NAME (make test), one line for the tier in .run/test-tiers: what ran and how long."""
    tier = config.getoption("tier")
    if not tier or hasattr(config, "workerinput"):  # the controller only, under pytest-xdist
        return
    counts = {kind: len(terminalreporter.stats.get(kind, [])) for kind in COUNTED}
    said = ", ".join(f"{number} {kind}" for kind, number in counts.items() if number or kind == "passed")
    seconds = round(time.monotonic() - config.stash[STARTED])
    line = f"{tier}: {said} in {seconds // 60} min {seconds % 60:02d} s ({exitstatus=})"
    (ROOT / ".run").mkdir(exist_ok=True)  # a tier run by hand, without make's mkdir
    with open(ROOT / ".run" / "test-tiers", "a") as summary:
        summary.write(line + "\n")


STARTED = pytest.StashKey[float]()
LOG_SIZES = pytest.StashKey[dict]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.stash[LOG_SIZES] = server_logs.sizes()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report shows what the servers the tests started (sandboxes, consoles) wrote while it
    ran: the sandbox's reason for a 503 the page only summed up (tests/server_logs.py)."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for name, text in server_logs.written_since(item.stash.get(LOG_SIZES, {})):
            report.sections.append((f"Captured output of the server {name} ({call.when})", text))


def pytest_unconfigure(config):
    server_logs.remove()


COUNTED = ("passed", "failed", "error", "skipped", "deselected", "rerun")
