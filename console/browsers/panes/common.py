"""What the processes, files and computer panes share: the session lookup and their URLs."""

from __future__ import annotations

from django.http import Http404, HttpResponseRedirect
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from console.service import NotFound, browsers
from console.service.http import Service


def url(request, name: str, session_id: str, **kwargs) -> str:
    return reverse(
        f"browsers:panes:{name}", kwargs={"org_slug": request.org.slug, "session_id": session_id, **kwargs}
    )


def session_url(request, session_id: str, pane: str = "") -> str:
    base = reverse("browsers:detail", kwargs={"org_slug": request.org.slug, "session_id": session_id})
    return f"{base}#pane-{pane}" if pane else base


def redirect(request, target: str):
    return HttpResponseClientRedirect(target) if request.htmx else HttpResponseRedirect(target)


async def get_session(request, session_id: str) -> browsers.Session:
    try:
        return await browsers.get_session(request.service, session_id, include_deleted=True)
    except NotFound:
        raise Http404("No such browser session") from None


def viewport(session: browsers.Session) -> tuple[int, int]:
    size = session.viewport
    if size is not None and size.width and size.height:
        return size.width, size.height
    return 1920, 1080


def plain_service(request) -> Service:
    """A plain Service (not the request's lazy object): a relay's upstream outlives the request."""
    return request.service.with_project(request.service.project)
