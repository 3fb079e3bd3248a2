"""What the panes of a session share: the session lookup and their URLs."""

from __future__ import annotations

from django.http import HttpResponseRedirect
from django_htmx.http import HttpResponseClientRedirect

from console.service import browsers
from console.service.http import Service
from console.web.pages import get_or_404, org_reverse


def url(request, name: str, session_id: str, **kwargs) -> str:
    return org_reverse(request, f"browsers:panes:{name}", session_id=session_id, **kwargs)


# The session's tabs with a URL of their own (templates/browsers/_tabs.html); the screen and the telemetry
# are the session page itself.
TABS = ("processes", "files", "computer", "tools", "replays")


def session_url(request, session_id: str, pane: str = "") -> str:
    if pane in TABS:
        return url(request, pane, session_id)
    base = org_reverse(request, "browsers:detail", session_id=session_id)
    return f"{base}#pane-{pane}" if pane else base


def redirect(request, target: str):
    return HttpResponseClientRedirect(target) if request.htmx else HttpResponseRedirect(target)


async def get_session(request, session_id: str, *, include_deleted: bool = True) -> browsers.Session:
    read = browsers.get_session(request.service, session_id, include_deleted=include_deleted)
    return await get_or_404(read, "browser session")


def viewport(session: browsers.Session) -> tuple[int, int]:
    size = session.viewport
    if size is not None and size.width and size.height:
        return size.width, size.height
    return 1920, 1080


def plain_service(request) -> Service:
    """A plain Service (not the request's lazy object): a relay's upstream outlives the request."""
    return request.service.with_project(request.service.project)
