"""Telemetry destinations (OTLP export targets): list, create, edit, delete (notes §6.6, SDK 0.131).

Header values are write-only: posted, sent to the service, never rendered, logged or audited
(``sensitive_post_parameters`` keeps them out of error reports too).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from console.accounts import audit
from console.service import Conflict, Invalid, NotFound
from console.service import telemetry_destinations as destinations
from console.telemetry_destinations.forms import DestinationForm, EditForm
from console.web.decorators import org_view, require_role
from console.web.forms import apply_service_errors
from console.web.paging import pager, paging
from console.web.render import done, render


def _url(request, name: str, **kwargs) -> str:
    return reverse(f"telemetry_destinations:{name}", kwargs={"org_slug": request.org.slug, **kwargs})


async def _get(request, destination_id: str) -> destinations.Destination:
    try:
        return await destinations.get_destination(request.service, destination_id)
    except NotFound:
        raise Http404("No such telemetry destination") from None


@require_http_methods(["GET"])
@org_view("viewer")
async def destination_list(request):
    page_params = paging(request)
    query = request.GET.get("q", "").strip()
    page = await destinations.list_destinations(
        request.service, limit=page_params.limit, offset=page_params.offset, query=query or None
    )
    context = {"page": page, "query": query, "pager": pager(request, page_params, page)}
    return render(request, "telemetry_destinations/list.html", context, partial="destinations-table")


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("headers")
@org_view("admin")
async def destination_create(request):
    form = DestinationForm()
    if request.method == "POST":
        form = DestinationForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                made = await destinations.create_destination(
                    request.service,
                    name=data["name"],
                    endpoint=data["endpoint"],
                    description=data["description"] or None,
                    headers=data["headers"],
                )
            except Invalid as exc:
                apply_service_errors(form, exc)
                await audit.record(
                    request, "telemetry_destination.create", outcome="error", detail=exc.message
                )
            except Conflict as exc:
                form.add_error("name", exc.message)
                await audit.record(
                    request, "telemetry_destination.create", outcome="error", detail=exc.message
                )
            else:
                detail = f"{made.label} → {made.endpoint} headers={','.join(made.header_names) or '-'}"
                await audit.record(request, "telemetry_destination.create", target_id=made.id, detail=detail)
                messages.success(request, f"Destination “{made.label}” created.")
                return done(request, _url(request, "detail", destination_id=made.id))
    return render(request, "telemetry_destinations/create.html", {"form": form})


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
    form = _edit_form(destination)
    if request.method == "POST":
        require_role(request, "admin")
        form = _edit_form(destination, request.POST)
        if form.is_valid():
            data = form.cleaned_data
            changes = {
                key: data[key] or ("" if key == "description" else None)
                for key in ("name", "endpoint", "description")
                if (data[key] or None) != (getattr(destination, key) or None)
            }
            removed = data.get("remove_headers") or []
            try:
                destination = await destinations.update_destination(
                    request.service,
                    destination.id,
                    set_headers=data["headers"],
                    remove_headers=removed,
                    **changes,
                )
            except Invalid as exc:
                apply_service_errors(form, exc)
                await audit.record(
                    request, "telemetry_destination.update", target_id=destination.id, outcome="error"
                )
            except Conflict as exc:
                form.add_error(None, exc.message)
                await audit.record(
                    request,
                    "telemetry_destination.update",
                    target_id=destination.id,
                    outcome="error",
                    detail=exc.message,
                )
            else:
                summary = [
                    *changes,
                    *(f"header {h}" for h in data["headers"]),
                    *(f"-header {h}" for h in removed),
                ]
                await audit.record(
                    request,
                    "telemetry_destination.update",
                    target_id=destination.id,
                    detail=", ".join(summary),
                )
                messages.success(request, "Destination saved.")
                return done(request, _url(request, "detail", destination_id=destination.id))
    return render(request, "telemetry_destinations/detail.html", {"destination": destination, "form": form})


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def destination_delete(request, destination_id: str):
    destination = await _get(request, destination_id)
    conflict = ""
    if request.method == "POST":
        try:
            await destinations.delete_destination(request.service, destination.id)
        except Conflict as exc:
            conflict = exc.message
            await audit.record(
                request,
                "telemetry_destination.delete",
                target_id=destination.id,
                outcome="error",
                detail=exc.message,
            )
        else:
            await audit.record(
                request, "telemetry_destination.delete", target_id=destination.id, detail=destination.label
            )
            messages.success(request, f"Destination “{destination.label}” deleted.")
            return done(request, _url(request, "list"))
    return render(
        request, "telemetry_destinations/delete.html", {"destination": destination, "conflict": conflict}
    )
