"""The tools pane of a session: a request made through the session's browser (curl), extensions loaded
into the running browser, and a live logs pane (a supervised process's log or a file) through the relay.

Operators use the tools; viewers watch logs. The audit log records the request's method, scheme, host and
path (never its query, headers or body: they may hold secrets) and the extension's name.
"""

from __future__ import annotations

import base64
import html
from urllib.parse import urlencode, urlsplit

from django.http import Http404
from django.template.defaultfilters import filesizeformat
from django.views.decorators.http import require_http_methods

from console.accounts import audit
from console.browsers.panes import common
from console.browsers.panes.tools_forms import CurlForm, ExtensionForm, LogsForm
from console.live import Channel, Frame, relay_response, service_stream
from console.service import Invalid, NotFound, ServiceError, browser_tools
from console.service.sse import ServerEvent
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.render import render

BODY_PREVIEW = 64 * 1024


def _context(request, session, **extra) -> dict:
    sid = session.session_id
    return {
        "session": session,
        "pane_label": "Tools",
        "pane_url": common.url(request, "tools", sid),
        "curl_form": CurlForm(),
        "extension_form": ExtensionForm(),
        "logs_form": LogsForm(initial={"source": "supervisor", "supervisor_process": "chromium"}),
        "result": None,
        "logs_url": None,
        **extra,
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def tools_pane(request, session_id: str):
    session = await common.get_session(request, session_id)
    context = _context(request, session)
    if "source" in request.GET:
        form = LogsForm(request.GET)
        context["logs_form"] = form
        if form.is_valid():
            context["logs_url"] = (
                common.url(request, "logs-stream", session_id) + "?" + urlencode(form.params())
            )
    return render(request, "browsers/panes/tools.html", context, partial="tools-pane")


def _shown(result: browser_tools.CurlResult, encoding: str) -> dict:
    body = result.body or ""
    if encoding == "base64":
        size = len(base64.b64decode(body, validate=False)) if body else 0
        return {"text": None, "note": f"binary body, {filesizeformat(size)} (base64 in the response)"}
    if len(body) > BODY_PREVIEW:
        return {"text": body[:BODY_PREVIEW], "note": f"showing the first {filesizeformat(BODY_PREVIEW)}"}
    return {"text": body, "note": ""}


@require_http_methods(["POST"])
@org_view("operator")
async def curl(request, session_id: str):
    session = await common.get_session(request, session_id)
    form = CurlForm(request.POST)
    result = shown = error = None
    if form.is_valid():
        data = form.cleaned_data
        parts = urlsplit(data["url"])
        target = f"{data['method']} {parts.scheme}://{parts.netloc}{parts.path or '/'}"
        try:
            result = await browser_tools.curl(
                request.service,
                session_id,
                url=data["url"],
                method=data["method"],
                headers=data["headers"] or None,
                body=data["body"] or None,
                response_encoding=data["response_encoding"],
            )
        except Invalid as exc:
            apply_service_errors(form, exc)
            await audit.record(request, "browser.curl", target_id=session_id, outcome="error", detail=target)
        except NotFound:
            raise Http404("No such browser session") from None
        except ServiceError as exc:
            if exc.status is None or exc.status < 500:
                raise
            # The request could not be made through the browser: say why, in the pane.
            error = exc.message
            await audit.record(request, "browser.curl", target_id=session_id, outcome="error", detail=target)
        else:
            shown = _shown(result, data["response_encoding"])
            await audit.record(
                request, "browser.curl", target_id=session_id, detail=f"{target} → {result.status}"
            )
    context = _context(request, session, curl_form=form, result=result, shown=shown, curl_error=error)
    return render(request, "browsers/panes/tools.html", context, partial="tools-curl")


@require_http_methods(["POST"])
@org_view("operator")
async def load_extension(request, session_id: str):
    session = await common.get_session(request, session_id)
    form = ExtensionForm(request.POST, request.FILES)
    loaded = ""
    if form.is_valid():
        name, upload = form.cleaned_data["name"], form.cleaned_data["zip_file"]
        try:
            await browser_tools.load_extensions(
                request.service, session_id, [(name, upload.name, upload.file)]
            )
        except Invalid as exc:
            apply_service_errors(
                form, exc, {"extensions[0].zip_file": "zip_file", "extensions[0].name": "name"}
            )
            await audit.record(
                request, "browser.extensions.load", target_id=session_id, outcome="error", detail=name
            )
        except NotFound:
            raise Http404("No such browser session") from None
        else:
            loaded = name
            await audit.record(request, "browser.extensions.load", target_id=session_id, detail=name)
            form = ExtensionForm()
    context = _context(request, session, extension_form=form, loaded=loaded)
    return render(request, "browsers/panes/tools.html", context, partial="tools-extensions")


def _render_log(event) -> Frame | None:
    if not isinstance(event, ServerEvent) or not isinstance(event.data, dict):
        return None
    if event.data.get("event") != "log":
        return None
    at = html.escape(str(event.data.get("timestamp") or ""))
    message = html.escape(str(event.data.get("message") or ""))
    return Frame(html=f'<li class="log-line"><time>{at}</time> <span>{message}</span></li>', event="log")


@require_http_methods(["GET"])
@org_view("viewer")
async def logs_stream(request, session_id: str):
    form = LogsForm(request.GET)
    if not form.is_valid():
        raise Http404("Choose a process or a file")
    params = form.params()
    svc = common.plain_service(request)
    channel = Channel(
        key=("logs", request.org.pk, svc.project, session_id, tuple(sorted(params.items()))),
        open=service_stream(svc, browser_tools.logs_stream_path(session_id), params=params),
        render=_render_log,
        replay_to_new_viewers=True,
        ended_message="The log stream has ended.",
    )
    return relay_response(request, channel)
