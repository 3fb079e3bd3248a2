"""The session page's header (name, status badge, uptime, actions) on its own, for a page that learned the
session ended while it was open: it asks for the header again, so nothing on it still says "active"."""

from __future__ import annotations

from datetime import timedelta

from django.views.decorators.http import require_http_methods

from console.browsers import presenters
from console.browsers.panes import common
from console.service import browsers
from console.web.decorators import org_view
from console.web.render import render


def context(session: browsers.Session) -> dict:
    """What ``browsers/_session_head.html`` needs besides the session."""
    uptime = session.uptime
    return {
        "session": session,
        "uptime": presenters.duration(uptime),
        "uptime_seconds": int(uptime.total_seconds()) if uptime is not None else None,
        "timeout": presenters.duration(timedelta(seconds=session.timeout_seconds or 0)),
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def session_head(request, session_id: str):
    session = await common.get_session(request, session_id)
    return render(request, "browsers/_session_head.html", context(session))
