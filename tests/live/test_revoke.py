"""Open event streams end once their member may no longer watch them (console/live/guard.py).

Over real HTTP: the console's ASGI application under uvicorn (in a thread of this process, on the test
database), read with httpx as a browser's EventSource would. The re-check interval is set low; the tests
wait on events with generous timeouts and never measure time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.contrib.sessions.models import Session

from console.accounts.models import Membership, Role
from console.live.guard import ACCESS_ENDED, Access
from tests.conftest import make_client
from tests.listener import console_on_thread
from tests.sandbox_fixtures import create_session

WAIT = 60  # seconds: a bound against hanging, never a measurement
LIVE = b'data-state="live"'  # the upstream is open: telemetry sent from now on reaches the stream


@pytest.fixture
def console_url(transactional_db, settings):
    settings.STREAM_RECHECK_SECONDS = 0.2
    settings.LIVE_KEEPALIVE_SECONDS = 0.5
    with console_on_thread() as url:
        yield url


def signed_in(user) -> dict:
    """A signed-in browser's cookie (a real Django session row)."""
    return {
        django_settings.SESSION_COOKIE_NAME: make_client(user)
        .cookies[django_settings.SESSION_COOKIE_NAME]
        .value
    }


class Stream:
    """One EventSource-like reader of an event stream, over HTTP."""

    def __init__(self, base_url: str, cookies: dict, path: str):
        self.client = httpx.AsyncClient(base_url=base_url, cookies=cookies, timeout=WAIT)
        self.path = path
        self.seen = b""
        self.closed = False
        self._context = None
        self._chunks = None

    async def __aenter__(self) -> Stream:
        self._context = self.client.stream("GET", self.path, headers={"Accept": "text/event-stream"})
        response = await self._context.__aenter__()
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"] == "text/event-stream"
        self._chunks = response.aiter_bytes()
        return self

    async def __aexit__(self, *exc):
        with contextlib.suppress(Exception):
            await self._context.__aexit__(*exc)
        await self.client.aclose()

    async def until(self, needle: bytes, count: int = 1) -> bytes:
        """Everything read so far once ``needle`` came (``count`` times in all)."""
        async with asyncio.timeout(WAIT):
            while self.seen.count(needle) < count:
                try:
                    self.seen += await anext(self._chunks)
                except StopAsyncIteration:
                    self.closed = True
                    raise AssertionError(
                        f"the stream closed before {needle!r}: {self.seen[-500:]!r}"
                    ) from None
        return self.seen

    async def to_the_end(self) -> bytes:
        async with asyncio.timeout(WAIT):
            async for chunk in self._chunks:
                self.seen += chunk
        self.closed = True
        return self.seen


@pytest.fixture
def viewer_cookies(viewer) -> dict:
    return signed_in(viewer)


@pytest.fixture
def operator_cookies(operator) -> dict:
    return signed_in(operator)


def key_of(cookies: dict) -> str:
    return cookies[django_settings.SESSION_COOKIE_NAME]


@pytest.fixture
def session_id(quiet):
    telemetry = {"enabled": True, "browser": {"console": {"enabled": True}}}
    return create_session(quiet, name="watched", telemetry=telemetry)["session_id"]


@pytest.fixture
def quiet(tenant):
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    return tenant


def burst(tenant, session_id: str, count: int = 3) -> int:
    """Telemetry events of the session; the id of the last one."""
    answer = tenant.control("POST", "telemetry/burst", {"session_id": session_id, "count": count}).json()
    return answer["first_seq"] + count - 1


SIGN_IN = '<a href="/login/?next=%2Fo%2Facme%2F" data-sign-in>sign in again</a>'
ENDED_HTML = f"Access ended — {SIGN_IN}"


async def assert_ended_by_the_guard(stream: Stream) -> None:
    seen = (await stream.to_the_end()).decode()
    assert stream.closed
    # The pane's status chip says "ended" with the reason, then `ended` (sse-close) closes the EventSource;
    # both carry the link to sign in again (static/js/console.js points its `next` at the pane's page).
    status, ended = seen.rstrip().split("\n\n")[-2:]
    assert status == (
        'event: status\ndata: <span class="live-status live-status--ended" data-state="ended">Ended</span> '
        f'<span class="live-status__message">{ENDED_HTML}</span>'
    )
    assert ended == f"event: ended\ndata: {ENDED_HTML}"


async def assert_still_streams(stream: Stream, tenant, session_id: str) -> None:
    last = burst(tenant, session_id)
    await stream.until(f"id: {last}\n".encode())
    assert ACCESS_ENDED.encode() not in stream.seen


def telemetry(session_id: str) -> str:
    return f"/o/acme/browsers/{session_id}/telemetry/stream/"


@contextlib.asynccontextmanager
async def live_telemetry(console_url: str, session_id: str, *cookies: dict):
    """One live telemetry stream of the session per member (their cookies), each past its first frame."""
    async with contextlib.AsyncExitStack() as stack:
        streams = [
            await stack.enter_async_context(Stream(console_url, jar, telemetry(session_id)))
            for jar in cookies
        ]
        for stream in streams:
            await stream.until(LIVE)
        yield streams


async def test_it_ends_the_stream_of_a_member_removed_from_the_org(
    console_url, viewer, viewer_cookies, operator_cookies, quiet, session_id
):
    async with live_telemetry(console_url, session_id, viewer_cookies, operator_cookies) as (gone, stays):
        first = burst(quiet, session_id)
        await gone.until(f"id: {first}\n".encode())
        await stays.until(f"id: {first}\n".encode())

        await Membership.objects.filter(user=viewer).adelete()
        await assert_ended_by_the_guard(gone)
        # What came before the removal was delivered; nothing after it was.
        assert f"id: {first}\n".encode() in gone.seen
        await assert_still_streams(stays, quiet, session_id)


async def test_it_ends_the_stream_of_a_session_flushed_elsewhere(
    console_url, viewer, viewer_cookies, operator_cookies, quiet, session_id
):
    async with live_telemetry(console_url, session_id, viewer_cookies, operator_cookies) as (gone, stays):
        # "Sign out everywhere", a session flushed by another request: the row is gone.
        assert await Session.objects.filter(session_key=key_of(viewer_cookies)).adelete() == (
            1,
            {"sessions.Session": 1},
        )
        await assert_ended_by_the_guard(gone)
        await assert_still_streams(stays, quiet, session_id)


async def test_it_ends_the_stream_once_the_password_changed(
    console_url, viewer, viewer_cookies, operator_cookies, quiet, session_id
):
    async with live_telemetry(console_url, session_id, viewer_cookies, operator_cookies) as (gone, stays):

        def change_password():
            viewer.set_password("a-brand-new-password-43")
            viewer.save()

        await sync_to_async(change_password)()
        await assert_ended_by_the_guard(gone)
        await assert_still_streams(stays, quiet, session_id)


async def test_it_keeps_the_stream_of_a_member_whose_role_changed_but_still_suffices(
    console_url, operator, operator_cookies, quiet, session_id
):
    # Every stream needs the viewer role only (the views say so): lowering an operator to viewer keeps it.
    async with Stream(console_url, operator_cookies, telemetry(session_id)) as stream:
        await stream.until(LIVE)
        await Membership.objects.filter(user=operator).aupdate(role=Role.VIEWER)
        await assert_still_streams(stream, quiet, session_id)
        await assert_still_streams(stream, quiet, session_id)  # and after further re-checks


async def test_it_ends_a_stream_that_needs_a_role_the_member_lost(operator, operator_cookies, org):
    # No stream view needs more than viewer today; the check itself is the guard's, whatever the role.
    access = Access(user_id=operator.pk, org_id=org.pk, session_key=key_of(operator_cookies))
    needing_operator = Access(**{**access.__dict__, "role": "operator"})
    assert await needing_operator.allowed() == (True, "")
    await Membership.objects.filter(user=operator).aupdate(role=Role.VIEWER)
    assert await needing_operator.allowed() == (False, "below the operator role")
    assert await access.allowed() == (True, "")


async def test_it_ends_the_stream_of_a_deactivated_user(operator, operator_cookies, org):
    access = Access(user_id=operator.pk, org_id=org.pk, session_key=key_of(operator_cookies))
    assert await access.allowed() == (True, "")
    operator.is_active = False
    await sync_to_async(operator.save)()
    assert await access.allowed() == (False, "the user is inactive")


async def test_it_refuses_a_session_of_another_user(operator, viewer_cookies, org):
    access = Access(user_id=operator.pk, org_id=org.pk, session_key=key_of(viewer_cookies))
    assert await access.allowed() == (False, "the session is another user's")


@pytest.fixture
def silent_cdp():
    """A CDP address that accepts connections and never answers: the relay stays "connecting"."""
    listener = socket.create_server(("127.0.0.1", 0))
    yield f"ws://127.0.0.1:{listener.getsockname()[1]}/devtools/browser/x"
    listener.close()


async def test_it_ends_the_screen_and_the_wall_of_a_member_removed_from_the_org(
    console_url, viewer, viewer_cookies, operator_cookies, quiet, session_id, silent_cdp
):
    quiet.fault(method="GET", path=f"^/browsers/{session_id}$", fields={"cdp_ws_url": silent_cdp}, count=None)
    screen = f"/o/acme/browsers/{session_id}/screen/stream/"
    wall = f"/o/acme/browsers/wall/stream/?id={session_id}"
    async with (
        Stream(console_url, viewer_cookies, screen) as gone,
        Stream(console_url, viewer_cookies, wall) as wall_gone,
        Stream(console_url, operator_cookies, screen) as stays,
    ):
        for stream in (gone, wall_gone, stays):
            await stream.until(b'"state": "connecting"')
        await Membership.objects.filter(user=viewer).adelete()
        for stream in (gone, wall_gone):
            lines = (await stream.to_the_end()).decode().rstrip().splitlines()
            assert lines[-2] == "event: status"
            final = json.loads(lines[-1].removeprefix("data: "))
            # The pane and the wall's tile close their EventSource on "ended" (static/js/screen.js).
            assert final == {
                "s": session_id,
                "state": "ended",
                "label": ACCESS_ENDED,
                "message": "",
                "sign_in": "/login/?next=%2Fo%2Facme%2F",
            }
        # The operator's screen is still open: keepalives keep coming, and no "ended".
        before = stays.seen.count(b"event: keepalive")
        await stays.until(b"event: keepalive", count=before + 2)
        assert b'"ended"' not in stays.seen


def test_it_rechecks_with_one_query(operator, operator_cookies, org):
    from asgiref.sync import async_to_sync
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    access = Access(user_id=operator.pk, org_id=org.pk, session_key=key_of(operator_cookies), role="operator")
    # async_to_sync from this thread: the ORM call comes back to it, on the connection captured here.
    with CaptureQueriesContext(connection) as queries:
        assert async_to_sync(access.allowed)() == (True, "")
    assert len(queries) == 1, [q["sql"] for q in queries]
