"""Audit-log export destinations, beside the service's audit log (/o/<org>/audit_logs/destinations/): list,
create (the service creates it paused), probe (test), resume and pause, edit, delete.

Admins only, as the service audit log they deliver (configuration): each change is audited with the
bucket and what changed.
"""

from __future__ import annotations

import functools

from django.contrib import messages
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.audit_log_export_destinations.forms import DestinationForm
from console.service import Conflict, Invalid
from console.service import audit_log_export_destinations as destinations
from console.web.decorators import org_view
from console.web.forms import apply_service_errors, show_refusal
from console.web.pages import confirmed_delete, form_page, get_or_404, org_reverse, posted
from console.web.render import done, render

LIST_LIMIT = 100
FIELDS = ("bucket", "prefix", "region", "role_arn", "kms_key_id")
# A create refused with 409 (the organization's limit of destinations) is said on the form, not on a field.
REFUSE_CREATE = functools.partial(show_refusal, conflict_field=None)


def _detail_url(request, export_destination_id: str) -> str:
    return org_reverse(
        request, "audit_log_export_destinations:detail", export_destination_id=export_destination_id
    )


async def _get(request, export_destination_id: str) -> destinations.Destination:
    read = destinations.get_destination(request.service, export_destination_id)
    return await get_or_404(read, "audit log export destination")


@require_http_methods(["GET"])
@org_view("admin")
async def destination_list(request):
    page = await destinations.list_destinations(request.service, limit=LIST_LIMIT)
    return render(request, "audit_log_export_destinations/list.html", {"page": page})


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def destination_create(request):
    form = DestinationForm(posted(request))

    async def create(data: dict) -> str:
        async with audited(
            request,
            "audit_log_export_destination.create",
            detail=f"s3://{data['bucket']}/{data['prefix']} ({data['region']})",
        ) as entry:
            made = await destinations.create_destination(request.service, **data)
            entry.target_id = made.id
        messages.success(request, "Destination created, paused: test it, then resume delivery.")
        return _detail_url(request, made.id)

    template = "audit_log_export_destinations/create.html"
    return await form_page(request, form, create, template, refuse=REFUSE_CREATE)


def _refuse_edit(form, error: Invalid | Conflict) -> None:
    if isinstance(error, Conflict):
        form.add_error(None, f"{error.message} (changed meanwhile: reload and try again)")
    else:
        apply_service_errors(form, error)


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def destination_detail(request, export_destination_id: str):
    """The record; admins edit it in place (only changed fields are sent)."""
    destination = await _get(request, export_destination_id)
    initial = {name: getattr(destination, name) or "" for name in FIELDS}
    form = DestinationForm(posted(request), initial=initial)

    async def save(data: dict) -> str:
        changes = {k: v for k, v in data.items() if v != (getattr(destination, k) or "")}
        async with audited(
            request,
            "audit_log_export_destination.update",
            target_id=destination.id,
            detail=", ".join(changes) or "nothing changed",
        ):
            if changes:
                await destinations.update_destination(request.service, destination.id, **changes)
        messages.success(request, "Destination saved.")
        return _detail_url(request, destination.id)

    context = {"destination": destination, "probe": None}
    template = "audit_log_export_destinations/detail.html"
    return await form_page(request, form, save, template, context, refuse=_refuse_edit)


@require_http_methods(["POST"])
@org_view("admin")
async def destination_test(request, export_destination_id: str):
    destination = await _get(request, export_destination_id)
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
    destination = await _get(request, export_destination_id)
    return await confirmed_delete(
        request,
        destination,
        destinations.delete_destination,
        app="audit_log_export_destinations",
        action="audit_log_export_destination.delete",
        context={"destination": destination},
        message=f"Destination {destination.label} deleted.",
    )
