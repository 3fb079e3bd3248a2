"""Telemetry destinations (OTLP export targets): list, create, edit, delete (notes §6.6, SDK 0.131).

Header values are write-only: posted, sent to the service, never rendered, logged or audited
(``sensitive_post_parameters`` keeps them out of error reports too).
"""

from __future__ import annotations

import functools

from django.contrib import messages
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.service import telemetry_destinations as destinations
from console.telemetry_destinations.forms import DestinationForm, EditForm
from console.web.decorators import org_view, require_role
from console.web.forms import show_refusal
from console.web.pages import (
    confirmed_delete,
    form_page,
    get_or_404,
    org_reverse,
    posted,
    searchable_list,
)

# The service's 409 is said on the form, not on a field.
REFUSE = functools.partial(show_refusal, conflict_field=None)


def _detail_url(request, destination_id: str) -> str:
    return org_reverse(request, "telemetry_destinations:detail", destination_id=destination_id)


async def _get(request, destination_id: str) -> destinations.Destination:
    read = destinations.get_destination(request.service, destination_id)
    return await get_or_404(read, "telemetry destination")


@require_http_methods(["GET"])
@org_view("viewer")
async def destination_list(request):
    template = "telemetry_destinations/list.html"
    return await searchable_list(request, template, "destinations-table", destinations.list_destinations)


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("headers")
@org_view("admin")
async def destination_create(request):
    form = DestinationForm(posted(request))

    async def create(data: dict) -> str:
        headers = f"headers={','.join(sorted(data['headers'])) or '-'}"
        async with audited(
            request,
            "telemetry_destination.create",
            detail=f"{data['name']} → {data['endpoint']} {headers}",
            secrets=data["headers"].values(),
        ) as entry:
            made = await destinations.create_destination(request.service, **data)
            entry.target_id = made.id
            entry.detail = f"{made.label} → {made.endpoint} headers={','.join(made.header_names) or '-'}"
        messages.success(request, f"Destination “{made.label}” created.")
        return _detail_url(request, made.id)

    return await form_page(request, form, create, "telemetry_destinations/create.html")


def _edit_form(destination, data=None) -> EditForm:
    initial = {
        "name": destination.name,
        "endpoint": destination.endpoint,
        "description": destination.description,
    }
    return EditForm(data, initial=initial, header_names=destination.header_names)


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("headers")
@org_view("viewer")
async def destination_detail(request, destination_id: str):
    """The record; admins edit it in place (only changed fields are sent; headers merge)."""
    destination = await _get(request, destination_id)
    if request.method == "POST":
        require_role(request, "admin")
    form = _edit_form(destination, posted(request))

    async def save(data: dict) -> str:
        changes = {
            key: data[key] or ("" if key == "description" else None)
            for key in ("name", "endpoint", "description")
            if (data[key] or None) != (getattr(destination, key) or None)
        }
        removed = data.get("remove_headers") or []
        summary = [*changes, *(f"header {h}" for h in data["headers"]), *(f"-header {h}" for h in removed)]
        async with audited(
            request,
            "telemetry_destination.update",
            target_id=destination.id,
            detail=", ".join(summary),
            secrets=data["headers"].values(),
        ):
            await destinations.update_destination(
                request.service,
                destination.id,
                set_headers=data["headers"],
                remove_headers=removed,
                **changes,
            )
        messages.success(request, "Destination saved.")
        return _detail_url(request, destination.id)

    context = {"destination": destination}
    return await form_page(request, form, save, "telemetry_destinations/detail.html", context, refuse=REFUSE)


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def destination_delete(request, destination_id: str):
    destination = await _get(request, destination_id)
    return await confirmed_delete(
        request,
        destination,
        destinations.delete_destination,
        app="telemetry_destinations",
        action="telemetry_destination.delete",
        context={"destination": destination},
        message=f"Destination “{destination.label}” deleted.",
    )
