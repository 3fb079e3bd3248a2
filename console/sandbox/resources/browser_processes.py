"""A browser session's processes (notes §5): exec, spawn, status, kill, stdin, resize, output stream.

Commands run for real (never a shell unless the command is one), confined by bubblewrap (``confine``):
the session's directory (``browser_files``) is their ``/`` and the only place they can write, so
``cwd``, ``HOME`` (``/home/kernel``, the default working directory) and every absolute path a command
names are the session's paths, the ones the files API shows; the host's ``/usr`` is there read-only, and
nothing of the console, its database or the rest of the host is. A root sandbox runs them as
``SANDBOX_EXEC_USER`` (``nobody``), never as root; they have no capabilities and no network unless
``SANDBOX_EXEC_NETWORK=on``.

Choices where the contract and the notes are silent (the lead copies them into the docs):

- Real execution can be turned off: ``SANDBOX_EXEC=off`` in the sandbox's environment, or the tenant
  setting ``exec_enabled: false`` (``POST /_sandbox/settings``). ``exec`` and ``spawn`` then answer 403
  ``exec_disabled``; processes already started can still be read, fed and killed.
- Where the confinement cannot be set up (bubblewrap missing, user namespaces disabled), ``exec`` and
  ``spawn`` answer 503 ``exec_unavailable`` saying why: nothing ever runs unconfined.
- ``as_user`` and ``as_root`` are accepted and ignored: every command runs as the one unprivileged user.
- A command that is not found (or not executable) on the system's ``PATH`` is 400 with a ``command``
  detail (a program inside the session is checked by running it: bubblewrap reports a failure on
  stderr with exit code 1); a ``cwd`` that is not a directory of the session is 400 with a ``cwd`` detail.
- ``exec`` waits at most ``timeout_sec`` (default 30 s, at most 300 s); on timeout the process group is
  killed and the answer is exit code 124 (as coreutils ``timeout``) with a note on stderr. Each of stdout
  and stderr keeps at most 1 MiB (the rest is discarded, and the reply says so on stderr).
- ``spawn`` starts the process in its own process group; ``timeout_sec`` (optional) kills the group after
  that long. ``allocate_tty`` gives it a pseudo-terminal (stdout and stderr then arrive merged as
  ``stdout``; ``resize`` applies ``cols``/``rows``); without a TTY ``resize`` is 400.
- Exit codes: a process killed by a signal reports ``128 + signal`` (143 for TERM, 137 for KILL), as
  shells do.
- ``kill`` signals the whole process group (its host pid, the ``pid`` spawn returns, is the confinement's
  first process; KILL ends every process of the session's command at once); killing or feeding a
  process that has exited is 409 ``process_exited``. ``stdin`` on a process whose stdin is closed is 409 too.
- ``status``: ``cpu_pct`` is the CPU share since the previous status read (or since the start), from
  the host's ``/proc``; ``mem_bytes`` the resident set size (of the confinement's first process and its
  children). Both are absent once the process exited.
- The output stream has no ids and no resume. While the process runs, each output chunk is delivered to
  the streams connected at that moment; output produced while no stream is connected is held (the newest
  1 MiB) for the next one. So a stream opened right after ``spawn`` sees everything, and a console that
  reconnects sees what it missed without duplicates. A stream opened after the process exited gets its
  whole retained output (the newest 1 MiB), then the exit event. ``{"event": "exit", "exit_code": n}``
  ends every stream.
- When the session ends, its running processes are killed. At most ``MAX_RUNNING`` (16) processes run
  per session at a time (409 ``too_many_processes``).
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import contextlib
import fcntl
import json
import os
import signal
import struct
import termios
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.chromium import confine
from console.sandbox.core import store
from console.sandbox.core.errors import ApiError, conflict, invalid
from console.sandbox.core.fields import Bad, Body, Context, Field, optional_boolean, optional_string
from console.sandbox.core.http import endpoint, ok, read_json, sse_response
from console.sandbox.core.state import Tenant, rfc3339
from console.sandbox.resources import browser_files, sessions

SIGNALS = {"TERM": signal.SIGTERM, "KILL": signal.SIGKILL, "INT": signal.SIGINT, "HUP": signal.SIGHUP}
EXEC_TIMEOUT = 30.0
MAX_TIMEOUT = 300.0
MAX_SPAWN_TIMEOUT = 86_400.0
OUTPUT_CAP = 1024 * 1024
HELD_CAP = 1024 * 1024
# How far (output bytes, base64) a reader of a stream may fall behind before the command is held back.
READER_CAP = 1024 * 1024
MAX_RUNNING = 16
READ_SIZE = 64 * 1024
SESSION_CHECK = 1.0
EXIT_GRACE = 0.3
_END = object()

# Every running process of this sandbox process, killed when the sandbox stops.
_running: set[Proc] = set()


def _kill_all() -> None:
    for proc in list(_running):
        proc.signal(signal.SIGKILL)


atexit.register(_kill_all)


def exec_enabled(tenant: Tenant) -> bool:
    if os.environ.get("SANDBOX_EXEC", "on").strip().lower() in ("off", "0", "false", "no"):
        return False
    return tenant.settings.get("exec_enabled", True) is not False


def _size(item) -> int:
    return len(item["data_b64"]) if isinstance(item, dict) and "data_b64" in item else 0


@dataclass(eq=False)
class Reader:
    """One open output stream: what it has not taken yet, and how much of it is output."""

    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    pending: int = 0


@dataclass(eq=False)
class Proc:
    id: str
    command: str
    args: list[str]
    started_at: str
    process: asyncio.subprocess.Process | None = None  # bwrap, as the host sees it
    group: int | None = None  # host pid of the confinement's first process; the command is in its group
    tty: int | None = None  # the PTY master, when allocated
    exit_code: int | None = None
    held: deque = field(default_factory=deque)
    held_bytes: int = 0
    log: deque = field(default_factory=deque)  # every chunk, for streams opened after the exit
    log_bytes: int = 0
    readers: set[Reader] = field(default_factory=set)
    taken: asyncio.Event = field(default_factory=asyncio.Event)  # a reader took an item, or left
    cpu_mark: tuple[float, float] | None = None  # (cpu seconds, monotonic time) of the last status read
    task: asyncio.Task | None = None

    @property
    def pid(self) -> int | None:
        return self.group or (self.process.pid if self.process else None)

    @property
    def running(self) -> bool:
        return self.exit_code is None

    def publish(self, item) -> None:
        if isinstance(item, dict) and "data_b64" in item:
            self.log.append(item)
            self.log_bytes += len(item["data_b64"])
            while self.log_bytes > HELD_CAP and len(self.log) > 1:
                self.log_bytes -= len(self.log.popleft()["data_b64"])
        if self.readers:
            for reader in list(self.readers):
                reader.queue.put_nowait(item)
                reader.pending += _size(item)
            return
        self.held.append(item)
        if isinstance(item, dict) and "data_b64" in item:
            self.held_bytes += len(item["data_b64"])
            while self.held_bytes > HELD_CAP and len(self.held) > 1:
                dropped = self.held.popleft()
                if isinstance(dropped, dict):
                    self.held_bytes -= len(dropped.get("data_b64", ""))

    async def room(self) -> None:
        """Wait until every reader is within ``READER_CAP`` of the output: the pumps stop reading the
        command's pipes meanwhile, so a command printing faster than a stream is read waits on its writes
        (as it would on a pipe) instead of the sandbox keeping what it printed (a reader that never read
        made the sandbox hold all of it)."""
        while any(reader.pending > READER_CAP for reader in self.readers):
            self.taken.clear()
            await self.taken.wait()

    async def take(self, reader: Reader):
        item = await reader.queue.get()
        reader.pending -= _size(item)
        self.taken.set()
        return item

    def leave(self, reader: Reader) -> None:
        self.readers.discard(reader)
        self.taken.set()

    def signal(self, signum: int) -> None:
        if self.process is None or self.exit_code is not None:
            return
        # The command's group gets the signal, so it exits as killed by it; KILL also ends bwrap itself
        # (and with it, by --die-with-parent and the PID namespace, everything the command started).
        for group in {
            self.group or self.process.pid,
            *([self.process.pid] if signum == signal.SIGKILL else []),
        }:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signum)


STORED = (store.Kind("Proc", Proc),)  # saved with its session (``app.assemble`` registers it)
RESTART_NOTE = "the sandbox restarted while this process ran; it was not resumed"


def after_restart(tenant: Tenant) -> None:
    """A process that ran when the sandbox stopped is not resumed: it comes back exited (code -1) with a
    line on its output saying so (``store.after_load``)."""
    note = base64.b64encode(f"\n[sandbox] {RESTART_NOTE}\n".encode()).decode()
    for record in tenant.table("browsers").values():
        for proc in (record.get("_processes") or {}).values():
            if proc.exit_code is None:
                proc.exit_code = -1
                proc.publish({"stream": "stderr", "data_b64": note})
            proc.group, proc.tty = None, None  # host pid and descriptor of the previous process


def processes_of(record: dict) -> dict[str, Proc]:
    return record.setdefault("_processes", {})


def _proc(request: Request, record: dict) -> Proc:
    proc = processes_of(record).get(request.path_params["process_id"])
    if proc is None:
        raise ApiError(
            404, "process_not_found", f"no process {request.path_params['process_id']!r} in this session"
        )
    return proc


# Validation ----------------------------------------------------------------------------------------


def _program(value, context: Context) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Bad("the program to run is required")
    return value


def _args(value, context: Context) -> list[str]:
    value = value or []
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise Bad("must be a list of strings")
    return value


def _env(value, context: Context) -> dict[str, str]:
    value = value or {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise Bad("must map strings to strings")
    if any(not k or "=" in k or "\x00" in k + v for k, v in value.items()):
        raise Bad("names must be non-empty, without = or NUL")
    return value


def _timeout(value, context: Context) -> float | None:
    high = MAX_SPAWN_TIMEOUT if context.spawn else MAX_TIMEOUT
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= high
    ):
        raise Bad(f"must be a number of seconds above 0 and at most {high:g}")
    return float(value) if value is not None else None


def _optional_flag(value, context: Context) -> bool:
    return bool(optional_boolean(value, context))


_user = optional_string("must be a user name")


def _terminal_size(value, context: Context) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
        raise Bad("must be an integer from 1 to 1000")
    return value


# An ``exec`` or ``spawn`` body (notes §4); ``cwd`` is then found in the session's files (``_command``).
COMMAND = Body(
    message="the command is not valid",
    complete=True,
    fields=(
        Field("command", _program),
        Field("args", _args),
        Field("env", _env),
        Field("timeout_sec", _timeout, key="timeout"),
        Field("as_root", _optional_flag),
        Field("allocate_tty", _optional_flag),
        Field("as_user", _user),
        Field("cols", _terminal_size, default=80),
        Field("rows", _terminal_size, default=24),
    ),
)


def _command(record: dict, body: dict, *, spawn: bool) -> dict:
    spec = COMMAND.validate(body, spawn=spawn)
    raw_cwd = body.get("cwd") or browser_files.HOME
    try:
        cwd = browser_files.resolve(record, raw_cwd, "cwd")
    except ApiError as exc:
        raise invalid(
            "the command is not valid", cwd=exc.details[0]["message"] if exc.details else exc.message
        ) from None
    if not cwd.is_dir():
        raise invalid("the command is not valid", cwd=f"{raw_cwd} is not a directory of the session")
    return {
        "command": spec["command"],
        "args": spec["args"],
        "env": spec["env"],
        "cwd": cwd,
        "timeout": spec["timeout"],
        "tty": spec["allocate_tty"] and spawn,
        "cols": spec["cols"],
        "rows": spec["rows"],
    }


def _environment(record: dict, extra: dict, *, tty: bool) -> dict[str, str]:
    env = {
        "PATH": confine.PATH,
        "HOME": browser_files.HOME,
        "USER": "kernel",
        "LOGNAME": "kernel",
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color" if tty else "dumb",
        "KERNEL_SESSION_ID": record["session_id"],
    }
    env.update(extra)
    return env


async def require_exec(tenant: Tenant) -> None:
    if not exec_enabled(tenant):
        raise ApiError(
            403,
            "exec_disabled",
            "running commands is turned off in this sandbox "
            "(SANDBOX_EXEC=off, or the tenant setting exec_enabled is false)",
        )
    why = await asyncio.to_thread(confine.unavailable)  # checked once, then cached
    if why:
        raise ApiError(503, "exec_unavailable", f"commands cannot run in this sandbox: {why}")


def _check_program(command: str, env: dict[str, str]) -> None:
    """400 for a bare program name found on none of the PATH's system directories (the host's /usr is
    the session's). Anything else is the confined command's own business: the host is never searched."""
    if "/" in command:
        return
    folders = [f for f in env.get("PATH", "").split(":") if f]
    # Only plain system folders are looked at on the host (whose /usr is the session's): a PATH such as
    # /usr/../root made this check (root's) tell whether a program exists in any host folder.
    if not folders or not all(_system_folder(f) for f in folders):
        return
    for folder in folders:
        candidate = os.path.join(folder, command)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return
    raise invalid(f"command not found: {command}", command="no such program on the session's PATH")


def _system_folder(folder: str) -> bool:
    return folder == os.path.normpath(folder) and any(
        folder == top or folder.startswith(top + "/") for top in confine.SYSTEM
    )


def _read_info(fd: int) -> int | None:
    """The host pid of the confinement's first process, from bwrap's --info-fd (JSON), or None."""
    data = b""
    with os.fdopen(fd, "rb") as info:
        while chunk := info.read(4096):
            data += chunk
    try:
        return int(json.loads(data)["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None


async def _start(
    record: dict, spec: dict, env: dict, **streams
) -> tuple[asyncio.subprocess.Process, int | None]:
    _check_program(spec["command"], env)
    root = browser_files.session_root(record)
    cwd = browser_files.service_path(record, spec["cwd"])
    info_read, info_write = os.pipe()
    try:
        argv = confine.command(root, cwd, [spec["command"], *spec["args"]], info_fd=info_write)
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=root,
            env=env,
            start_new_session=True,
            pass_fds=(info_write,),
            **confine.popen_options(),
            **streams,
        )
    except OSError as exc:
        os.close(info_read)
        raise ApiError(503, "exec_unavailable", f"the confinement could not start: {exc.strerror}") from None
    finally:
        os.close(info_write)
    try:
        group = await asyncio.wait_for(
            asyncio.to_thread(_read_info, info_read), timeout=confine.PROBE_TIMEOUT
        )
    except TimeoutError:
        group = None
    if group is not None:
        await _command_started(process, group)
    return process, group


async def _command_started(process: asyncio.subprocess.Process, group: int) -> None:
    """Wait until the confinement's first process has started the command (it does once the mounts are
    set up), so a signal sent right after spawn reaches the command and not only that first process."""
    deadline = time.monotonic() + confine.PROBE_TIMEOUT
    while process.returncode is None and time.monotonic() < deadline:
        if _children(group) != []:  # the command runs, or has already come and gone
            return
        await asyncio.sleep(0.005)


def _children(pid: int) -> list[int] | None:
    """The host pids of a process's children, from /proc (None once it is gone: never worth waiting)."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return None


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


# Exec ----------------------------------------------------------------------------------------------


async def _collect(stream: asyncio.StreamReader, cap: int) -> tuple[bytes, bool]:
    kept, clipped = bytearray(), False
    while chunk := await stream.read(READ_SIZE):
        room = cap - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > room:
            clipped = True
    return bytes(kept), clipped


@endpoint
async def exec_command(request: Request):
    tenant = request.state.tenant
    record = sessions.of_path(request)
    await require_exec(tenant)
    spec = _command(record, await read_json(request), spawn=False)
    env = _environment(record, spec["env"], tty=False)
    started = time.monotonic()
    process, group = await _start(
        record,
        spec,
        env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    proc = Proc(
        id="exec", command=spec["command"], args=spec["args"], started_at="", process=process, group=group
    )
    _running.add(proc)
    readers = asyncio.gather(_collect(process.stdout, OUTPUT_CAP), _collect(process.stderr, OUTPUT_CAP))
    timeout = spec["timeout"] or EXEC_TIMEOUT
    timed_out = False
    try:
        (stdout, out_clipped), (stderr, err_clipped) = await asyncio.wait_for(
            asyncio.shield(readers), timeout=timeout
        )
        code = _exit_code(await process.wait())
    except TimeoutError:
        timed_out = True
        proc.signal(signal.SIGKILL)
        await process.wait()
        try:
            (stdout, out_clipped), (stderr, err_clipped) = await asyncio.wait_for(readers, EXIT_GRACE)
        except TimeoutError:
            readers.cancel()
            stdout, out_clipped, stderr, err_clipped = b"", False, b"", False
        code = 124
    finally:
        proc.exit_code = process.returncode if process.returncode is not None else -1
        _running.discard(proc)
    notes = []
    if out_clipped or err_clipped:
        notes.append(f"[sandbox] output beyond {OUTPUT_CAP // 1024} KiB per stream was discarded")
    if timed_out:
        notes.append(f"[sandbox] timed out after {timeout:g} s; the process was killed")
    if notes:
        stderr += ("\n" if stderr and not stderr.endswith(b"\n") else "").encode() + "\n".join(notes).encode()
    return ok(
        {
            "exit_code": code,
            "stdout_b64": base64.b64encode(stdout).decode(),
            "stderr_b64": base64.b64encode(stderr).decode(),
            "duration_ms": int((time.monotonic() - started) * 1000),
        }
    )


# Spawn and its lifecycle ---------------------------------------------------------------------------


async def _pump(proc: Proc, reader: asyncio.StreamReader, name: str) -> None:
    try:
        while chunk := await reader.read(READ_SIZE):
            proc.publish({"stream": name, "data_b64": base64.b64encode(chunk).decode()})
            await proc.room()
    except OSError:  # a PTY master reports EIO once the terminal's last writer is gone
        return


async def _tty_reader(master: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    pipe = os.fdopen(os.dup(master), "rb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return reader


async def _run(tenant: Tenant, record: dict, proc: Proc, pumps: list, deadline: float | None) -> None:
    """Wait for the process (killing it when the session ends or its timeout passes), then publish
    the rest of its output and the exit event."""
    loop = asyncio.get_running_loop()
    process = proc.process
    try:
        while True:
            wait = SESSION_CHECK if deadline is None else max(0.0, min(SESSION_CHECK, deadline - loop.time()))
            try:
                await asyncio.wait_for(asyncio.shield(process.wait()), timeout=wait)
                break
            except TimeoutError:
                pass
            if not sessions.is_active(tenant, record) or (deadline is not None and loop.time() >= deadline):
                proc.signal(signal.SIGKILL)
        # Output still in the pipes arrives before the exit event; a child that kept the pipes open
        # after the process itself exited does not hold the exit event back for long.
        _, pending = await asyncio.wait(pumps, timeout=EXIT_GRACE)
        for task in pending:
            task.cancel()
        proc.exit_code = _exit_code(process.returncode)
    finally:
        if proc.exit_code is None:
            proc.signal(signal.SIGKILL)
            proc.exit_code = -1
        _running.discard(proc)
        if proc.tty is not None:
            with contextlib.suppress(OSError):
                os.close(proc.tty)
        proc.publish({"event": "exit", "exit_code": proc.exit_code})
        for reader in list(proc.readers):
            reader.queue.put_nowait(_END)


@endpoint
async def spawn(request: Request):
    tenant = request.state.tenant
    record = sessions.of_path(request)
    await require_exec(tenant)
    spec = _command(record, await read_json(request), spawn=True)
    processes = processes_of(record)
    if sum(1 for p in processes.values() if p.running) >= MAX_RUNNING:
        raise conflict(
            f"{MAX_RUNNING} processes are already running in this session; kill one first",
            code="too_many_processes",
        )
    env = _environment(record, spec["env"], tty=spec["tty"])
    proc = Proc(
        id=str(uuid.uuid4()), command=spec["command"], args=spec["args"], started_at=rfc3339(tenant.now())
    )
    if spec["tty"]:
        master, slave = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", spec["rows"], spec["cols"], 0, 0))
        try:
            proc.process, proc.group = await _start(
                record, spec, env, stdin=slave, stdout=slave, stderr=slave
            )
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        proc.tty = master
        pumps = [asyncio.create_task(_pump(proc, await _tty_reader(master), "stdout"))]
    else:
        proc.process, proc.group = await _start(
            record,
            spec,
            env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        pumps = [
            asyncio.create_task(_pump(proc, proc.process.stdout, "stdout")),
            asyncio.create_task(_pump(proc, proc.process.stderr, "stderr")),
        ]
    _running.add(proc)
    processes[proc.id] = proc
    loop = asyncio.get_running_loop()
    deadline = loop.time() + spec["timeout"] if spec["timeout"] else None
    proc.task = loop.create_task(_run(tenant, record, proc, pumps, deadline))
    return ok({"process_id": proc.id, "pid": proc.pid, "started_at": proc.started_at}, status=201)


# Status, kill, stdin, resize -----------------------------------------------------------------------

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _usage(pid: int) -> tuple[float, int] | None:
    """(CPU seconds, resident bytes) of a live process and its children, from /proc (None where /proc
    is absent): the confinement's first process is small, the command is its child."""
    cpu, rss, found = 0.0, 0, False
    for each in (pid, *(_children(pid) or [])):
        try:
            stat_fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            statm = Path(f"/proc/{each}/statm").read_text().split()
        except (OSError, IndexError):
            continue
        found = True
        cpu += (int(stat_fields[11]) + int(stat_fields[12])) / _TICKS
        rss += int(statm[1]) * _PAGE
    return (cpu, rss) if found else None


@endpoint
async def status(request: Request):
    record = sessions.of_path(request, activity=False)
    proc = _proc(request, record)
    if not proc.running:
        return ok({"state": "exited", "exit_code": proc.exit_code})
    body: dict = {"state": "running"}
    usage = _usage(proc.pid)
    if usage is not None:
        cpu, rss = usage
        now = time.monotonic()
        last_cpu, last_time = proc.cpu_mark or (0.0, _started_monotonic(proc, now))
        elapsed = max(now - last_time, 1e-3)
        body["cpu_pct"] = round(max(0.0, (cpu - last_cpu) / elapsed * 100), 1)
        body["mem_bytes"] = rss
        proc.cpu_mark = (cpu, now)
    return ok(body)


def _started_monotonic(proc: Proc, now: float) -> float:
    try:
        start_ticks = int(Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return now - 1.0
    return now - max(uptime - start_ticks / _TICKS, 1e-3)


def _exited(proc: Proc) -> ApiError:
    return conflict(f"the process has already exited (exit code {proc.exit_code})", code="process_exited")


@endpoint
async def kill(request: Request):
    proc = _proc(request, sessions.of_path(request))
    body = await read_json(request)
    name = body.get("signal")
    if name not in SIGNALS:
        raise invalid("signal is not valid", signal="must be one of TERM, KILL, INT, HUP")
    if not proc.running:
        raise _exited(proc)
    proc.signal(SIGNALS[name])
    return ok({"ok": True})


@endpoint
async def stdin(request: Request):
    proc = _proc(request, sessions.of_path(request))
    body = await read_json(request)
    raw = body.get("data_b64")
    try:
        data = base64.b64decode(raw, validate=True) if isinstance(raw, str) else None
    except ValueError:
        data = None
    if data is None:
        raise invalid("data_b64 must be base64", data_b64="the bytes to write, base64-encoded")
    if not proc.running:
        raise _exited(proc)
    try:
        if proc.tty is not None:
            written = os.write(proc.tty, data)
        else:
            writer = proc.process.stdin
            if writer is None or writer.is_closing():
                raise conflict("the process's standard input is closed", code="stdin_closed")
            writer.write(data)
            await writer.drain()
            written = len(data)
    except (BrokenPipeError, ConnectionResetError, OSError):
        raise conflict("the process's standard input is closed", code="stdin_closed") from None
    return ok({"written_bytes": written})


@endpoint
async def resize(request: Request):
    proc = _proc(request, sessions.of_path(request))
    body = await read_json(request)
    errors = {}
    for key in ("cols", "rows"):
        value = body.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
            errors[key] = "an integer from 1 to 1000 is required"
    if errors:
        raise invalid("cols and rows are required", **errors)
    if proc.tty is None:
        raise invalid("the process has no terminal", process_id="only a process spawned with allocate_tty")
    if not proc.running:
        raise _exited(proc)
    fcntl.ioctl(proc.tty, termios.TIOCSWINSZ, struct.pack("HHHH", body["rows"], body["cols"], 0, 0))
    proc.signal(signal.SIGWINCH)
    return ok({"ok": True})


@endpoint
async def stream(request: Request):
    record = sessions.get_session(request, request.path_params["id"])
    proc = _proc(request, record)
    reader = Reader()

    def attach() -> None:
        # When the stream starts, not before: a reader registered by a response that never ran would
        # hold the command back for good.
        if proc.running:
            while proc.held:
                item = proc.held.popleft()
                reader.queue.put_nowait(item)
                reader.pending += _size(item)
            proc.held_bytes = 0
            proc.readers.add(reader)
        else:
            # Exited: everything it printed (the newest 1 MiB), then the exit event.
            proc.held.clear()
            proc.held_bytes = 0
            for item in proc.log:
                reader.queue.put_nowait(item)
            reader.queue.put_nowait({"event": "exit", "exit_code": proc.exit_code})
            reader.queue.put_nowait(_END)

    async def frames():
        try:
            attach()
            while True:
                item = await proc.take(reader)
                if item is _END:
                    return
                yield None, item
                if item.get("event") == "exit":
                    return
        finally:
            proc.leave(reader)

    return sse_response(request, frames())


def seed(tenant: Tenant) -> None:
    """No demo processes: they run for real, so they start when someone spawns them."""


routes = [
    Route("/browsers/{id}/process/exec", exec_command, methods=["POST"]),
    Route("/browsers/{id}/process/spawn", spawn, methods=["POST"]),
    Route("/browsers/{id}/process/{process_id}/status", status, methods=["GET"]),
    Route("/browsers/{id}/process/{process_id}/kill", kill, methods=["POST"]),
    Route("/browsers/{id}/process/{process_id}/stdin", stdin, methods=["POST"]),
    Route("/browsers/{id}/process/{process_id}/resize", resize, methods=["POST"]),
    Route("/browsers/{id}/process/{process_id}/stdout/stream", stream, methods=["GET"]),
]
