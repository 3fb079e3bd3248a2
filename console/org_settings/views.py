"""The organization's service settings: its base URL and API key (write-only), the default project, and
"Test connection"."""

import re

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from console.accounts import audit
from console.org_settings.forms import OrgSettingsForm
from console.service import ServiceError, errors, projects
from console.web.decorators import org_view
from console.web.render import render


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def org_settings(request):
    org = request.org
    if request.method == "POST":
        form = OrgSettingsForm(request.POST, current_service_url=org.service_base_url)
        # Validation resolves the URL's host: in a worker thread, not on the event loop or the ORM thread.
        if await sync_to_async(form.is_valid, thread_sensitive=False)():
            data = form.cleaned_data
            changed = [
                f for f in ("name", "service_base_url", "default_project_id") if getattr(org, f) != data[f]
            ]
            for field in changed:
                setattr(org, field, data[field])
            # After the URL: the key belongs to the URL it was entered with (Organization.save).
            if data["api_key"]:
                org.set_api_key(data["api_key"])
                changed.append("api_key")
            await org.asave()
            # Field names only: never the key, and values are visible on the page anyway.
            await audit.record(
                request, "org.settings", target_id=org.slug, detail="changed: " + ", ".join(changed)
            )
            messages.success(request, "Settings saved.")
            return redirect("settings", org_slug=org.slug)
    else:
        form = OrgSettingsForm(
            initial={
                "name": org.name,
                "service_base_url": org.service_base_url,
                "default_project_id": org.default_project_id,
            }
        )
    return render(request, "org_settings/settings.html", {"form": form}, "settings-form")


# What an answer's code and request id may look like to be shown; anything else is not the service's.
_TOKEN = re.compile(r"^[A-Za-z0-9._:/-]{1,100}$")


def _failure(exc) -> dict:
    """What to show of a failed test: our own words, the HTTP status, code and request id; never the body.

    Whatever answers at the URL could be anything (the URL is where the key went), so its text is not
    echoed. Without an answer (no connection, a refused address) the message is ours.
    """
    if exc.status is None:
        sentence = exc.message
    elif isinstance(exc, errors.Unauthorized):
        sentence = "The service rejected the API key: paste a valid key above and save."
    elif isinstance(exc, errors.Forbidden):
        sentence = "The service refused this key access to its own context."
    elif isinstance(exc, errors.NotFound):
        sentence = "Nothing answered at /auth/context: check the base URL."
    elif isinstance(exc, errors.RateLimited):
        sentence = "The service is rate limiting; try again shortly."
    elif exc.status >= 500:
        sentence = "The service had a problem answering."
    elif exc.status < 300:
        sentence = "Something answered, but not as the service does: check the base URL."
    else:
        sentence = "The service refused the request."
    return {
        "sentence": sentence,
        "status": exc.status,
        "code": exc.code if exc.code and _TOKEN.match(exc.code) else "",
        "request_id": exc.request_id if exc.request_id and _TOKEN.match(exc.request_id) else "",
    }


@require_http_methods(["POST"])
@org_view("admin")
async def org_test_connection(request):
    """Call the service with the stored URL and key and report what happened (never its body)."""
    try:
        context = await projects.get_auth_context(request.service)
    except ServiceError as exc:
        result = {"ok": False, "error": _failure(exc)}
    else:
        result = {"ok": True, "context": context}
    return render(request, "org_settings/settings.html", {"result": result}, "connection-result")
