"""Deploy checks for the inline middleware (console/web/inline.py).

Django's security.W001-W003 look for its own middleware paths; ours are subclasses that run the same hooks
on the event loop, so those three are silenced in settings and checked here under our names instead.
"""

from django.conf import settings
from django.core.checks import Tags, Warning, register

REQUIRED = {
    "console.web.inline.SecurityMiddleware": "console.W001",
    "console.web.inline.XFrameOptionsMiddleware": "console.W002",
    "console.web.inline.CsrfViewMiddleware": "console.W003",
}


@register(Tags.security, deploy=True)
def inline_security_middleware(app_configs, **kwargs):
    return [
        Warning(f"{path} is not in MIDDLEWARE: it replaces Django's own and must stay.", id=check_id)
        for path, check_id in REQUIRED.items()
        if path not in settings.MIDDLEWARE
    ]
