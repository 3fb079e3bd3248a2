"""The Script pane of a session (/o/<org>/browsers/<session_id>/script/): Playwright code run next to the
session's browser (``browsers.playwright.execute``), its returned value, stdout and stderr, and its error
with the line it points at; the member's recent scripts; the executors, which an operator can stop (the
run on it fails at once) or reset (a named executor's tab closes too).

Viewers see the pane and the executors; operators run, stop and reset. The audit log records a run's
executor, the SHA-256 and length of its code and how it ended, never the code, its output or its error
text (they may hold what the script typed: docs/security.md).
"""

from __future__ import annotations

import hashlib
import json
import re

from django.http import Http404
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.accounts.models import RecentScript
from console.browsers.panes import common
from console.browsers.panes.script_forms import ExecutorForm, ScriptForm
from console.service import Invalid, NotFound, ServiceError, browser_playwright
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.render import render

TEMPLATE = "browsers/panes/script.html"
RESULT_PREVIEW = 256 * 1024  # characters of the returned value shown
_LINE = re.compile(r"script\.js:(\d+)(?::(\d+))?")
EXAMPLE = (
    "// page, context and browser are Playwright's.\n"
    "await page.goto('https://shop.example.com/');\n"
    "return await page.title();\n"
)


def digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


async def _recent(request) -> list[RecentScript]:
    query = RecentScript.objects.filter(org=request.org, user=request.user).order_by("-ran_at", "-pk")
    return [script async for script in query[: RecentScript.KEPT]]


async def _remember(request, code: str) -> None:
    await RecentScript.objects.acreate(org=request.org, user=request.user, code=code, digest=digest(code))
    query = RecentScript.objects.filter(org=request.org, user=request.user).order_by("-ran_at", "-pk")
    old = [pk async for pk in query.values_list("pk", flat=True)[RecentScript.KEPT :]]
    if old:
        await RecentScript.objects.filter(pk__in=old).adelete()


async def _executors(request, session_id: str) -> tuple[list, str]:
    """The session's executors, or why they cannot be listed (a simulated or ended session...)."""
    try:
        return await browser_playwright.executors(request.service, session_id), ""
    except ServiceError as exc:
        return [], exc.message


async def _context(request, session, **extra) -> dict:
    sid = session.session_id
    executors, executors_error = await _executors(request, sid)
    return {
        "session": session,
        "pane_label": "Script",
        "pane_url": common.url(request, "script", sid),
        "form": ScriptForm(initial={"code": EXAMPLE}),
        "executors": executors,
        "executors_error": executors_error,
        "recent": await _recent(request),
        "kept": RecentScript.KEPT,
        "outcome": None,
        **extra,
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def script_pane(request, session_id: str):
    session = await common.get_session(request, session_id)
    context = await _context(request, session)
    chosen = request.GET.get("recent")
    if chosen and chosen.isdigit():
        script = next((s for s in context["recent"] if s.pk == int(chosen)), None)
        if script is not None:
            context["form"] = ScriptForm(initial={"code": script.code})
    target = request.htmx.target if request.htmx else None
    return render(request, TEMPLATE, context, partial=target if target == "script-recent" else "script-pane")


@require_http_methods(["GET"])
@org_view("viewer")
async def script_executors(request, session_id: str):
    session = await common.get_session(request, session_id)
    return render(request, TEMPLATE, await _context(request, session), partial="script-executors")


def _outcome(result: browser_playwright.ExecuteResult) -> dict:
    shown = None
    if result.returned:
        shown = json.dumps(result.result, indent=2, ensure_ascii=False)
        if len(shown) > RESULT_PREVIEW:
            shown = shown[:RESULT_PREVIEW] + "\n…"
    line = _LINE.search(result.error or "")
    return {
        "result": result,
        "value": shown,
        "error_line": int(line.group(1)) if line else None,
        "error_column": int(line.group(2)) if line and line.group(2) else None,
    }


def _ending(result: browser_playwright.ExecuteResult, outcome: dict) -> str:
    if result.success:
        return "ok"
    if "timeout_sec" in (result.error or ""):
        return "timed out"
    return f"error at line {outcome['error_line']}" if outcome["error_line"] else "error"


@require_http_methods(["POST"])
@org_view("operator")
async def script_run(request, session_id: str):
    session = await common.get_session(request, session_id)
    form = ScriptForm(request.POST)
    outcome = None
    if form.is_valid():
        code, executor = form.cleaned_data["code"], form.cleaned_data["executor"]
        detail = f"executor {executor}: code sha256 {digest(code)}, {len(code)} characters"
        try:
            async with audited(
                request, "browser.playwright.execute", target_id=session_id, detail=detail, secrets=[code]
            ) as entry:
                result = await browser_playwright.execute(
                    request.service,
                    session_id,
                    code=code,
                    executor=executor,
                    timeout_sec=form.cleaned_data["timeout_sec"],
                )
                outcome = _outcome(result)
                entry.detail = f"{detail} → {_ending(result, outcome)}"
        except Invalid as exc:
            apply_service_errors(form, exc)
        except NotFound:
            raise Http404("No such browser session") from None
        except ServiceError as exc:
            if exc.status is None or exc.status < 409:
                raise
            form.add_error(None, exc.message)  # no browser to run on, the executor limit...
        await _remember(request, code)
    context = await _context(request, session, form=form, outcome=outcome)
    response = render(request, TEMPLATE, context, partial="script-run")
    response["HX-Trigger"] = "script-ran"
    return response


async def _delete(request, session_id: str, action: str, *, close_tab: bool) -> tuple[ExecutorForm, str]:
    form = ExecutorForm(request.POST)
    done = ""
    if form.is_valid():
        name = form.cleaned_data["executor"]
        try:
            async with audited(request, action, target_id=session_id, detail=f"executor {name}"):
                await browser_playwright.delete_executor(
                    request.service, session_id, name, close_tab=close_tab
                )
        except NotFound:
            form.add_error("executor", f"No executor named {name!r} in this session.")
        else:
            done = name
    return form, done


@require_http_methods(["POST"])
@org_view("operator")
async def script_stop(request, session_id: str):
    """Stop what runs on an executor: its process is stopped (the run fails at once), its tab kept."""
    session = await common.get_session(request, session_id)
    form, stopped = await _delete(request, session_id, "browser.playwright.stop", close_tab=False)
    context = await _context(request, session, stop_form=form, stopped=stopped)
    response = render(request, TEMPLATE, context, partial="script-executors")
    response["HX-Trigger"] = "script-ran"
    return response


@require_http_methods(["POST"])
@org_view("operator")
async def script_reset(request, session_id: str):
    """Reset an executor, once confirmed: a fresh process, and a named executor's tab closed."""
    session = await common.get_session(request, session_id)
    if request.POST.get("confirm") != "yes":
        form = ExecutorForm(request.POST)
        context = await _context(request, session, confirm_reset=form.data.get("executor", ""))
        return render(request, TEMPLATE, context, partial="script-executors")
    form, reset = await _delete(request, session_id, "browser.playwright.reset", close_tab=True)
    context = await _context(request, session, stop_form=form, reset=reset)
    return render(request, TEMPLATE, context, partial="script-executors")
