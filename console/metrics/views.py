"""``/metrics`` (Prometheus text format) and the organization's scrape tokens (the settings' Metrics tab).

One endpoint for the console: the bearer token picks the organization whose fleet is measured, and the
console's own health comes with it (docs/security.md, "Metrics"). Never open: no token, an unknown or
revoked one, or ``?org=`` naming another organization than the token's is refused, with nothing measured.
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import aget_object_or_404, redirect
from django.utils import timezone
from django.views.decorators.http import require_http_methods
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from console.accounts import audit
from console.metrics import fleet, health
from console.metrics.models import MetricsToken, digest
from console.web.decorators import org_view
from console.web.render import render

# last_used_at is written at most this often per token (a scrape every 15 s would write every time).
TOUCH_EVERY = timedelta(minutes=1)


class _Families:
    def __init__(self, found):
        self.found = found

    def collect(self):
        return iter(self.found)


def _refused(status: int, why: str) -> HttpResponse:
    response = HttpResponse(why + "\n", status=status, content_type="text/plain; charset=utf-8")
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


@require_http_methods(["GET"])
async def metrics(request):
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return _refused(
            401, "A metrics token is needed: Authorization: Bearer <token> (an organization's settings)."
        )
    row = await (
        MetricsToken.objects.select_related("org")
        .filter(digest=digest(token.strip()), revoked_at__isnull=True)
        .afirst()
    )
    if row is None:
        return _refused(401, "This token is unknown or revoked.")
    wanted = request.GET.get("org")
    if wanted is not None and wanted != row.org.slug:
        return _refused(403, "This token reads its own organization's metrics only.")
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at > TOUCH_EVERY:
        await MetricsToken.objects.filter(pk=row.pk).aupdate(last_used_at=now)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(await fleet.families(row.org)))
    body = health.exposition() + generate_latest(registry)
    response = HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Where it is used, e.g. “prometheus-prod”.")

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the token a name.")
        return name


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def tokens(request):
    """The org's scrape tokens: create one (shown once), see when each was last used, revoke."""
    form = TokenForm()
    issued = ""
    if request.method == "POST":
        form = TokenForm(request.POST)
        if form.is_valid():
            user = await request.auser()
            row, issued = await MetricsToken.aissue(request.org, form.cleaned_data["name"], user)
            await audit.record(
                request, "metrics_token.create", target_id=row.pk, detail=f"{row.name} ({row.hint}…)"
            )
            form = TokenForm()
    rows = [t async for t in MetricsToken.objects.filter(org=request.org).select_related("created_by")]
    context = {
        "form": form,
        "issued": issued,
        "rows": rows,
        "metrics_url": request.build_absolute_uri("/metrics"),
        "metrics_scheme": request.scheme,
    }
    return render(request, "metrics/tokens.html", context)


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def revoke(request, token_id: int):
    """Confirm, then revoke: a scraper using it is refused from the next scrape on."""
    row = await aget_object_or_404(MetricsToken, org=request.org, pk=token_id)
    if request.method == "POST" and row.active:
        row.revoked_at = timezone.now()
        await row.asave(update_fields=["revoked_at"])
        await audit.record(
            request, "metrics_token.revoke", target_id=row.pk, detail=f"{row.name} ({row.hint}…)"
        )
        messages.success(request, f"Token “{row.name}” revoked.")
        return redirect("metrics-tokens", org_slug=request.org.slug)
    return render(request, "metrics/revoke.html", {"row": row})
