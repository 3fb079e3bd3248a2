"""Deploy checks for the inline middleware (console/web/inline.py).

Django's security checks look for its own middleware paths; ours are subclasses that run the same hooks on
the event loop. So W001-W003 (middleware missing) are silenced in settings and checked here under our names,
and every settings check Django runs only when its own path is in MIDDLEWARE (HSTS, SSL redirect, nosniff,
referrer and opener policies, X-Frame-Options, secure CSRF cookie) runs here for ours, with Django's ids.
The session checks need no copy: Django also runs them for the sessions app, which is installed.
"""

from django.conf import settings
from django.core.checks import Tags, Warning, register
from django.core.checks.security import base, csrf

SECURITY = "console.web.inline.SecurityMiddleware"
XFRAME = "console.web.inline.XFrameOptionsMiddleware"
CSRF = "console.web.inline.CsrfViewMiddleware"

REQUIRED = {SECURITY: "console.W001", XFRAME: "console.W002", CSRF: "console.W003"}


@register(Tags.security, deploy=True)
def inline_security_middleware(app_configs, **kwargs):
    return [
        Warning(f"{path} is not in MIDDLEWARE: it replaces Django's own and must stay.", id=check_id)
        for path, check_id in REQUIRED.items()
        if path not in settings.MIDDLEWARE
    ]


@register(Tags.security, deploy=True)
def inline_security_settings(app_configs, **kwargs):
    """What django.core.checks.security would report if the inline middleware had Django's paths."""
    found = []
    if SECURITY in settings.MIDDLEWARE:
        if not settings.SECURE_HSTS_SECONDS:
            found.append(base.W004)
        else:
            if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS is not True:
                found.append(base.W005)
            if settings.SECURE_HSTS_PRELOAD is not True:
                found.append(base.W021)
        if settings.SECURE_CONTENT_TYPE_NOSNIFF is not True:
            found.append(base.W006)
        if settings.SECURE_SSL_REDIRECT is not True:
            found.append(base.W008)
        found += _policy_errors()
    if XFRAME in settings.MIDDLEWARE and settings.X_FRAME_OPTIONS != "DENY":
        found.append(base.W019)
    if (
        CSRF in settings.MIDDLEWARE
        and not settings.CSRF_USE_SESSIONS
        and settings.CSRF_COOKIE_SECURE is not True
    ):
        found.append(csrf.W016)
    return found


def _policy_errors() -> list:
    found = []
    referrer = settings.SECURE_REFERRER_POLICY
    if referrer is None:
        found.append(base.W022)
    else:
        values = {v.strip() for v in referrer.split(",")} if isinstance(referrer, str) else set(referrer)
        if not values <= base.REFERRER_POLICY_VALUES:
            found.append(base.E023)
    opener = settings.SECURE_CROSS_ORIGIN_OPENER_POLICY
    if opener is not None and opener not in base.CROSS_ORIGIN_OPENER_POLICY_VALUES:
        found.append(base.E024)
    return found
