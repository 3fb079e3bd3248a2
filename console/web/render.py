"""One render function for pages and their htmx partials."""

from urllib.parse import urlsplit

from django.contrib.messages import get_messages
from django.http import HttpResponseRedirect
from django.shortcuts import render as django_render
from django.template.loader import render_to_string
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect


def render(request, template, context=None, partial=None, *, status=200):
    """Render the full page, or `template#partial` when htmx targets the element with that id.

    On htmx responses pending flash messages ride along as an out-of-band swap into `#flash`, so a
    partial update still shows "Member removed" and the like.
    """
    name = template
    if partial and request.htmx and request.htmx.target == partial:
        name = f"{template}#{partial}"
    response = django_render(request, name, context, status=status)
    if request.htmx and name != template:
        append_flash(request, response)
    return response


def append_flash(request, response) -> None:
    """Append the flash area as an out-of-band swap, when there is something to say."""
    storage = get_messages(request)
    if not len(storage):
        return
    html = render_to_string("base.html#flash", {"messages": storage, "flash_oob": True}, request)
    response.content = response.content + html.encode()


def done(request, url: str):
    """After a mutation: a client-side redirect for htmx (the page reloads there), a plain one otherwise."""
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)


def safe_next(request, url: str | None, fallback: str, *, under: str = "/") -> str:
    """A ``next`` from the request as a path on this site (below ``under``), else ``fallback``.

    An absolute URL of this host (htmx sends the page's full URL) becomes its path and query; anything
    naming another host or scheme, or a path a browser would read as one (``//host``, ``/\\host``), is
    replaced by ``fallback``.
    """
    if not url or not url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return fallback
    parts = urlsplit(url.strip())
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    if not path.startswith(under) or path.startswith(("//", "/\\")):
        return fallback
    return path
