"""Invocations: list, detail with live logs and state, cancel, and the browsers a run created (notes §13)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.invocations.forms import FilterForm
from console.live.runs import Run
from console.service import Conflict, NotFound, invocations
from console.service.contract import TERMINAL_INVOCATION_STATUSES
from console.service.invocations import Invocation
from console.web import deferred
from console.web.decorators import org_view, require_role
from console.web.pages import filtered_list, get_or_404, org_reverse, record_link
from console.web.render import done, render

# Outputs longer than this (characters or lines) start collapsed in a <details>.
LARGE_CHARS = 2000
LARGE_LINES = 40


def json_block(value: Any, raw: Any) -> dict | None:
    """A JSON value pretty-printed for a <pre>, and whether it is large enough to start collapsed."""
    if raw is None or raw == "":
        return None
    text = json.dumps(value, indent=2, ensure_ascii=False) if not isinstance(value, str) else value
    return {
        "text": text,
        "large": len(text) > LARGE_CHARS or text.count("\n") > LARGE_LINES,
        "size": len(raw) if isinstance(raw, str) else len(text),
    }


def summary_context(invocation: Invocation, org_slug: str) -> dict:
    """What the summary partial needs; the same for every viewer (live frames are rendered once)."""
    return {
        "inv": invocation,
        "org_slug": org_slug,
        "output": json_block(invocation.output_value, invocation.output),
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def invocation_list(request):
    form = FilterForm(request.GET)
    list_call = invocations.list_invocations
    return await filtered_list(request, "invocations/list.html", "invocations-table", list_call, form)


async def _browsers(request, invocation_id: str) -> list[dict]:
    found = await invocations.list_browsers(request.service, invocation_id)
    return [
        {"browser": b, "url": record_link(request, "browsers:detail", session_id=b.session_id)} for b in found
    ]


@require_http_methods(["GET"])
@org_view("viewer")
async def invocation_detail(request, invocation_id: str):
    """The frame at once; the invocation, then the browsers it made, load after (console/web/deferred.py)."""

    async def detail() -> dict:
        invocation = await get_or_404(
            invocations.get_invocation(request.service, invocation_id), "invocation"
        )
        return {
            **summary_context(invocation, request.org.slug),
            "payload": json_block(invocation.payload_value, invocation.payload),
        }

    async def browsers() -> dict:
        invocation, found = await asyncio.gather(
            get_or_404(invocations.get_invocation(request.service, invocation_id), "invocation"),
            _browsers(request, invocation_id),
        )
        return {"inv": invocation, "browsers": found}

    parts = [deferred.Part("invocation-detail", detail), deferred.Part("invocation-browsers", browsers)]
    context = {"invocation_id": invocation_id}
    return await deferred.page(request, "invocations/detail.html", context, parts)


@require_http_methods(["GET"])
@org_view("viewer")
async def invocation_browsers(request, invocation_id: str):
    """The browsers partial, refreshed when the run finishes (and by its Refresh link)."""
    if not (request.htmx and request.htmx.target == "invocation-browsers"):
        # The Refresh link followed without htmx: the partial alone is no page, the invocation's is.
        detail = org_reverse(request, "invocations:detail", invocation_id=invocation_id)
        return HttpResponseRedirect(f"{detail}#invocation-browsers")
    invocation = await get_or_404(invocations.get_invocation(request.service, invocation_id), "invocation")
    context = {"inv": invocation, "browsers": await _browsers(request, invocation_id)}
    return render(request, "invocations/detail.html", context, partial="invocation-browsers")


RUN = Run(
    kind="invocation",
    record=Invocation,
    summary="invocations/detail.html#invocation-summary",
    log_line="invocations/detail.html#log-line",
    summary_context=summary_context,
    terminal=TERMINAL_INVOCATION_STATUSES,
    ended_message="The invocation has finished.",
)


@require_http_methods(["GET"])
@org_view("viewer")
async def invocation_events(request, invocation_id: str):
    """Log lines and state changes, relayed from the invocation's events stream until a terminal state."""
    return RUN.relay(request, invocation_id, invocations.events_path(invocation_id))


@require_http_methods(["GET", "POST"])
@org_view("viewer")
async def invocation_cancel(request, invocation_id: str):
    """Confirm, then cancel (the service marks the invocation failed); a finished one is explained."""
    require_role(request, "operator")
    invocation = await get_or_404(invocations.get_invocation(request.service, invocation_id), "invocation")
    conflict = ""
    if request.method == "POST":
        try:
            async with audited(request, "invocation.cancel", target_id=invocation_id):
                invocation = await invocations.cancel_invocation(request.service, invocation_id)
        except Conflict as exc:
            conflict = exc.message
            invocation = await get_or_404(
                invocations.get_invocation(request.service, invocation_id), "invocation"
            )
        else:
            messages.success(request, "Invocation cancelled: it is marked failed.")
            return done(request, org_reverse(request, "invocations:detail", invocation_id=invocation_id))
    context = {"inv": invocation, "conflict": conflict}
    return render(request, "invocations/cancel.html", context, partial="invocation-cancel")


@require_http_methods(["GET", "POST"])
@org_view("viewer")
async def invocation_delete_browsers(request, invocation_id: str):
    """Confirm, then delete every browser session the invocation created."""
    require_role(request, "operator")
    invocation, browsers = await asyncio.gather(
        get_or_404(invocations.get_invocation(request.service, invocation_id), "invocation"),
        _browsers(request, invocation_id),
    )
    if request.method == "POST":
        count = len(browsers)
        try:
            detail = f"{count} session(s)"
            async with audited(request, "invocation.delete_browsers", target_id=invocation_id, detail=detail):
                await invocations.delete_browsers(request.service, invocation_id)
        except NotFound:
            raise Http404("No such invocation") from None
        messages.success(request, f"Deleted the invocation's browser sessions ({count}).")
        return done(request, org_reverse(request, "invocations:detail", invocation_id=invocation_id))
    context = {"inv": invocation, "browsers": browsers}
    return render(request, "invocations/delete_browsers.html", context, partial="invocation-delete-browsers")
