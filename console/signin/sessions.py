"""Each user's signed-in sessions (allauth.usersessions' rows): tracked at sign-in and, at most once a
minute, on the org pages they use; ended one by one, all but the current one, or all (an admin's "sign out
everywhere"). Ending a session deletes its Django session: its pages and open event streams end with it
(the stream guard re-checks the session)."""

from __future__ import annotations

import time

from allauth.usersessions.models import UserSession
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.models import Session

SEEN = "signin_seen_at"
SEEN_EVERY = 60  # seconds between two updates of a session's "last seen"


def track(request, user) -> None:
    """Record (or refresh) this session's row: sync, on the ORM thread (org_view's user lookup calls it)."""
    session = request.session
    if not session.session_key or not user.is_authenticated:
        return
    now = time.time()
    seen = session.get(SEEN)
    if isinstance(seen, (int, float)) and now - seen < SEEN_EVERY:
        return
    UserSession.objects.create_from_request(request, user=user, session=session)
    session[SEEN] = now


def sessions_of(user) -> list[UserSession]:
    """The user's live sessions, newest activity first (rows of ended sessions are removed on the way)."""
    return sorted(UserSession.objects.purge_and_list(user), key=lambda s: s.last_seen_at, reverse=True)


def end(user, *, keep: str | None = None, only: str | None = None) -> int:
    """End the user's sessions (all, all but ``keep``, or the one ``only``); how many ended."""
    ended = 0
    for user_session in UserSession.objects.filter(user=user):
        if user_session.session_key == keep or (only is not None and user_session.session_key != only):
            continue
        user_session.end()
        ended += 1
    return ended


def end_everywhere(user) -> int:
    """Every session of the user, tracked or not: what an admin's "sign out everywhere" does.

    Sessions made before their first tracked request have no row: the Django sessions are read too (every
    stored session is decoded: an admin's rare action, not a page's)."""
    ended = end(user)
    stray = [
        s.pk for s in Session.objects.iterator() if str(s.get_decoded().get(SESSION_KEY)) == str(user.pk)
    ]
    Session.objects.filter(pk__in=stray).delete()
    return ended + len(stray)
