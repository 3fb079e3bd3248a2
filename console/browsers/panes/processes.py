"""The processes pane of a session (notes §5): run a command (spawn) and watch its output live, one-shot
exec with its output, status (CPU, memory, exit code), standard input, kill with a chosen signal.

The service has no list of a session's processes, so the pane lists those started from this console,
read back from the audit log (``browser.process.spawn`` entries: process id, session, program name; the
arguments are never recorded, they may hold secrets). Live output goes through the console relay: one
upstream per process, frames numbered by the hub (the stream has no ids), replayed to viewers who open
the pane later, ended by the exit event. Each chunk is decoded from base64 and rendered by ``ansi``.
"""

from __future__ import annotations

import asyncio
import signal as signals
from collections import OrderedDict
from urllib.parse import unquote

from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.template.defaultfilters import filesizeformat
from django.template.loader import render_to_string
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.accounts.models import AuditLog
from console.browsers.panes import ansi, common
from console.browsers.panes.forms import CommandForm, KillForm, StdinForm
from console.live import Channel, Frame, relay_response, service_stream
from console.service import Conflict, Forbidden, Invalid, NotFound, ServiceError, browser_processes
from console.service.sse import ServerEvent
from console.web.decorators import org_view, require_role
from console.web.forms import apply_service_errors
from console.web.render import render

RECENT = 15
EXEC_OUTPUT_LIMIT = 256 * 1024  # bytes of each exec stream shown; the rest is cut with a note
MAX_TERMINALS = 500


def exit_label(code: int | None) -> str:
    """``0``, ``143 (SIGTERM)``: a code above 128 is a process killed by that signal, as shells say."""
    if code is None:
        return "unknown"
    if code > 128:
        try:
            return f"{code} ({signals.Signals(code - 128).name})"
        except ValueError:
            pass
    return str(code)


def _spawned(entry: AuditLog) -> dict:
    """What the audit entry of a spawn says: the program, the number of arguments (never the arguments,
    which may hold secrets), who and when."""
    fields = {k: unquote(v) for k, v in (p.split("=", 1) for p in entry.detail.split(" ") if "=" in p)}
    return {
        "program": fields.get("program", "?"),
        "args": fields.get("args", "0"),
        # Entries written before shapes and names were kept have neither.
        "shape": fields.get("shape", ""),
        "name": fields.get("name", ""),
        "by": entry.actor_username,
        "at": entry.created_at,
    }


async def _spawn_of(request, session_id: str, process_id: str) -> dict | None:
    entry = await AuditLog.objects.filter(
        org=request.org,
        action="browser.process.spawn",
        outcome="ok",
        target_id=process_id,
        detail__startswith=f"session={session_id} ",
    ).afirst()
    return _spawned(entry) if entry is not None else None


async def _recent(request, session_id: str) -> list[dict]:
    """Processes started here for this session, newest first, with their status where it can be read."""
    entries = [
        entry
        async for entry in AuditLog.objects.filter(
            org=request.org,
            action="browser.process.spawn",
            outcome="ok",
            detail__startswith=f"session={session_id} ",
        ).order_by("-created_at")[:RECENT]
    ]

    async def status(process_id: str):
        try:
            return await browser_processes.status(request.service, session_id, process_id)
        except ServiceError:
            return None

    statuses = await asyncio.gather(*(status(e.target_id) for e in entries))
    rows = []
    for entry, state in zip(entries, statuses, strict=True):
        rows.append(
            {
                "id": entry.target_id,
                **_spawned(entry),
                "status": state,
                "exit": exit_label(state.exit_code) if state and state.exit_code is not None else "",
                "url": common.url(request, "process", session_id, process_id=entry.target_id),
            }
        )
    return rows


async def _pane(request, session, *, form=None, exec_form=None, result=None) -> dict:
    sid = session.session_id
    return {
        "session": session,
        "form": form or CommandForm(),
        "exec_form": exec_form or CommandForm(prefix="exec"),
        "result": result,
        "recent": await _recent(request, sid),
        "processes_url": common.url(request, "processes", sid),
        "exec_url": common.url(request, "exec", sid),
    }


@require_http_methods(["GET", "POST"])
@org_view("viewer")
async def process_list(request, session_id: str):
    """The pane (GET); POST spawns a command and opens its page."""
    session = await common.get_session(request, session_id)
    form = None
    if request.method == "POST":
        require_role(request, "operator")
        form = CommandForm(request.POST)
        if form.is_valid():
            tty = form.cleaned_data.get("allocate_tty") or None
            try:
                async with audited(
                    request, "browser.process.spawn", detail=form.audit_detail(session_id)
                ) as entry:
                    spawned = await browser_processes.spawn(
                        request.service, session_id, **form.call(), allocate_tty=tty
                    )
                    entry.target_id = spawned.process_id
            except (Invalid, Forbidden, Conflict, NotFound) as exc:
                _explain(form, exc, "command")
            else:
                messages.success(request, f"Started {form.argv[0]} (pid {spawned.pid}).")
                return common.redirect(
                    request, common.url(request, "process", session_id, process_id=spawned.process_id)
                )
    context = await _pane(request, session, form=form)
    return render(request, "browsers/panes/processes.html", context, partial="processes-pane")


def _explain(form, exc: ServiceError, field: str) -> None:
    """The service's refusal next to the field it concerns (its field errors, else ``field``)."""
    if isinstance(exc, Invalid) and any(k != "__all__" for k in exc.field_errors):
        apply_service_errors(form, exc, {"args": "command"})
    elif isinstance(exc, NotFound):
        form.add_error(None, "The session has ended: nothing can run in it any more.")
    else:
        form.add_error(field, exc.message)


@require_http_methods(["GET", "POST"])
@org_view("viewer")
async def process_exec(request, session_id: str):
    """One-shot exec: the pane with the command's output (GET goes back to the pane)."""
    if request.method == "GET":
        return HttpResponseRedirect(common.url(request, "processes", session_id))
    require_role(request, "operator")
    session = await common.get_session(request, session_id)
    form = CommandForm(request.POST, prefix="exec")
    result = None
    if form.is_valid():
        detail = form.audit_detail(session_id)
        try:
            async with audited(request, "browser.process.exec", detail=detail) as entry:
                reply = await browser_processes.exec_command(request.service, session_id, **form.call())
                entry.detail = f"{detail} exit={reply.exit_code}"
        except (Invalid, Forbidden, Conflict, NotFound) as exc:
            _explain(form, exc, "command")
        else:
            result = _result(form.argv, reply)
    context = await _pane(request, session, exec_form=form, result=result)
    return render(request, "browsers/panes/processes.html", context, partial="exec-pane")


def _result(argv: list[str], reply: browser_processes.ExecResult) -> dict:
    def shown(data: bytes) -> tuple[str, bool]:
        return ansi.to_html(data[:EXEC_OUTPUT_LIMIT]), len(data) > EXEC_OUTPUT_LIMIT

    stdout, stdout_cut = shown(reply.stdout)
    stderr, stderr_cut = shown(reply.stderr)
    return {
        "program": argv[0],
        "exit": exit_label(reply.exit_code),
        "ok": reply.exit_code == 0,
        "duration_ms": reply.duration_ms,
        "stdout": stdout,
        "stderr": stderr,
        "cut": stdout_cut or stderr_cut,
        "limit": filesizeformat(EXEC_OUTPUT_LIMIT),
    }


# One process ---------------------------------------------------------------------------------------


async def _status(request, session_id: str, process_id: str) -> browser_processes.ProcessStatus:
    try:
        return await browser_processes.status(request.service, session_id, process_id)
    except NotFound:
        raise Http404("No such process") from None


def _process_context(request, session, process_id: str, status: browser_processes.ProcessStatus) -> dict:
    sid = session.session_id
    return {
        "session": session,
        "process_id": process_id,
        "status": status,
        "exit": exit_label(status.exit_code),
        "memory": filesizeformat(status.mem_bytes) if status.mem_bytes is not None else "",
        "stream_url": common.url(request, "process-stream", sid, process_id=process_id),
        "status_url": common.url(request, "process-status", sid, process_id=process_id),
        "stdin_url": common.url(request, "process-stdin", sid, process_id=process_id),
        "kill_url": common.url(request, "process-kill", sid, process_id=process_id),
        "processes_url": common.url(request, "processes", sid),
        "session_url": common.session_url(request, sid, "processes"),
        "stdin_form": StdinForm(initial={"newline": True}),
        "kill_form": KillForm(),
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def process_detail(request, session_id: str, process_id: str):
    session = await common.get_session(request, session_id)
    status = await _status(request, session_id, process_id)
    context = _process_context(request, session, process_id, status)
    context["spawn"] = await _spawn_of(request, session_id, process_id)
    return render(request, "browsers/panes/process.html", context, partial="process-status")


@require_http_methods(["GET"])
@org_view("viewer")
async def process_status(request, session_id: str, process_id: str):
    """The status block alone (polled every few seconds while the process runs)."""
    if not request.htmx:
        return HttpResponseRedirect(common.url(request, "process", session_id, process_id=process_id))
    session = await common.get_session(request, session_id)
    status = await _status(request, session_id, process_id)
    context = _process_context(request, session, process_id, status)
    return render(request, "browsers/panes/process.html#process-status", context)


@require_http_methods(["GET", "POST"])
@org_view("operator")
async def process_stdin(request, session_id: str, process_id: str):
    if request.method == "GET":
        return HttpResponseRedirect(common.url(request, "process", session_id, process_id=process_id))
    session = await common.get_session(request, session_id)
    form = StdinForm(request.POST)
    sent = None
    if form.is_valid():
        data = form.data_bytes()
        try:
            # Only the byte count: what is typed may be a password.
            async with audited(
                request, "browser.process.stdin", target_id=process_id, detail=f"bytes={len(data)}"
            ) as entry:
                written = await browser_processes.write_stdin(request.service, session_id, process_id, data)
                sent = written if written is not None else len(data)
                entry.detail = f"bytes={sent}"
        except (Conflict, Invalid, NotFound) as exc:
            form.add_error("text", _gone(exc))
        else:
            form = StdinForm(initial={"newline": form.cleaned_data.get("newline")})
    if not request.htmx and sent is not None:
        messages.success(request, f"Sent {sent} bytes.")
        return HttpResponseRedirect(common.url(request, "process", session_id, process_id=process_id))
    status = await _status(request, session_id, process_id)
    context = {**_process_context(request, session, process_id, status), "stdin_form": form, "sent": sent}
    return render(request, "browsers/panes/process.html", context, partial="process-stdin")


def _gone(exc: ServiceError) -> str:
    if isinstance(exc, Conflict):
        return f"The process cannot take input: {exc.message}."
    if isinstance(exc, NotFound):
        return "The process or its session is gone."
    return exc.message


@require_http_methods(["GET", "POST"])
@org_view("operator")
async def process_kill(request, session_id: str, process_id: str):
    """Confirm (GET), then send the chosen signal (POST)."""
    session = await common.get_session(request, session_id)
    status = await _status(request, session_id, process_id)
    form = KillForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        chosen = form.cleaned_data["signal"]
        try:
            async with audited(
                request, "browser.process.kill", target_id=process_id, detail=f"signal={chosen}"
            ):
                await browser_processes.kill(request.service, session_id, process_id, chosen)
        except (Conflict, NotFound) as exc:
            messages.warning(request, _gone(exc))
        else:
            messages.success(request, f"Sent {chosen} to the process.")
        return common.redirect(request, common.url(request, "process", session_id, process_id=process_id))
    context = {**_process_context(request, session, process_id, status), "kill_form": form}
    return render(request, "browsers/panes/kill.html", context)


# Live output ---------------------------------------------------------------------------------------

# Terminal state (colours, split characters) per channel: a channel's callables are replaced by each new
# viewer's, so the state lives here, keyed like the channel, and is dropped at the exit event.
_terminals: OrderedDict = OrderedDict()


def _terminal(key, stream: str) -> ansi.Terminal:
    streams = _terminals.get(key)
    if streams is None:
        streams = _terminals[key] = {}
        while len(_terminals) > MAX_TERMINALS:
            _terminals.popitem(last=False)
    _terminals.move_to_end(key)
    if stream not in streams:
        streams[stream] = ansi.Terminal()
    return streams[stream]


def output_renderer(key):
    def render_event(event) -> Frame | None:
        if not isinstance(event, ServerEvent):
            return None
        output = browser_processes.output_from_event(event)
        if output is None:
            return None
        if output.is_exit:
            _terminals.pop(key, None)
            html = render_to_string(
                "browsers/panes/process.html#process-exit",
                {"exit": exit_label(output.exit_code), "ok": output.exit_code == 0},
            )
            return Frame(html=html, event="exit")
        stream = output.stream if output.stream in ("stdout", "stderr") else "stdout"
        text = _terminal(key, stream).feed(output.data)
        if not text:
            return None
        # Wrapped in a span so a chunk ending in a newline keeps it through the SSE data lines.
        return Frame(html=f'<span class="out out--{stream}">{text}</span>', event="output")

    return render_event


def _is_exit(event) -> bool:
    return (
        isinstance(event, ServerEvent) and isinstance(event.data, dict) and event.data.get("event") == "exit"
    )


@require_http_methods(["GET"])
@org_view("viewer")
async def process_stream(request, session_id: str, process_id: str):
    svc = common.plain_service(request)
    key = ("process", request.org.pk, svc.project, session_id, process_id)
    channel = Channel(
        key=key,
        open=service_stream(svc, browser_processes.stream_path(session_id, process_id)),
        render=output_renderer(key),
        is_terminal=_is_exit,
        replay_to_new_viewers=True,
        ended_message="The process has exited.",
    )
    return relay_response(request, channel)
