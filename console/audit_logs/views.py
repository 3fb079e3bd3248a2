"""The service's own audit log, beside the console's: filterable and paged, and exported to a file
(whole, streamed; or chunk by chunk so the page shows a progress bar). Admins only.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_http_methods

from console.accounts import audit
from console.audit_logs.forms import FilterForm
from console.service import ServiceError, audit_logs
from console.web import deferred
from console.web.decorators import org_view
from console.web.render import render

CHUNK_ROWS = 1000


def _form(request) -> FilterForm:
    return FilterForm.from_query(request.GET, datetime.now(UTC).date())


def _query(request, **changes) -> str:
    # Not the part the list was loaded from (console/web/deferred.py): links go to the page.
    params = {k: v for k, v in request.GET.items() if k not in ("page_token", "cursor", "part")}
    params.update({k: v for k, v in changes.items() if v})
    return urlencode(params)


@require_http_methods(["GET"])
@org_view("admin")
async def entry_list(request):
    form = _form(request)

    async def load() -> dict:
        if not form.is_valid():
            return {"page": None}
        start, end = form.window()
        page = await audit_logs.list_entries(
            request.service,
            start=start,
            end=end,
            page_token=request.GET.get("page_token") or None,
            **form.filters(),
        )
        return {
            "page": page,
            "next_query": page.next_token and _query(request, page_token=page.next_token),
        }

    context = {
        "form": form,
        "first_url": "?" + _query(request) if request.GET.get("page_token") else "",
        "export_query": _query(request),
    }
    return await deferred.list_page(request, "audit_logs/list.html", "audit-logs-table", context, load)


def _describe(form: FilterForm) -> str:
    start, end = form.window()
    shown = {k: v for k, v in form.filters().items() if v}
    return f"{start:%Y-%m-%d}..{end:%Y-%m-%d} {json.dumps(shown, sort_keys=True) if shown else ''}".strip()


@require_http_methods(["GET"])
@org_view("admin")
async def export_download(request):
    """The whole window as one JSON-lines file, streamed chunk by chunk (each checked by its sha256)."""
    form = _form(request)
    if not form.is_valid():
        context = {"form": form, "page": None, "list_id": "audit-logs-table"}
        return render(request, "audit_logs/list.html", context, status=400)
    start, end = form.window()
    filters = form.filters()
    await audit.record(request, "audit_logs.export", detail=_describe(form))
    svc = request.service.with_project(request.service.project)
    caps = {"max_chunks": settings.AUDIT_EXPORT_MAX_CHUNKS, "max_bytes": settings.AUDIT_EXPORT_MAX_BYTES}

    async def body():
        # The answer has started (200) by the time a chunk fails or a bound stops the export: the file says so
        # in its last line, rather than ending as if it were whole.
        ended = True
        try:
            async for chunk in audit_logs.export(
                svc, start=start, end=end, limit=CHUNK_ROWS, **caps, **filters
            ):
                if chunk.stopped:
                    yield notice(chunk.stopped, ended)
                    return
                if chunk.content:
                    ended = chunk.content.endswith(b"\n")
                    yield chunk.content
        except ServiceError as exc:
            yield notice(f"the service failed: {exc.message}", ended)

    response = StreamingHttpResponse(body(), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="audit-log-{start:%Y%m%d}-{end:%Y%m%d}.jsonl"'
    response["Cache-Control"] = "no-store"
    return response


def _progress(content: bytes, start: datetime, end: datetime) -> int:
    """How far through the window this chunk's last row is (rows come oldest first), in percent."""
    lines = content.strip().splitlines()
    if not lines:
        return 100
    try:
        stamp = json.loads(lines[-1])["timestamp"]
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        share = (moment - start) / (end - start)  # TypeError for a time without a zone
    except (ValueError, KeyError, TypeError, AttributeError):  # the service's rows are its own to shape
        return 0
    return max(0, min(99, int(share * 100)))


def notice(reason: str, after_newline: bool = True) -> bytes:
    """The last line of an export that stopped before the service's end: a JSON line saying why."""
    line = json.dumps({"console_notice": f"The export stopped early: {reason}.", "complete": False})
    return (b"" if after_newline else b"\n") + line.encode() + b"\n"


def _counter(value: str | None) -> int | None:
    """A count the exporter sends back (chunks, bytes so far): ASCII digits, at most 15; absent is 0."""
    value = value or "0"
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 15 else None


@require_http_methods(["GET"])
@org_view("admin")
async def export_chunk(request):
    """One chunk for the page's exporter: the rows, and headers saying what comes next and how far along.

    The exporter says how many chunks (``n``) and bytes (``sent``) it has so far: past the bounds of one
    export (``AUDIT_EXPORT_MAX_CHUNKS``, ``AUDIT_EXPORT_MAX_BYTES``) the answer is the notice line that ends
    the file, with ``X-Export-Stopped`` saying why, and nothing is asked of the service."""
    form = _form(request)
    chunks, sent = _counter(request.GET.get("n")), _counter(request.GET.get("sent"))
    if not form.is_valid() or chunks is None or sent is None:
        errors = dict(form.errors) if not form.is_valid() else {"n": ["Not a count."]}
        return HttpResponse(json.dumps(errors), status=400, content_type="application/json")
    start, end = form.window()
    caps = {"max_chunks": settings.AUDIT_EXPORT_MAX_CHUNKS, "max_bytes": settings.AUDIT_EXPORT_MAX_BYTES}
    reason = audit_logs.cap_reached(chunks, sent, **caps)
    if reason:
        return _stopped(reason)
    cursor = request.GET.get("cursor") or None
    if cursor is None:
        await audit.record(request, "audit_logs.export", detail=_describe(form))
    chunk = await audit_logs.export_chunk(
        request.service, start=start, end=end, cursor=cursor, limit=CHUNK_ROWS, **form.filters()
    )
    if sent + len(chunk.content) > caps["max_bytes"]:  # this chunk would take the file past the bound
        return _stopped(audit_logs.cap_reached(chunks + 1, sent + len(chunk.content), **caps))
    response = HttpResponse(chunk.content, content_type="application/x-ndjson")
    response["X-Row-Count"] = str(chunk.row_count)
    response["X-Has-More"] = "true" if chunk.has_more else "false"
    response["X-Progress"] = str(_progress(chunk.content, start, end) if chunk.has_more else 100)
    if chunk.next_cursor:
        response["X-Next-Cursor"] = chunk.next_cursor
    response["Cache-Control"] = "no-store"
    return response


def _stopped(reason: str) -> HttpResponse:
    response = HttpResponse(notice(reason), content_type="application/x-ndjson")
    response["X-Row-Count"] = "0"
    response["X-Has-More"] = "false"
    response["X-Progress"] = "100"
    response["X-Export-Stopped"] = reason
    response["Cache-Control"] = "no-store"
    return response
