"""Error pages: 403 (and a form's expired CSRF token), 404 and 500 drawn inside the console's layout, never
Django's debug pages.

``ErrorPageMiddleware`` draws them in the layout (sidebar included, for a member of the org in the URL)
whatever DEBUG says: Django would otherwise show its debug pages, which list every URL pattern or a
traceback with local values. The handlers below (``handler404`` and co. in console/urls.py) are the
fallback when the middleware is not reached: plain templates with no context processors, so they render
in any state, the database down included.
"""

import logging
import re

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import render as django_render
from django.template.loader import render_to_string

from console.accounts.audit import TooManyRefusals
from console.web.inline import AsyncMiddleware

log = logging.getLogger(__name__)

PLAIN = "errors/layout.html"
ORG_PATH = re.compile(r"^/o/(?P<slug>[-a-zA-Z0-9_]+)/")


def _page(template: str, status: int, request=None, **context) -> HttpResponse:
    context = {"request_path": getattr(request, "path", ""), "layout": PLAIN, **context}
    response = HttpResponse(render_to_string(template, context), status=status)
    response.designed = "plain"
    return response


def not_found(request, exception=None):
    return _page("errors/404.html", 404, request)


def forbidden(request, exception=None):
    return _page("errors/403.html", 403, request)


def server_error(request):
    return _page("errors/500.html", 500, request)


def csrf_failure(request, reason=""):
    """A form whose CSRF token no longer matches (``CSRF_FAILURE_VIEW``): says so in words, never Django's
    page (with DEBUG, a list of what a developer should check). The reason is logged, not shown."""
    log.info("CSRF check failed on %s: %s", getattr(request, "path", ""), reason)
    return _page("errors/csrf.html", 403, request)


TEMPLATES = {
    403: "errors/403.html",
    404: "errors/404.html",
    429: "errors/429.html",
    500: "errors/500.html",
}


async def page_in_layout(request, status: int, **context) -> HttpResponse:
    """The error page for ``status`` in the full layout; the plain one if the layout cannot be drawn."""
    from console.web.decorators import load_memberships

    try:
        if getattr(request, "memberships", None) is None:
            await load_memberships(request)
        if getattr(request, "org", None) is None and (match := ORG_PATH.match(request.path)):
            # A URL no view answered (a stale link): still show the member's sidebar of that org.
            membership = next((m for m in request.memberships if m.org.slug == match["slug"]), None)
            if membership is not None:
                request.org, request.membership = membership.org, membership
        response = django_render(
            request, TEMPLATES[status], {"layout": "base.html", **context}, status=status
        )
    except Exception:
        log.exception("the error page could not be drawn in the layout")
        return _page(TEMPLATES[status], status, request, **context)
    response.designed = "layout"
    return response


class ErrorPageMiddleware(AsyncMiddleware):
    """Http404 and PermissionDenied from views, URLs nobody answers and (with DEBUG) crashes: designed pages.

    Sits inside the session, CSRF and auth middleware, so the page knows its user. A crash is still
    logged with its traceback by Django before its response reaches this middleware.
    """

    async def __call__(self, request):
        response = await self.get_response(request)
        designed = getattr(response, "designed", "")
        if designed == "layout":
            return response
        if response.status_code == 404 and getattr(request, "resolver_match", None) is None:
            return await page_in_layout(request, 404)  # no URL pattern matched: handler404 or the debug page
        if response.status_code == 500 and not designed:
            return await page_in_layout(request, 500)  # with DEBUG on, Django's traceback page
        return response

    async def process_exception(self, request, exception):
        if isinstance(exception, Http404):
            return await page_in_layout(request, 404)
        if isinstance(exception, TooManyRefusals):
            response = await page_in_layout(request, 429, retry_after=exception.retry_after)
            response["Retry-After"] = str(exception.retry_after)
            return response
        if isinstance(exception, PermissionDenied):
            return await page_in_layout(request, 403)
        return None
