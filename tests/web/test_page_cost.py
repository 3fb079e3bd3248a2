"""What a proxied page costs, counted rather than timed (docs/benchmarks.md has the timings).

The projects list over the real sandbox: the database queries it makes and how many trips to the ORM thread
they take, and the connections it opens to the service. None of these depend on how loaded the machine is.
"""

import contextlib
import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.db import connection
from django.test import AsyncRequestFactory
from django.test.utils import CaptureQueriesContext

from console.accounts.models import Membership, Organization, Role
from console.web.decorators import load_memberships
from tests.conftest import make_client, make_user
from tests.sandbox_fixtures import new_tenant, running_sandbox, socket_inodes

# A proxied list page: one service call. (The projects list also measures each project's use against its
# cap, console/capacity.py: several calls per project, on purpose.)
PAGE = "/o/{slug}/profiles/"
LISTED = ("GET", "/profiles")


@pytest.fixture
def orm_trips(monkeypatch):
    """Counts the calls handed to the ORM thread (asgiref's one executor for thread-sensitive calls outside
    a ThreadSensitiveContext, as under console/asgi.py): each is a thread switch there and back."""
    executor = SyncToAsync.single_thread_executor
    calls = []
    original = executor.submit

    def submit(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(executor, "submit", submit)
    return calls


async def captured_queries(client, path: str) -> list[str]:
    """The SQL of one request, captured on the ORM thread, where async views run their queries."""
    capture = CaptureQueriesContext(connection)
    await sync_to_async(capture.__enter__)()
    try:
        response = await client.get(path)
    finally:
        await sync_to_async(capture.__exit__)(None, None, None)
    assert response.status_code == 200 and "bench-11" in response.content.decode()
    return await sync_to_async(lambda: [q["sql"] for q in capture.captured_queries])()


async def test_it_draws_a_proxied_page_with_three_queries_and_one_service_call(admin_client, tenant):
    for i in range(12):
        tenant.call("POST", "/profiles", json={"name": f"bench-{i:02d}"})
    page = PAGE.format(slug="acme")
    await admin_client.get(page)  # the session's first page may refresh its cookie

    before = len(tenant.requests())
    queries = await captured_queries(admin_client, page)
    known = ("django_session", "auth_user", "accounts_membership")
    tables = [next((t for t in known if t in q), q) for q in queries]
    # The session, its user, the user's memberships with their organizations: nothing per row, nothing
    # from the template or its context processors.
    assert tables == ["django_session", "auth_user", "accounts_membership"], queries
    # One service call.
    assert [(r["method"], r["path"]) for r in tenant.requests()[before:]] == [LISTED]


async def test_it_resolves_the_user_and_memberships_in_one_orm_trip(admin, admin_client, orm_trips):
    factory = AsyncRequestFactory()
    factory.cookies["sessionid"] = admin_client.cookies["sessionid"].value
    request = factory.get("/o/acme/")
    SessionMiddleware(lambda r: None).process_request(request)
    AuthenticationMiddleware(lambda r: None).process_request(request)

    memberships = await load_memberships(request)

    assert request.user == admin and [m.org.slug for m in memberships] == ["acme"]
    # The session, the user and the memberships in one trip (three before: session, user, memberships).
    assert len(orm_trips) == 1
    assert await request.auser() == admin and len(orm_trips) == 1  # kept for audited()


def _connections_to(port: int) -> set[int]:
    """Local ports of this process's established TCP connections to ``port`` (from /proc)."""
    ours = socket_inodes([os.getpid()])
    ports = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
                if state == "01" and inode in ours and int(remote.rsplit(":", 1)[1], 16) == port:
                    ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


@pytest.fixture
def two_orgs(transactional_db):
    """Two organizations on two tenants of a sandbox of their own (nothing else in this test run calls it:
    the other tests' event streams and pollers use the shared one), and a member of both."""
    with running_sandbox(SANDBOX_ENGINE="simulated") as url:
        tenants = [new_tenant(url) for _ in range(2)]
        user = make_user("pat")
        for slug, tenant in zip(("north", "south"), tenants, strict=True):
            org = Organization(name=slug.title(), slug=slug, service_base_url=tenant.url)
            org.set_api_key(tenant.api_key)
            org.save()
            Membership.objects.create(user=user, org=org, role=Role.VIEWER)
        yield make_client(user), tenants


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="reads connections from /proc")
async def test_it_reuses_one_connection_across_pages_and_orgs_each_call_with_its_own_key(two_orgs):
    """One pooled connection serves page after page, of either organization; the key is per request
    (never the client's), so each tenant sees exactly its own calls."""
    client, tenants = two_orgs
    sandbox_port = urlsplit(tenants[0].url).port
    assert _connections_to(sandbox_port) == set()

    used = set()
    for i in range(6):
        response = await client.get(PAGE.format(slug=("north", "south")[i % 2]))
        assert response.status_code == 200
        used |= _connections_to(sandbox_port)

    assert len(used) == 1, used
    for tenant in tenants:
        assert [(r["method"], r["path"]) for r in tenant.requests()] == [LISTED] * 3
