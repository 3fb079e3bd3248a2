"""Confined Node.js processes that drive a session's browser with the Playwright of the Playwright wheel:
the sandbox's Playwright executors (``browser_playwright``) and its browser REPL (``browser_repl``).

Each process runs ``runner.cjs`` with the wheel's own ``node`` and ``playwright-core`` (``driver/`` of the
``playwright`` package: nothing is downloaded, nothing of npm is needed), confined by bubblewrap as
commands are (``confine.node_command``): the session's directory as ``/`` (what a script writes lands in
the session's files), the host's system read-only, the wheel's driver read-only at ``/opt/playwright``, a
generated ``/etc``, no capabilities, the commands' unprivileged user, and a network namespace of its own
whatever ``SANDBOX_EXEC_NETWORK`` says: its only way out is a Unix socket (``/run/executor/cdp.sock``) that
the sandbox relays to the session's guarded CDP proxy (``/_sandbox/cdp/{id}?jwt=…``, the session's own
``cdp_ws_url``). Inside, the runner listens on its own loopback at the sandbox's port and forwards there,
so Playwright's ``connectOverCDP`` speaks to the proxy as any CDP client does (the proxy's guard, its
telemetry and its activity rules apply).

The sandbox talks to the runner over a socket pair (one JSON object per line; the runner's header says
which messages). A call's timeout is the caller's: ``abandon`` asks the runner what the call printed so
far and cuts the process's browser connections (code left running can no longer drive the browser); a
runner that does not answer within ``ALIVE_SECONDS`` has a blocked event loop and is killed. A process
that exits (the code's ``process.exit``, a crash) fails its pending call; the next call starts another.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from console.sandbox.chromium import confine

RUNNER = Path(__file__).with_name("runner.cjs")
JAIL_DRIVER = "/opt/playwright"
JAIL_DIR = "/run/executor"
SOCKET_NAME = "cdp.sock"
READY_SECONDS = 20.0  # a new process loads playwright-core within this
ALIVE_SECONDS = 2.0  # an abandoned call's process answers within this, or its event loop is blocked
LINE_LIMIT = 8 * 1024 * 1024  # one message from the runner (a result with its output) at most
OUTPUT_CAP = 1024 * 1024  # characters of stdout and of stderr kept per call
RESULT_CAP = 1024 * 1024  # bytes of a returned value, as JSON
MEMORY_MB = 512  # the V8 heap of one process
STDERR_TAIL = 4096  # what a process printed outside calls, kept to say why it ended


class RunnerError(Exception):
    """The process could not start, or ended while a call ran (``exited``)."""

    def __init__(self, message: str, *, exited: bool = False):
        super().__init__(message)
        self.exited = exited


@dataclass(frozen=True)
class Upstream:
    """Where the session's CDP proxy listens: the sandbox's own address and the proxy's path (with the
    session's jwt)."""

    host: str
    port: int
    path: str


def driver() -> Path | None:
    """The Playwright wheel's driver folder (``node`` and ``package/``, playwright-core), or None."""
    spec = importlib.util.find_spec("playwright")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "driver"
    return folder if (folder / "node").is_file() and (folder / "package" / "package.json").is_file() else None


def unavailable() -> str | None:
    """None when Node processes can run confined; otherwise why not (they never run unconfined)."""
    problem = confine.unavailable()
    if problem:
        return problem
    if driver() is None:
        return "the Playwright wheel's driver (node and playwright-core) was not found"
    return None


class Runner:
    """One confined Node process (``mode``: ``playwright`` or ``repl``) for one session."""

    def __init__(self, *, root: Path, upstream: Upstream | None, mode: str, label: str):
        self.root = root
        self.upstream = upstream
        self.mode = mode
        self.label = label
        self.process: asyncio.subprocess.Process | None = None
        self.folder: Path | None = None
        self._server: asyncio.AbstractServer | None = None
        self._links: set[asyncio.StreamWriter] = set()
        self._control: asyncio.StreamWriter | None = None
        self._pending: dict[object, asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()
        self._stderr = bytearray()
        self._next = 0
        self.typescript = False

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    # Starting ------------------------------------------------------------------------------------------

    async def start(self) -> None:
        found = driver()
        if found is None:
            raise RunnerError("the Playwright wheel's driver was not found")
        self.folder = Path(tempfile.mkdtemp(prefix="sandbox-executor-"))
        try:
            shutil.copyfile(RUNNER, self.folder / RUNNER.name)
            (self.folder / RUNNER.name).chmod(0o644)
            if self.upstream is not None:
                path = str(self.folder / SOCKET_NAME)
                self._server = await asyncio.start_unix_server(self._relay, path=path)
                os.chmod(path, 0o600)
                confine.own(Path(path))
            self.folder.chmod(0o700)
            confine.own(self.folder)
            parent, child = socket.socketpair()
            try:
                argv = confine.node_command(
                    self.root,
                    [
                        f"{JAIL_DRIVER}/node",
                        f"--max-old-space-size={MEMORY_MB}",
                        "--disable-warning=ExperimentalWarning",
                        f"{JAIL_DIR}/{RUNNER.name}",
                    ],
                    binds=[(found, JAIL_DRIVER, False), (self.folder, JAIL_DIR, True)],
                )
                self.process = await asyncio.create_subprocess_exec(
                    *argv,
                    cwd=self.root,
                    env=self._environment(child.fileno()),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.PIPE,
                    pass_fds=(child.fileno(),),
                    start_new_session=True,
                    **confine.popen_options(),
                )
            finally:
                child.close()
            reader, self._control = await asyncio.open_unix_connection(sock=parent, limit=LINE_LIMIT)
            ready = self._expect("ready")
            self._spawn(self._read(reader))
            self._spawn(self._read_stderr())
            try:
                message = await asyncio.wait_for(ready, READY_SECONDS)
            except (TimeoutError, RunnerError) as exc:
                raise RunnerError(f"the Node.js process did not start: {self._why(exc)}") from None
            self.typescript = bool(message.get("typescript"))
        except BaseException:
            await self.stop()
            raise

    def _environment(self, fd: int) -> dict[str, str]:
        env = {
            "PATH": confine.PATH,
            "HOME": "/home/kernel",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "NODE_ENV": "production",
            "EXECUTOR_MODE": self.mode,
            "EXECUTOR_PLAYWRIGHT": f"{JAIL_DRIVER}/package",
            "EXECUTOR_CONTROL_FD": str(fd),
            "EXECUTOR_OUTPUT_CAP": str(OUTPUT_CAP),
            "EXECUTOR_RESULT_CAP": str(RESULT_CAP),
        }
        if self.upstream is not None:
            env["EXECUTOR_CDP_SOCKET"] = f"{JAIL_DIR}/{SOCKET_NAME}"
            env["EXECUTOR_CDP_PORT"] = str(self.upstream.port)
            env["EXECUTOR_CDP_PATH"] = self.upstream.path
        return env

    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # The CDP relay ---------------------------------------------------------------------------------------

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection of the process to the session's CDP proxy, byte for byte."""
        self._links.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(self.upstream.host, self.upstream.port)
        except OSError:
            self._links.discard(writer)
            writer.close()
            return
        self._links.add(up_writer)

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        try:
            await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        finally:
            for each in (writer, up_writer):
                self._links.discard(each)
                each.close()

    def drop_browser(self) -> None:
        """Cut every connection of the process to the browser (code abandoned by a timeout keeps running
        in it, but cannot drive the browser any more)."""
        for writer in list(self._links):
            with contextlib.suppress(Exception):
                writer.transport.abort()
        self._links.clear()

    # Messages --------------------------------------------------------------------------------------------

    def _expect(self, key) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        return future

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                op = message.get("op")
                key = ("result", message.get("id")) if op == "result" else op
                future = self._pending.pop(key, None)
                if future is not None and not future.done():
                    future.set_result(message)
        except (OSError, ValueError, asyncio.LimitOverrunError):
            pass
        # The process ended (or broke the protocol): it is not used again. One that is ending is given a
        # moment to, so that its own exit code is what the call's error tells.
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.process.wait()), ALIVE_SECONDS)
            self._kill()
        code = await self.process.wait() if self.process is not None else None
        why = RunnerError(self._ended(code), exited=True)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(why)
        self._pending.clear()

    async def _read_stderr(self) -> None:
        with contextlib.suppress(OSError):
            while chunk := await self.process.stderr.read(4096):
                self._stderr += chunk
                del self._stderr[:-STDERR_TAIL]

    def _ended(self, code: int | None) -> str:
        tail = self._stderr.decode(errors="replace").strip().splitlines()[-3:]
        how = f"exit code {code}" if code is not None and code >= 0 else f"signal {-(code or 0)}"
        return f"the executor's Node.js process ended ({how})" + (f": {' '.join(tail)[:500]}" if tail else "")

    def _why(self, exc: BaseException) -> str:
        if isinstance(exc, RunnerError):
            return str(exc)
        return self._ended(self.process.returncode if self.process else None)

    def _send(self, message: dict) -> None:
        if self._control is None or self._control.is_closing():
            raise RunnerError("the executor's Node.js process has ended", exited=True)
        self._control.write((json.dumps(message) + "\n").encode())

    def submit(self, message: dict) -> tuple[int, asyncio.Future]:
        """Send a call (``run`` or ``repl``); its answer comes in the returned future (``RunnerError``
        with ``exited`` when the process ends first)."""
        self._next += 1
        future = self._expect(("result", self._next))
        self._send({**message, "id": self._next})
        return self._next, future

    async def abandon(self, call_id: int) -> dict | None:
        """A call ran out of time: cut the browser connections, and ask what it printed. None (and the
        process killed) when its event loop does not answer: blocked."""
        self._pending.pop(("result", call_id), None)
        self.drop_browser()
        try:
            alive = self._expect("alive")
            self._send({"op": "abandon", "id": call_id})
            return await asyncio.wait_for(alive, ALIVE_SECONDS)
        except (TimeoutError, RunnerError):
            await self.stop()
            return None

    async def close_tab(self, target_id: str) -> None:
        """Ask the process to close a tab (a named executor's, on delete); best effort."""
        with contextlib.suppress(TimeoutError, RunnerError):
            closed = self._expect("closed")
            self._send({"op": "close_tab", "target_id": target_id})
            await asyncio.wait_for(closed, ALIVE_SECONDS * 2)

    # Stopping --------------------------------------------------------------------------------------------

    def _kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    async def stop(self) -> None:
        """Kill the process (its calls fail) and remove its folder."""
        self._kill()
        self.drop_browser()
        if self._control is not None:
            self._control.close()
        if self.process is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.process.wait(), 5)
        if self._server is not None:
            self._server.close()
        why = RunnerError("the executor was stopped", exited=True)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(why)
        self._pending.clear()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
