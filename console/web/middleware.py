"""Middleware on the request path. All of it is async-capable: a sync-only hook costs a thread hop."""

import logging

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.urls import NoReverseMatch, reverse
from django.utils.cache import patch_cache_control
from whitenoise.middleware import WhiteNoiseMiddleware

from console import capacity
from console.web import views
from console.web.inline import AsyncMiddleware

log = logging.getLogger(__name__)


class ProbeMiddleware(AsyncMiddleware):
    """Answers /healthz and /readyz before anything reads the Host header; first in MIDDLEWARE.

    Orchestrators and the Dockerfile's HEALTHCHECK probe over plain HTTP with a Host of their own (a pod IP,
    127.0.0.1), which ALLOWED_HOSTS rightly refuses elsewhere: health must not depend on it, nor on the SSL
    redirect. Every other path still goes through Django's Host validation.
    """

    probes = {"/healthz": views.healthz, "/readyz": views.readyz}

    async def __call__(self, request):
        probe = self.probes.get(request.path_info)
        if probe is None:
            return await self.get_response(request)
        if iscoroutinefunction(probe):
            return await probe(request)
        return await sync_to_async(probe)(request)


class SecurityHeadersMiddleware:
    """Content-Security-Policy (no inline scripts or styles) and, for signed-in users, no caching.

    Django's SecurityMiddleware covers HSTS, nosniff, referrer and opener policy; X-Frame-Options comes
    from XFrameOptionsMiddleware. The CSP frames nothing (``frame-src 'none'``) unless the view set
    ``request.csp_frame_src`` to the one origin its page frames (a session's live view).

    Pages of a signed-in user carry ``Cache-Control: no-store, private``: a shared computer's browser cache
    or a proxy must not keep them. Streams keep their ``no-cache`` too (no-store does not stop EventSource).
    Static files are answered further in (StaticFilesMiddleware) and keep their long caching, since this
    only applies when the request carries a session cookie.
    """

    async_capable = True
    sync_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        if iscoroutinefunction(self):
            return self.__acall__(request)
        return self.add_headers(request, self.get_response(request))

    async def __acall__(self, request):
        return self.add_headers(request, await self.get_response(request))

    @staticmethod
    def add_headers(request, response):
        frame_src = getattr(request, "csp_frame_src", "") or "'none'"
        response.headers.setdefault(
            "Content-Security-Policy", f"{settings.CONTENT_SECURITY_POLICY}; frame-src {frame_src}"
        )
        if _has_session(request, response) and not getattr(response, "is_static", False):
            patch_cache_control(response, no_store=True, private=True)
        return response


def _has_session(request, response) -> bool:
    """Whether the response is for a signed-in user: the session cookie came with the request or is set.

    Deciding by the cookie, not by ``request.user``, costs no session lookup (and no thread hop).
    """
    name = settings.SESSION_COOKIE_NAME
    return name in request.COOKIES or name in response.cookies


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise, made async so that requests for pages pass straight through without a thread hop."""

    async_capable = True
    sync_capable = False

    def __init__(self, get_response=None, settings=settings):
        super().__init__(get_response, settings)
        markcoroutinefunction(self)

    async def __call__(self, request):
        if self.autorefresh:
            static_file = await sync_to_async(self.find_file)(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is not None:
            response = await sync_to_async(self.serve)(static_file, request)
            response.is_static = True  # keeps its long caching (SecurityHeadersMiddleware)
            return response
        return await self.get_response(request)


class ServiceErrorMiddleware(AsyncMiddleware):
    """Render service failures a view did not handle as a banner (htmx) or an error page.

    Views catch what they can explain (NotFound, Invalid, Conflict); timeouts, 5xx, a revoked key and
    rate limits end here. Never a traceback, never the key: only the error's own message and request id.
    """

    async def process_exception(self, request, exception):
        try:
            from console.service.errors import ServiceError
        except ImportError:  # the client is not installed yet: nothing of its kind can be raised
            return None
        if not isinstance(exception, ServiceError):
            return None
        return service_error_response(request, exception)


# The most of a service's own error message a page shows (a hostile service may send a long one).
SAID_CHARS = 300


def describe(request, error) -> dict:
    """Title, explanation and status for a service error, chosen by its class."""
    from console.service import errors

    org = getattr(request, "org", None)
    settings_url = ""
    if org is not None:
        try:
            settings_url = reverse("settings", kwargs={"org_slug": org.slug})
        except NoReverseMatch:
            settings_url = ""
    if request.method not in ("GET", "HEAD") and errors.leaves_outcome_unknown(error):
        return {
            "title": "Result unknown",
            "text": "The service did not give a readable answer, so the change may or may not have been "
            "made. Check the resource before trying again.",
            "status": 504,
        }
    if isinstance(error, errors.Unauthorized):
        return {
            "title": "Service rejected the key",
            "text": "The service rejected this organization's API key; an admin must update it in Settings.",
            "settings_url": settings_url,
            "status": 502,
        }
    if isinstance(error, errors.CapReached):
        return {"title": "Project cap reached", "html": capacity.refusal(request, error), "status": 429}
    if isinstance(error, errors.RateLimited):
        return {
            "title": "Service is rate limiting",
            "text": "Too many requests; try again shortly.",
            "status": 503,
        }
    if isinstance(error, errors.BadResponse):
        # What was wrong (a record, a field, a bound: console/service/records.py) helps whoever reports it.
        return {
            "title": "Service unavailable",
            "text": f"The service sent an answer the console does not read ({error.message}). Try again; if "
            "it persists, report it to the service with the request id below.",
            "status": 503,
        }
    if isinstance(error, errors.Unavailable):
        status = 504 if "timeout" in (error.code or "").lower() else 503
        # What the service said (its 5xx's message) or why nothing came (the client's: a timeout, a refused
        # connection) tells an operator whether waiting helps; the template escapes it.
        said = error.message[:SAID_CHARS] if error.message != error.default_message else ""
        if error.status is None:
            text = (
                f"The service did not answer ({said}); try again."
                if said
                else "The service did not answer; try again."
            )
        else:
            text = (
                f"The service answered {error.status}: {said}. Try again."
                if said
                else f"The service answered {error.status}; try again."
            )
        return {"title": "Service unavailable", "text": text, "status": status}
    return {
        "title": "Service error",
        "text": error.message or "The service refused the request.",
        "status": 502,
    }


def service_error_response(request, error):
    from django.shortcuts import render as django_render

    info = describe(request, error)
    request.service_error_kind = type(error).__name__  # counted by /metrics (console_errors_total)
    info.update(code=getattr(error, "code", "") or "", request_id=getattr(error, "request_id", "") or "")
    log.warning(
        "service error %s on %s (code=%s request_id=%s)",
        type(error).__name__,
        request.path,
        info["code"],
        info["request_id"],
    )
    if getattr(request, "htmx", False):
        # 200 so htmx swaps it; the banner region exists on every page.
        response = django_render(request, "errors/service.html#banner-content", info)
        response["HX-Retarget"] = "#banner"
        response["HX-Reswap"] = "innerHTML"
        return response
    return django_render(request, "errors/service.html", info, status=info["status"])
