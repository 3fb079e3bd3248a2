"""Access re-checks for long-lived event streams: every SSE response of the console goes through here.

A view checks membership and role when a stream opens; a stream may then last for hours. ``stream_response``
wraps a stream's bytes so that, every ``STREAM_RECHECK_SECONDS``, a watcher asks the database (one small
query, through the async ORM on the process's one ORM thread: no connection is held by the stream) whether
the request's member still may watch:

- the Django session the stream was opened with still exists and has not expired (signing out, "sign out
  everywhere", a flushed or deleted session end it), still names this user, and its auth hash still matches
  the user's password (a password change elsewhere ends it), and the user is still active;
- the user is still a member of the org, with at least the role the view asked for (``org_view`` records it);
- the session still meets the org's sign-in policy (console/signin/policy.py: single sign-on or two-factor
  required since, a session of another org's single sign-on), read in the same query.

When any of that is no longer true, the stream stops reading (its viewer leaves the hub, so an upstream
nobody else watches closes), sends ``final`` (an event its pane already takes as "ended") and closes. The
final words carry a link to sign in (``sign_in_url``): the pane's script points its ``next`` at the page the
pane is on (static/js/console.js, ``a[data-sign-in]``), and stops reconnecting. A
database error during a check keeps the stream and tries again at the next interval (nobody can revoke
anything while the database is unreachable either); it is logged. Any other failure of a check ends it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from importlib import import_module

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.db import DatabaseError, close_old_connections
from django.db.models import Subquery
from django.http import HttpRequest, StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.html import format_html
from django.utils.http import urlencode

from console.accounts.models import Membership, Role
from console.signin import policy

log = logging.getLogger("console.live")

ACCESS_ENDED = "Access ended — sign in again"


def sign_in_url(request: HttpRequest) -> str:
    """Where "sign in again" leads: the login page, back to the org's overview after it (the pane's script
    replaces ``next`` with the page it is on)."""
    return f"{reverse('login')}?{urlencode({'next': reverse('dashboard', args=[request.org.slug])})}"


def access_ended_html(request: HttpRequest) -> str:
    """ACCESS_ENDED as HTML, "sign in again" a link (``data-sign-in``: see static/js/console.js)."""
    return format_html('Access ended — <a href="{}" data-sign-in>sign in again</a>', sign_in_url(request))


@dataclass(frozen=True)
class Access:
    """Who opened a stream, with which Django session, in which org, needing which role."""

    user_id: int
    org_id: int
    session_key: str | None
    role: str = "viewer"

    @classmethod
    def of(cls, request: HttpRequest) -> Access:
        return cls(
            user_id=request.user.pk,
            org_id=request.org.pk,
            session_key=request.session.session_key,
            role=getattr(request, "required_role", "viewer"),
        )

    async def allowed(self) -> tuple[bool, str]:
        """(still allowed, why not): one query for the membership, the user and the session row."""
        if not self.session_key:
            return False, "no session"
        store = import_module(settings.SESSION_ENGINE).SessionStore
        # With the org's sign-in policy and whether the user has a second factor (console/signin/policy.py).
        rows = policy.with_policy(Membership.objects.filter(user_id=self.user_id, org_id=self.org_id))
        columns = ("role", "user__is_active", "user__password", *policy.FIELDS)
        database_sessions = hasattr(store, "get_model_class")
        if database_sessions:
            live = store.get_model_class().objects.filter(
                session_key=self.session_key, expire_date__gt=timezone.now()
            )
            # The session row is not related to the membership: an uncorrelated subquery, still one query.
            rows = rows.annotate(session_data=Subquery(live.values("session_data")[:1]))
            row = await rows.values_list(*columns, "session_data").afirst()
        else:
            row = await rows.values_list(*columns).afirst()
        if row is None:
            return False, "no longer a member"
        role, active, password = row[:3]
        if not active:
            return False, "the user is inactive"
        if not Role.at_least(role, self.role):
            return False, f"below the {self.role} role"
        if database_sessions:
            data = store().decode(row[-1]) if row[-1] is not None else None
        else:
            data = await store(session_key=self.session_key).aload() or None
        if data is None:
            return False, "the session ended"
        if str(data.get(SESSION_KEY)) != str(self.user_id):
            return False, "the session is another user's"
        if not _hash_matches(data.get(HASH_SESSION_KEY), password):
            return False, "the password changed"
        org_policy, has_factor = policy.policy_of_row(row[3 : 3 + len(policy.FIELDS)])
        refused = policy.refusal(
            org_policy, user_id=self.user_id, org_id=self.org_id, has_second_factor=has_factor, session=data
        )
        if refused:
            return False, policy.REASONS[refused]
        return True, ""


def _hash_matches(session_hash: str | None, password: str) -> bool:
    """Django's own test (``django.contrib.auth.get_user``): the current secret, then the fallbacks."""
    if not session_hash:
        return False
    user = get_user_model()(password=password)
    if constant_time_compare(session_hash, user.get_session_auth_hash()):
        return True
    return any(constant_time_compare(session_hash, h) for h in user.get_session_auth_fallback_hash())


def interval() -> float:
    return float(getattr(settings, "STREAM_RECHECK_SECONDS", 15.0))


async def guarded(
    stream: AsyncIterator[bytes], access: Access, every: float, final: bytes
) -> AsyncIterator[bytes]:
    """``stream``'s bytes while ``access`` holds; ``final`` and the end once it no longer does.

    The stream may wait long for its next chunk (a keepalive every 15 s, a quiet upstream): a watcher task
    re-checks meanwhile, and cuts that wait short through the timeout scope around it."""
    loop = asyncio.get_running_loop()
    waiting: asyncio.Timeout | None = None  # the scope around the current wait for a chunk, if any
    revoked = False

    async def watch() -> None:
        nonlocal revoked
        while True:
            await asyncio.sleep(every)
            try:
                ok, why = await access.allowed()
            except DatabaseError:
                log.warning("stream access re-check failed; trying again in %.0f s", every, exc_info=True)
                await sync_to_async(close_old_connections)()
                continue
            except Exception:  # a check that cannot be made is a check that failed
                log.exception("stream access re-check broke; ending the stream")
                ok, why = False, "the re-check failed"
            if not ok:
                log.info("ending a stream of user %s in org %s: %s", access.user_id, access.org_id, why)
                revoked = True
                if waiting is not None:
                    waiting.reschedule(loop.time())  # the reader stops waiting now
                return

    watcher = loop.create_task(watch())
    try:
        while not revoked:
            try:
                async with asyncio.timeout(None) as waiting:
                    chunk = await anext(stream)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if not revoked:
                    raise
                break
            finally:
                waiting = None
            yield chunk
        await stream.aclose()  # leave the hub before saying so
        yield final
    finally:
        watcher.cancel()
        await stream.aclose()


def stream_response(
    request: HttpRequest, stream: AsyncIterator[bytes], *, final: bytes
) -> StreamingHttpResponse:
    """The text/event-stream response of ``stream`` for this org view's request (never compressed, never
    buffered), ended with ``final`` once the member may no longer watch it."""
    body = guarded(stream, Access.of(request), interval(), final)
    response = StreamingHttpResponse(body, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
