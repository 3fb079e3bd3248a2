"""The computer pane of a session (notes §3): the current screen (a screenshot proxied through the
console: the browser never calls the service), the pointer position, single actions (move, click, type,
keys, scroll) and a batch builder whose actions run in order and stop at the first error (the service
names the failing action, and the row is marked).

Typed text is never audited or echoed back after it was sent: it may be a password.
"""

from __future__ import annotations

import time

from django.contrib import messages
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.views.decorators.http import require_http_methods
from django_htmx.http import trigger_client_event

from console.accounts.audit import audited
from console.browsers.panes import common
from console.browsers.panes.forms import (
    ACTION_FORMS,
    BATCH_TYPES,
    MAX_BATCH_ROWS,
    batch_rows,
    build_batch,
)
from console.service import Conflict, Invalid, NotFound, ServiceError, browser_computer
from console.service.contract import MOUSE_BUTTONS
from console.web import images
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.render import render


def _forms(request, session, bound: tuple[str, object] | None = None) -> list[dict]:
    size = common.viewport(session)
    found = []
    for key, (form_class, title) in ACTION_FORMS.items():
        form = bound[1] if bound and bound[0] == key else form_class(viewport=size, prefix=key)
        url = common.url(request, "computer-action", session.session_id, action=key)
        found.append({"key": key, "title": title, "form": form, "url": url})
    return found


async def _position(request, session) -> tuple[int, int] | None:
    if session.ended:
        return None
    try:
        return await browser_computer.mouse_position(request.service, session.session_id)
    except ServiceError:
        return None


async def _context(request, session, *, bound=None, rows=None, batch_error=None, done=None) -> dict:
    sid = session.session_id
    width, height = common.viewport(session)
    return {
        "session": session,
        "position": await _position(request, session),
        "width": width,
        "height": height,
        "forms": _forms(request, session, bound),
        "rows": rows if rows is not None else batch_rows(None, 3),
        "batch_types": BATCH_TYPES,
        "buttons": MOUSE_BUTTONS,
        "max_rows": MAX_BATCH_ROWS,
        "batch_error": batch_error,
        "done": done,
        "computer_url": common.url(request, "computer", sid),
        "batch_url": common.url(request, "batch", sid),
        "screenshot_url": common.url(request, "screenshot", sid),
        "shot": time.time_ns() // 1_000_000,  # a new image URL after each action: no stale screen
        "live": not session.ended,
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def computer_pane(request, session_id: str):
    session = await common.get_session(request, session_id)
    context = await _context(request, session)
    return render(request, "browsers/panes/computer.html", context, partial="computer-pane")


@require_http_methods(["GET"])
@org_view("viewer")
async def screenshot(request, session_id: str):
    """The session's screen as a PNG, fetched by the console (no store: each load is the screen now)."""
    try:
        png = await browser_computer.screenshot(request.service, session_id)
    except NotFound:
        raise Http404("No such browser session") from None
    if not images.showable_png(png):
        # Not a PNG, or one declaring more pixels than a screen has: a decompression bomb for the browser.
        return HttpResponse(
            "The service sent a screenshot that is not a PNG of a screen's size.",
            status=502,
            content_type="text/plain; charset=utf-8",
        )
    response = HttpResponse(png, content_type="image/png")
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _describe(key: str, data: dict) -> str:
    """What was done, for the flash message and the audit log (never the typed text)."""
    if key == "move":
        return f"moved the mouse to ({data['x']}, {data['y']})"
    if key == "click":
        times = f", {data['num_clicks']} times" if data.get("num_clicks", 1) > 1 else ""
        return f"{data['button']} click at ({data['x']}, {data['y']}){times}"
    if key == "type":
        return f"typed {len(data['text'])} characters"
    if key == "keys":
        return "pressed " + " ".join(data["keys"])
    return (
        f"scrolled at ({data['x']}, {data['y']}) by ({data.get('delta_x') or 0}, {data.get('delta_y') or 0})"
    )


def _explain(form, exc: ServiceError) -> None:
    if isinstance(exc, Invalid):
        apply_service_errors(form, exc)
    elif isinstance(exc, NotFound):
        form.add_error(None, "The session has ended: it cannot be driven any more.")
    else:
        form.add_error(None, exc.message)


@require_http_methods(["POST"])
@org_view("operator")
async def computer_action(request, session_id: str, action: str):
    if action not in ACTION_FORMS:
        raise Http404("No such action")
    session = await common.get_session(request, session_id)
    form_class, _ = ACTION_FORMS[action]
    form = form_class(request.POST, viewport=common.viewport(session), prefix=action)
    done = None
    if form.is_valid():
        what = _describe(action, form.cleaned_data)
        try:
            async with audited(request, f"browser.computer.{action}", target_id=session_id, detail=what):
                await form.call(request.service, session_id)
        except (Invalid, NotFound, Conflict) as exc:
            _explain(form, exc)
        else:
            done = what[:1].upper() + what[1:] + "."
            form = form_class(viewport=common.viewport(session), prefix=action, initial=_keep(action, form))
    if done and not request.htmx:
        messages.success(request, done)
        return HttpResponseRedirect(common.url(request, "computer", session_id))
    context = await _context(request, session, bound=(action, form), done=done)
    response = render(request, "browsers/panes/computer.html", context, partial="computer-pane")
    if done:
        trigger_client_event(response, "screen-changed")
    return response


def _keep(action: str, form) -> dict:
    """Values worth keeping in the form after a success (coordinates, not typed text)."""
    return {k: v for k, v in form.cleaned_data.items() if k not in ("text",)}


@require_http_methods(["POST"])
@org_view("operator")
async def batch(request, session_id: str):
    """Build the batch from the rows (each checked first), send it, and mark the row that failed."""
    session = await common.get_session(request, session_id)
    rows = batch_rows(request.POST)
    if "add_row" in request.POST and len(rows) < MAX_BATCH_ROWS:
        # Without JavaScript, "Add a row" posts the builder back with one more empty row.
        rows += batch_rows(None, 1)
        rows[-1].index = len(rows) - 1
        context = await _context(request, session, rows=rows)
        return render(request, "browsers/panes/computer.html", context, partial="computer-pane")
    batch_error = None
    filled = sum(1 for row in rows if row.type)
    if filled > MAX_BATCH_ROWS:
        batch_error = (
            f"A batch holds at most {MAX_BATCH_ROWS} actions; this one has {filled}. "
            "Remove some and run it again: nothing was sent."
        )
        built = None
    else:
        built = build_batch(rows, common.viewport(session))
    done = None
    if built is not None:
        actions, used = built
        summary = ", ".join(a["type"] for a in actions)
        try:
            async with audited(request, "browser.computer.batch", target_id=session_id, detail=summary):
                await browser_computer.batch(request.service, session_id, actions)
        except (Invalid, NotFound, Conflict) as exc:
            failed = browser_computer.failed_action(exc) if isinstance(exc, Invalid) else None
            if failed is not None and failed[0] < len(used):
                index, message = failed
                used[index].errors.append(f"The service stopped here: {message}")
                batch_error = (
                    f"Action {index + 1} of {len(actions)} failed; "
                    f"the {index} before it ran and the rest did not."
                )
            else:
                batch_error = f"The batch was refused: {exc.message}"
        else:
            done = f"Ran {len(actions)} action{'s' if len(actions) != 1 else ''} in order."
            if not request.htmx:
                messages.success(request, done)
                return HttpResponseRedirect(common.url(request, "computer", session_id))
    context = await _context(request, session, rows=rows, batch_error=batch_error, done=done)
    response = render(request, "browsers/panes/computer.html", context, partial="computer-pane")
    if done:
        trigger_client_event(response, "screen-changed")
    return response
