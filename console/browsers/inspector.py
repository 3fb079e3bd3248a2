"""The network side of a session page: one request's detail (with "copy as curl") and the HAR 1.2 export of
the requests the page shows (its window and filters, console/browsers/finding.py).

Both read the session's network telemetry again (console/browsers/network.py): the service keeps no
request record of its own. What they show was redacted as the envelopes were read.
"""

from __future__ import annotations

import json
import re
from importlib.metadata import PackageNotFoundError, version

from django.http import Http404, HttpResponse
from django.views.decorators.http import require_http_methods

from console.accounts import audit
from console.browsers import network
from console.browsers.finding import Finding, permalink_until
from console.browsers.panes import common
from console.web.decorators import org_view
from console.web.pages import org_reverse
from console.web.render import render

UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9_-]")

try:
    CONSOLE_VERSION = version("operator-console")
except PackageNotFoundError:  # run from a checkout
    CONSOLE_VERSION = "0.1.0"


@require_http_methods(["GET"])
@org_view("viewer")
async def request_detail(request, session_id: str, request_key: str):
    """One request: its headers and bodies as the service sent them (redacted), its timing, its curl.
    With htmx (the waterfall's row) the detail alone, else the session page's network view around it."""
    session = await common.get_session(request, session_id)
    finding = Finding.from_request(request)
    requests, _ = await network.read(request.service, session, finding)
    found = network.find(requests, request_key)
    if found is None:
        raise Http404("No such request in this window of the session's telemetry")
    base = org_reverse(request, "browsers:detail", session_id=session_id)
    context = {
        "session": session,
        "req": found,
        "curl": network.curl(found),
        "size": network.size_label(found.size),
        "duration": network.ms_label(found.duration_ms),
        "network_url": finding.url(base, view="network", event=None),
        "event_url": finding.url(
            base, view="events", event=found.first_seq, window="", since=None, until=_after(found)
        )
        if found.first_seq is not None
        else "",
        "request_body_id": f"req-curl-{UNSAFE_FILENAME.sub('-', found.key)}",
    }
    template = "browsers/request.html"
    if request.htmx and request.htmx.target == "request-detail":
        template += "#request-detail"
    return render(request, template, context)


def _after(found: network.Request):
    moment = found.started or found.ended
    return permalink_until(moment) if moment else None


@require_http_methods(["GET"])
@org_view("viewer")
async def har(request, session_id: str):
    """The requests of the page's window and filters as a HAR 1.2 file (an attachment, never sniffed)."""
    session = await common.get_session(request, session_id)
    finding = Finding.from_request(request)
    requests, cut = await network.read(request.service, session, finding)
    kept = network.keep(requests, finding)
    comment = f"{len(kept)} of {len(requests)} requests, {finding.describe_window()}"
    if cut:
        comment += (
            f" (the read stopped at {network.PAGES * 100} network events: narrow the window for the rest)"
        )
    body = network.har(kept, session_id=session.session_id, version=CONSOLE_VERSION, comment=comment)
    await audit.record(request, "browser.har", target_id=session.session_id, detail=comment[:200])
    response = HttpResponse(json.dumps(body, ensure_ascii=False, indent=1), content_type="application/json")
    name = UNSAFE_FILENAME.sub("_", session.session_id)[:64] or "session"
    response["Content-Disposition"] = f'attachment; filename="{name}.har"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
