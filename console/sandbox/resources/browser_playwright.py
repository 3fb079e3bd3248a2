"""Playwright code and the browser REPL run next to a session's browser (SDK 0.131.0:
``browsers.playwright.execute``, ``browsers.playwright.executors``, ``browsers.repl``).

Each executor is a Node.js process of its own (``chromium/node.py``: the Playwright wheel's ``node`` and
``playwright-core``, confined by bubblewrap as commands are, with no network but the session's guarded
CDP proxy), so a call's ``page``, ``context`` and ``browser`` are Playwright's, connected over CDP.

Choices where the SDK's docstrings leave room (docs/sandbox.md copies them):

- ``POST /browsers/{id}/playwright/execute``: ``code`` (required, non-empty, at most ``MAX_CODE`` bytes),
  ``executor`` (a name of 1..64 of ``[A-Za-z0-9._-]``; absent is ``default``), ``timeout_sec`` (1..300,
  default 60). The answer is 200 ``{success, result?, error?, stdout, stderr, tab?}`` whatever the code
  did; ``error`` names the line (``script.js:LINE:COLUMN``, the code's own line numbers). The time counts
  from when the call starts on its executor (a call queued behind another waits for it first).
- Calls on one executor run one at a time, in arrival order; on different executors concurrently. A
  timeout answers ``success: false`` with what the code printed so far; the executor keeps its process
  and drops its browser connection (the abandoned code cannot drive the browser), unless its event loop
  is blocked, then the process is killed. A crash (``process.exit``, out of memory) fails the call; the
  next call starts a fresh process. Nothing of this touches another executor.
- At most ``MAX_NAMED`` (8) named executors per session (the default does not count): the 9th name is
  409 ``too_many_executors`` with the current executors in ``details``.
- ``GET …/playwright/executors``: ``{executors: [default, named…]}``; the default is listed from the
  session's start (``created_at`` = the session's), named ones by creation. ``DELETE …/executors/{name}``
  (``close_tab``, default true) stops the process (a running call fails saying it was deleted) and closes
  its tab; on ``default`` it restarts instead. An unknown name is 404. 204.
- ``POST /browsers/{id}/repl``: one REPL process per session (``repl_id`` changes when it is replaced:
  ``reset``, a timeout, a crash); ``code`` empty only with ``reset``.
- A simulated session (no real browser) answers 409 ``browser_unavailable``; ``SANDBOX_EXEC=off`` (or the
  tenant's ``exec_enabled: false``) 403 ``exec_disabled``; no confinement 503 ``exec_unavailable``, as
  commands. When the session ends, its processes are stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.chromium import node
from console.sandbox.core.errors import ApiError, conflict, not_found
from console.sandbox.core.fields import Bad, Body, Context, Field, boolean, integer
from console.sandbox.core.http import endpoint, no_content, ok, read_json
from console.sandbox.core.state import Tenant, rfc3339
from console.sandbox.resources import browser_files, browser_processes, sessions

DEFAULT = "default"
MAX_NAMED = 8
MAX_CODE = 256 * 1024
DEFAULT_TIMEOUT = 60
MAX_TIMEOUT = 300
NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
CUID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(eq=False)
class Executor:
    name: str
    created_at: str
    last_used_at: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    runner: node.Runner | None = None
    busy: bool = False
    target_id: str | None = None
    url: str | None = None
    call: asyncio.Future | None = None  # the running call's answer, failed by a delete
    repl_id: str | None = None
    owns_tab: bool = False  # a named executor: its own background tab

    def row(self) -> dict:
        row = {
            "name": self.name,
            "busy": self.busy,
            "created_at": self.created_at,
            "last_used_at": self.last_used_at,
        }
        if self.target_id:
            row["target_id"] = self.target_id
        if self.url:
            row["url"] = self.url
        return row


# Every session's executors and REPL, by session id: processes, never saved (a restarted sandbox has none).
_executors: dict[str, dict[str, Executor]] = {}
_repls: dict[str, Executor] = {}
# The sandbox's own executors of a session (WebMCP's: ``browser_webmcp``), listed nowhere.
_internal: dict[str, dict[str, Executor]] = {}
_stopping: set[asyncio.Task] = set()  # the stops of an ended session's processes, kept until done


def executors_of(record: dict) -> dict[str, Executor]:
    found = _executors.setdefault(record["session_id"], {})
    if DEFAULT not in found:
        found[DEFAULT] = Executor(DEFAULT, record["created_at"], record["created_at"])
    return found


def stop_all(tenant: Tenant, record: dict) -> None:
    """The session ended: its Node processes stop (``sessions.ended``)."""
    gone = [
        *_executors.pop(record["session_id"], {}).values(),
        *_internal.pop(record["session_id"], {}).values(),
    ]
    if record["session_id"] in _repls:
        gone.append(_repls.pop(record["session_id"]))
    for executor in gone:
        _fail(executor, "the browser session ended")
        if executor.runner is not None:
            with contextlib.suppress(RuntimeError):
                task = asyncio.get_running_loop().create_task(executor.runner.stop())
                _stopping.add(task)
                task.add_done_callback(_stopping.discard)


def _fail(executor: Executor, why: str) -> None:
    if executor.call is not None and not executor.call.done():
        executor.call.set_exception(node.RunnerError(why, exited=True))


# Validation ----------------------------------------------------------------------------------------


def _code(value, context: Context) -> str:
    if not isinstance(value, str):
        raise Bad("must be a string")
    if len(value.encode()) > MAX_CODE:
        raise Bad(f"must be at most {MAX_CODE} bytes")
    if not value.strip() and not context.body.get("reset"):
        raise Bad("the code to run is required")
    return value


def _name(value, context: Context) -> str:
    if not isinstance(value, str) or not NAME.match(value):
        raise Bad("must be 1 to 64 letters, digits, '.', '_' or '-'")
    return value


EXECUTE = Body(
    message="the code cannot run",
    fields=(
        Field("code", _code, required="the code to run is required"),
        Field("executor", _name, default=DEFAULT),
        Field("timeout_sec", integer(1, MAX_TIMEOUT), default=DEFAULT_TIMEOUT),
    ),
)
REPL = Body(
    message="the code cannot run",
    fields=(
        Field("code", _code, required="the code to run is required"),
        Field("reset", boolean, default=False),
        Field("timeout_sec", integer(1, MAX_TIMEOUT), default=DEFAULT_TIMEOUT),
    ),
)


# Processes -----------------------------------------------------------------------------------------


async def ready_session(request: Request) -> dict:
    """The session of the path, when Node.js code can run against it (a real browser, confinement)."""
    record = sessions.get_session(request, request.path_params["id"])
    await browser_processes.require_exec(request.state.tenant)
    if record.get("_engine") != "chromium":
        raise ApiError(
            409,
            "browser_unavailable",
            "this session runs the sandbox's simulated engine: Playwright code needs a real browser",
        )
    why = await asyncio.to_thread(node.unavailable)
    if why:
        raise ApiError(503, "exec_unavailable", f"Playwright code cannot run in this sandbox: {why}")
    sessions.touch(request.state.tenant, record)
    return record


def _upstream(request: Request, record: dict) -> node.Upstream:
    """The session's guarded CDP proxy, on the address this sandbox listens on."""
    host, port = request.scope.get("server") or (request.url.hostname, request.url.port)
    return node.Upstream(
        host=host, port=int(port), path=f"/_sandbox/cdp/{record['session_id']}?jwt={record['_jwt']}"
    )


async def _runner(request: Request, record: dict, executor: Executor, mode: str) -> node.Runner:
    if executor.runner is None or not executor.runner.running:
        if executor.runner is not None:
            await executor.runner.stop()
        runner = node.Runner(
            root=browser_files.session_root(record),
            upstream=_upstream(request, record),
            mode=mode,
            label=f"{record['session_id']}/{executor.name}",
        )
        try:
            await runner.start()
        except node.RunnerError as exc:
            raise ApiError(503, "executor_unavailable", str(exc)) from None
        executor.runner = runner
        executor.repl_id = _cuid()
    return executor.runner


def _cuid() -> str:
    return "c" + "".join(secrets.choice(CUID_ALPHABET) for _ in range(24))


async def _call(
    executor: Executor, runner: node.Runner, message: dict, timeout: float
) -> tuple[dict | None, dict | None]:
    """Run one call: (its answer, None), or (None, what the process said when the time ran out)."""
    call_id, future = runner.submit(message)
    executor.call = future
    try:
        return await asyncio.wait_for(asyncio.shield(future), timeout), None
    except TimeoutError:
        alive = await runner.abandon(call_id)
        future.cancel()
        return None, alive or {}
    finally:
        executor.call = None


# Execute -------------------------------------------------------------------------------------------


@endpoint
async def execute(request: Request):
    tenant = request.state.tenant
    body = EXECUTE.validate(await read_json(request))
    record = await ready_session(request)
    executors = executors_of(record)
    name = body["executor"]
    executor = executors.get(name)
    if executor is None:
        named = [e for e in executors.values() if e.name != DEFAULT]
        if len(named) >= MAX_NAMED:
            raise ApiError(
                409,
                "too_many_executors",
                f"a browser has at most {MAX_NAMED} named executors: delete one first",
                details=[{"code": "executor", "message": json.dumps(e.row())} for e in executors.values()],
            )
        now = rfc3339(tenant.now())
        executor = executors[name] = Executor(name, now, now, owns_tab=name != DEFAULT)
    async with executor.lock:
        if executors_of(record).get(name) is not executor:
            raise conflict(f"the executor {name!r} was deleted while this call waited", "executor_deleted")
        executor.busy = True
        executor.last_used_at = rfc3339(tenant.now())
        try:
            return ok(await _execute(request, record, executor, body))
        finally:
            executor.busy = False


async def _execute(request: Request, record: dict, executor: Executor, body: dict) -> dict:
    runner = await _runner(request, record, executor, "playwright")
    named = executor.owns_tab
    others = [e.target_id for e in executors_of(record).values() if e is not executor and e.target_id]
    message = {
        "op": "run",
        "code": body["code"],
        "named": named,
        "target_id": executor.target_id,
        "exclude": others,
    }
    timeout = body["timeout_sec"]
    try:
        answer, alive = await _call(executor, runner, message, timeout)
    except node.RunnerError as exc:
        if not runner.running:  # ended (a crash, a delete): its folder and relay go; the next call starts one
            await runner.stop()
            if executor.runner is runner:
                executor.runner = None
        return {"success": False, "error": str(exc), "stdout": "", "stderr": ""}
    if answer is None:
        return {
            "success": False,
            "error": f"the code did not finish within {timeout} s (timeout_sec); the executor dropped its "
            "browser connection"
            + ("" if alive else " and its process was stopped (its event loop was blocked)"),
            "stdout": alive.get("stdout", "") if alive else "",
            "stderr": alive.get("stderr", "") if alive else "",
        }
    result = {
        "success": bool(answer.get("success")),
        "stdout": answer.get("stdout", ""),
        "stderr": answer.get("stderr", ""),
    }
    if "result_json" in answer:
        result["result"] = json.loads(answer["result_json"])
    if answer.get("error"):
        result["error"] = answer["error"]
    tab = answer.get("tab")
    if isinstance(tab, dict) and tab.get("target_id"):
        result["tab"] = {"created": bool(tab.get("created")), "target_id": str(tab["target_id"])}
        if named:
            executor.target_id = result["tab"]["target_id"]
    if named:
        executor.url = answer.get("url") or None
    return result


async def run_internal(request: Request, record: dict, name: str, code: str, timeout: int) -> dict:
    """Run code for the sandbox itself in a session's executor ``name`` of its own (never listed, bound
    to the active tab, one call at a time): the answer of ``execute``."""
    tenant = request.state.tenant
    executors = _internal.setdefault(record["session_id"], {})
    executor = executors.get(name)
    if executor is None:
        now = rfc3339(tenant.now())
        executor = executors[name] = Executor(name, now, now)
    async with executor.lock:
        return await _execute(request, record, executor, {"code": code, "timeout_sec": timeout})


@endpoint
async def list_executors(request: Request):
    record = sessions.get_session(request, request.path_params["id"])
    return ok({"executors": [e.row() for e in executors_of(record).values()]})


@endpoint
async def delete_executor(request: Request):
    record = sessions.get_session(request, request.path_params["id"])
    executors = executors_of(record)
    name = request.path_params["name"]
    executor = executors.get(name)
    if executor is None:
        raise not_found("executor", name)
    close_tab = request.query_params.get("close_tab", "true").lower() not in ("false", "0", "no")
    runner = executor.runner
    if name == DEFAULT:
        _fail(executor, "the executor was restarted")
        executor.runner = None
    else:
        _fail(executor, "the executor was deleted")
        del executors[name]
        if close_tab and executor.target_id and runner is not None and runner.running:
            await runner.close_tab(executor.target_id)
    if runner is not None:
        await runner.stop()
    return no_content()


# The REPL ------------------------------------------------------------------------------------------


@endpoint
async def repl(request: Request):
    tenant = request.state.tenant
    body = REPL.validate(await read_json(request))
    record = await ready_session(request)
    session_id = record["session_id"]
    executor = _repls.get(session_id)
    if executor is None:
        now = rfc3339(tenant.now())
        executor = _repls[session_id] = Executor("repl", now, now)
    async with executor.lock:
        executor.busy = True
        try:
            return ok(await _repl(request, record, executor, body))
        finally:
            executor.busy = False


async def _repl(request: Request, record: dict, executor: Executor, body: dict) -> dict:
    if body["reset"] and executor.runner is not None:
        await executor.runner.stop()
        executor.runner = None
    runner = await _runner(request, record, executor, "repl")
    repl_id = executor.repl_id
    try:
        answer, _ = await _call(executor, runner, {"op": "repl", "code": body["code"]}, body["timeout_sec"])
    except node.RunnerError as exc:
        await runner.stop()
        executor.runner = None
        return {"repl_id": repl_id, "success": False, "error": str(exc), "repl_terminated": True}
    if answer is None:
        await runner.stop()
        executor.runner = None
        return {
            "repl_id": repl_id,
            "success": False,
            "error": f"the code did not finish within {body['timeout_sec']} s (timeout_sec)",
            "repl_terminated": True,
        }
    result = {
        "repl_id": repl_id,
        "success": bool(answer.get("success")),
        "content": [item for item in answer.get("content", []) if isinstance(item, dict)],
        "content_truncated": bool(answer.get("content_truncated")),
        "duration_ms": int(answer.get("duration_ms") or 0),
    }
    for key in ("error", "stack"):
        if answer.get(key):
            result[key] = str(answer[key])
    return result


routes = [
    Route("/browsers/{id}/playwright/execute", execute, methods=["POST"]),
    Route("/browsers/{id}/playwright/executors", list_executors, methods=["GET"]),
    Route("/browsers/{id}/playwright/executors/{name}", delete_executor, methods=["DELETE"]),
    Route("/browsers/{id}/repl", repl, methods=["POST"]),
]
