"""The credential vault: list, detail, create, edit, delete, and the current TOTP code (notes §10).

Values and TOTP secrets are write-only end to end: the service never returns them, the forms never
render them back, and neither flash messages nor the audit log ever hold one (only value *names*).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from urllib.parse import urlsplit

from django.contrib import messages
from django.http import Http404
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from console.accounts import audit
from console.accounts.audit import audited
from console.credential_providers.forms import ItemPickForm
from console.credentials.forms import (
    SECRET_FIELDS,
    SERVICE_FIELDS,
    SSO_PROVIDERS,
    CredentialEditForm,
    CredentialForm,
)
from console.service import Conflict, Forbidden, Invalid, NotFound, credential_providers, credentials
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.pages import get_or_404, org_reverse, posted, searchable_list
from console.web.render import done, render

TOTP_PERIOD = 30
# The code refreshes itself at each expiry this many times, then hides until asked for again.
MAX_REFRESHES = 10


@require_http_methods(["GET"])
@org_view("viewer")
async def credential_list(request):
    domain = request.GET.get("domain", "").strip()
    template = "credentials/list.html"
    return await searchable_list(
        request,
        template,
        "credentials-table",
        credentials.list_credentials,
        {"domain": domain},
        domain=domain or None,
    )


@sensitive_post_parameters(*SECRET_FIELDS)
@require_http_methods(["GET", "POST"])
@org_view("admin")
async def credential_create(request):
    picked, pick_error = None, ""
    if request.method == "GET" and request.GET.get("credential_item"):
        picked, pick_error = await _provider_item(request, request.GET["credential_item"])
    initial = _prefill(picked) if picked else None
    form = CredentialForm(posted(request), initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            summary, secrets = form.summary(), form.secrets()
            async with audited(request, "credential.create", detail=summary, secrets=secrets) as entry:
                credential = await credentials.create_credential(request.service, **form.payload())
                entry.target_id = credential.id
        except Invalid as exc:
            apply_service_errors(form, exc, SERVICE_FIELDS)
        except Conflict as exc:
            form.add_error("name", f"{exc.message}. Choose another name.")
        except Forbidden as exc:  # a plan's bound on how many credentials are kept
            form.add_error(None, f"The service refused to keep another credential: {exc.message}")
        else:
            messages.success(request, f"Credential “{credential.name}” saved.")
            return done(request, org_reverse(request, "credentials:detail", credential_id=credential.id))
    context = {
        "form": form,
        "sso_providers": SSO_PROVIDERS,
        "item_field": ItemPickForm(request.GET or None)["credential_item"],
        "picked": picked,
        "pick_error": pick_error,
    }
    return render(request, "credentials/new.html", context, partial="credential-form")


async def _provider_item(request, reference: str):
    """(item, error) for ``provider::Vault/Item``, as the credential providers' picker offers them."""
    provider_name, sep, path = reference.partition("::")
    if not sep:
        return None, "Pick an item from the list, or write provider::Vault/Item."
    page = await credential_providers.list_providers(request.service, limit=100)
    provider = next((p for p in page.items if provider_name.strip() in (p.name, p.id)), None)
    if provider is None:
        return None, f"No credential provider named “{provider_name.strip()}”."
    try:
        items = await credential_providers.list_items(request.service, provider.id)
    except Invalid as exc:
        return None, exc.message
    item = next((i for i in items if i.path == path.strip()), None)
    return (item, "") if item else (None, f"“{path.strip()}” is not an item of {provider.label}.")


def _prefill(item) -> dict:
    """A new credential's name and domain from a provider item (its title and first site)."""
    host = urlsplit((item.urls or [""])[0]).hostname or ""
    name = re.sub(r"[^a-z0-9]+", "-", (item.title or "").lower()).strip("-")[:64]
    return {"name": name, "domain": host}


@require_http_methods(["GET"])
@org_view("viewer")
async def credential_detail(request, credential_id: str):
    credential = await get_or_404(credentials.get_credential(request.service, credential_id), "credential")
    return render(request, "credentials/detail.html", {"credential": credential})


@sensitive_post_parameters(*SECRET_FIELDS)
@require_http_methods(["GET", "POST"])
@org_view("admin")
async def credential_edit(request, credential_id: str):
    credential = await get_or_404(credentials.get_credential(request.service, credential_id), "credential")
    form = CredentialEditForm(posted(request), credential=credential)
    if request.method == "POST" and form.is_valid():
        body = form.changes()
        try:
            async with audited(
                request,
                "credential.update",
                target_id=credential.id,
                detail=form.summary(body),
                secrets=form.secrets(),
            ):
                updated = await credentials.update_credential(request.service, credential.id, **body)
        except Invalid as exc:
            apply_service_errors(form, exc, SERVICE_FIELDS)
        except Conflict as exc:
            form.add_error("name", f"{exc.message}. Choose another name.")
        except NotFound:
            raise Http404("No such credential") from None
        else:
            messages.success(request, f"Credential “{updated.name}” updated.")
            return done(request, org_reverse(request, "credentials:detail", credential_id=updated.id))
    context = {"credential": credential, "form": form, "sso_providers": SSO_PROVIDERS}
    return render(request, "credentials/edit.html", context, partial="credential-form")


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def credential_delete(request, credential_id: str):
    credential = await get_or_404(credentials.get_credential(request.service, credential_id), "credential")
    if request.method == "POST":
        try:
            async with audited(request, "credential.delete", target_id=credential.id, detail=credential.name):
                await credentials.delete_credential(request.service, credential.id)
        except NotFound:
            messages.info(request, f"Credential “{credential.name}” was already deleted.")
        else:
            messages.success(request, f"Credential “{credential.name}” deleted.")
        return done(request, org_reverse(request, "credentials:list"))
    return render(request, "credentials/delete.html", {"credential": credential})


def _seconds_left(expires_at) -> int:
    """Seconds until the code expires, by our clock; a full period when the clocks visibly disagree."""
    if not isinstance(expires_at, datetime):
        return TOTP_PERIOD
    left = (expires_at - datetime.now(UTC)).total_seconds()
    return math.ceil(left) if 0 < left <= TOTP_PERIOD else TOTP_PERIOD


@require_http_methods(["GET"])
@org_view("operator")
async def credential_totp(request, credential_id: str):
    """The current TOTP code, on request; the partial re-fetches itself when the code expires."""
    try:
        refreshes = max(int(request.GET.get("n", "0")), 0)
    except ValueError:
        refreshes = 0
    context = {"credential_id": credential_id, "refreshes": refreshes, "next_refresh": refreshes + 1}
    if refreshes >= MAX_REFRESHES:
        context["stopped"] = True
        return render(request, "credentials/totp.html", context, partial="totp-code")
    try:
        totp = await credentials.get_totp_code(request.service, credential_id)
    except NotFound:
        if not request.htmx:
            raise Http404("No such credential") from None
        context["problem"] = "This credential no longer exists."
    except Invalid:
        context["problem"] = "This credential has no TOTP secret, so there is no code to show."
    else:
        context.update(totp=totp, seconds_left=_seconds_left(totp.expires_at), period=TOTP_PERIOD)
        if refreshes == 0:
            await audit.record(request, "credential.totp_code", target_id=credential_id, detail="code shown")
    return render(request, "credentials/totp.html", context, partial="totp-code")
