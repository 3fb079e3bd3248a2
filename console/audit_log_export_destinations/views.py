"""Audit-log export destinations, beside the service's audit log (/o/<org>/audit_logs/destinations/): list,
create (the service creates it paused), probe (test), resume and pause, edit, delete.

Admins only, as the service audit log they deliver (configuration): each change is audited with the
bucket and what changed.
"""

from __future__ import annotations

from django.contrib import messages
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.audit_log_export_destinations.forms import DestinationForm
from console.service import Conflict, Invalid
from console.service import audit_log_export_destinations as destinations
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.pages import get_or_404, org_reverse
from console.web.render import done, render

LIST_LIMIT = 100
FIELDS = ("bucket", "prefix", "region", "role_arn", "kms_key_id")


def _detail_url(request, export_destination_id: str) -> str:
    return org_reverse(
        request, "audit_log_export_destinations:detail", export_destination_id=export_destination_id
    )


@require_http_methods(["GET"])
@org_view("admin")
async def destination_list(request):
    page = await destinations.list_destinations(request.service, limit=LIST_LIMIT)
    return render(request, "audit_log_export_destinations/list.html", {"page": page})


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def destination_create(request):
    form = DestinationForm()
    if request.method == "POST":
        form = DestinationForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                async with audited(
                    request,
                    "audit_log_export_destination.create",
                    detail=f"s3://{data['bucket']}/{data['prefix']} ({data['region']})",
                ) as entry:
                    made = await destinations.create_destination(
                        request.service,
                        bucket=data["bucket"],
                        prefix=data["prefix"],
                        region=data["region"],
                        role_arn=data["role_arn"],
                        kms_key_id=data["kms_key_id"] or None,
                    )
                    entry.target_id = made.id
            except Invalid as exc:
                apply_service_errors(form, exc)
            except Conflict as exc:
                form.add_error(None, exc.message)
            else:
                messages.success(request, "Destination created, paused: test it, then resume delivery.")
                return done(request, _detail_url(request, made.id))
    return render(request, "audit_log_export_destinations/create.html", {"form": form})


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def destination_detail(request, export_destination_id: str):
    """The record; admins edit it in place (only changed fields are sent)."""
    destination = await get_or_404(
        destinations.get_destination(request.service, export_destination_id), "audit log export destination"
    )
    initial = {name: getattr(destination, name) or "" for name in FIELDS}
    form = DestinationForm(initial=initial)
    if request.method == "POST":
        form = DestinationForm(request.POST, initial=initial)
        if form.is_valid():
            changes = {k: v for k, v in form.cleaned_data.items() if v != (getattr(destination, k) or "")}
            try:
                async with audited(
                    request,
                    "audit_log_export_destination.update",
                    target_id=destination.id,
                    detail=", ".join(changes) or "nothing changed",
                ):
                    if changes:
                        destination = await destinations.update_destination(
                            request.service, destination.id, **changes
                        )
            except Invalid as exc:
                apply_service_errors(form, exc)
            except Conflict as exc:
                form.add_error(None, f"{exc.message} (changed meanwhile: reload and try again)")
            else:
                messages.success(request, "Destination saved.")
                return done(request, _detail_url(request, destination.id))
    context = {"destination": destination, "form": form, "probe": None}
    return render(request, "audit_log_export_destinations/detail.html", context)


@require_http_methods(["POST"])
@org_view("admin")
async def destination_test(request, export_destination_id: str):
    destination = await get_or_404(
        destinations.get_destination(request.service, export_destination_id), "audit log export destination"
    )
    async with audited(
        request, "audit_log_export_destination.test", target_id=destination.id, detail=destination.label
    ) as entry:
        probe = await destinations.test_destination(request.service, destination.id)
        entry.detail = f"{destination.label} → {'ok' if probe.success else f'failed at {probe.stage}'}"
    destination = await destinations.get_destination(request.service, destination.id)
    context = {"destination": destination, "form": DestinationForm(), "probe": probe}
    return render(request, "audit_log_export_destinations/detail.html", context, partial="destination-probe")


@require_http_methods(["POST"])
@org_view("admin")
async def destination_status(request, export_destination_id: str):
    """Resume (``active``) or pause delivery."""
    status = request.POST.get("status")
    if status not in ("active", "paused"):
        messages.error(request, "Choose to resume or pause delivery.")
        return done(request, _detail_url(request, export_destination_id))
    try:
        async with audited(
            request, "audit_log_export_destination.status", target_id=export_destination_id, detail=status
        ):
            await destinations.update_destination(request.service, export_destination_id, status=status)
    except Conflict as exc:
        messages.error(request, f"{exc.message} (changed meanwhile: reload and try again)")
    else:
        messages.success(request, "Delivery resumed." if status == "active" else "Delivery paused.")
    return done(request, _detail_url(request, export_destination_id))


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def destination_delete(request, export_destination_id: str):
    destination = await get_or_404(
        destinations.get_destination(request.service, export_destination_id), "audit log export destination"
    )
    if request.method == "POST":
        async with audited(
            request, "audit_log_export_destination.delete", target_id=destination.id, detail=destination.label
        ):
            await destinations.delete_destination(request.service, destination.id)
        messages.success(request, f"Destination {destination.label} deleted.")
        return done(request, org_reverse(request, "audit_log_export_destinations:list"))
    return render(request, "audit_log_export_destinations/delete.html", {"destination": destination})
