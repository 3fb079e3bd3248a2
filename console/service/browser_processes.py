"""Processes of a browser session (notes §5): one-shot exec, spawn, status, kill, stdin, resize, and the
output stream (``{stream, data_b64}`` chunks, then ``{event: "exit", exit_code}``; no ids, no resume)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from console.service.collection import BrowserPart
from console.service.http import Service, path_segment, request
from console.service.records import Count, Millis, Record, Text
from console.service.sse import ServerEvent, events

__all__ = [
    "ExecResult",
    "Output",
    "ProcessStatus",
    "Spawned",
    "exec_command",
    "kill",
    "output_from_event",
    "resize",
    "spawn",
    "status",
    "stream",
    "stream_path",
    "write_stdin",
]


def _decode(data: str | None) -> bytes:
    if not data:
        return b""
    try:
        return base64.b64decode(data)
    except ValueError:
        return b""


class ExecResult(Record):
    exit_code: int | None = None
    stdout_b64: Text | None = None
    stderr_b64: Text | None = None
    duration_ms: Millis | None = None

    @property
    def stdout(self) -> bytes:
        return _decode(self.stdout_b64)

    @property
    def stderr(self) -> bytes:
        return _decode(self.stderr_b64)


class Spawned(Record):
    process_id: str | None = None
    pid: int | None = None
    started_at: datetime | None = None


class ProcessStatus(Record):
    state: str | None = None  # running | exited
    exit_code: int | None = None
    cpu_pct: float | None = None
    mem_bytes: Count | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"


class Output(Record):
    """One frame of the output stream: a chunk (``stream`` + ``data_b64``) or the exit event."""

    stream: str | None = None  # stdout | stderr
    data_b64: Text | None = None
    event: str | None = None  # exit
    exit_code: int | None = None

    @property
    def data(self) -> bytes:
        return _decode(self.data_b64)

    @property
    def is_exit(self) -> bool:
        return self.event == "exit"


PROCESS = BrowserPart("process")


def stream_path(session_id: str, process_id: str) -> str:
    return PROCESS.at(session_id, f"{path_segment(process_id)}/stdout/stream")


def _command(command: str, args: list[str] | None, **options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"command": command, "args": list(args or [])}
    body.update({key: value for key, value in options.items() if value is not None})
    return body


async def exec_command(
    svc: Service,
    session_id: str,
    command: str,
    args: list[str] | None = None,
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout_sec: float | None = None,
    as_user: str | None = None,
    as_root: bool | None = None,
) -> ExecResult:
    """Run a command and wait for it (POST exec)."""
    body = _command(
        command, args, cwd=cwd, env=env, timeout_sec=timeout_sec, as_user=as_user, as_root=as_root
    )
    wait = (timeout_sec or 30) + 15  # the read must outlast the command
    return ExecResult.from_json(
        (await request(svc, "POST", PROCESS.at(session_id, "exec"), json=body, timeout=wait)).data
    )


async def spawn(
    svc: Service,
    session_id: str,
    command: str,
    args: list[str] | None = None,
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout_sec: float | None = None,
    allocate_tty: bool | None = None,
    cols: int | None = None,
    rows: int | None = None,
) -> Spawned:
    """Start a command in the background (POST spawn); read its output with ``stream``."""
    body = _command(
        command,
        args,
        cwd=cwd,
        env=env,
        timeout_sec=timeout_sec,
        allocate_tty=allocate_tty,
        cols=cols,
        rows=rows,
    )
    return Spawned.from_json((await request(svc, "POST", PROCESS.at(session_id, "spawn"), json=body)).data)


async def status(svc: Service, session_id: str, process_id: str) -> ProcessStatus:
    path = PROCESS.at(session_id, f"{path_segment(process_id)}/status")
    return ProcessStatus.from_json((await request(svc, "GET", path)).data)


async def kill(svc: Service, session_id: str, process_id: str, signal: str = "TERM") -> None:
    path = PROCESS.at(session_id, f"{path_segment(process_id)}/kill")
    await request(svc, "POST", path, json={"signal": signal}, expect="none")


async def write_stdin(svc: Service, session_id: str, process_id: str, data: bytes) -> int | None:
    """Write bytes to the process's standard input; returns the bytes written (when the service says)."""
    path = PROCESS.at(session_id, f"{path_segment(process_id)}/stdin")
    reply = await request(svc, "POST", path, json={"data_b64": base64.b64encode(data).decode()})
    written = (reply.data or {}).get("written_bytes") if isinstance(reply.data, dict) else None
    return written if isinstance(written, int) else None


async def resize(svc: Service, session_id: str, process_id: str, *, cols: int, rows: int) -> None:
    path = PROCESS.at(session_id, f"{path_segment(process_id)}/resize")
    await request(svc, "POST", path, json={"cols": cols, "rows": rows}, expect="none")


def output_from_event(event: ServerEvent) -> Output | None:
    return Output.from_json(event.data) if isinstance(event.data, dict) else None


async def stream(svc: Service, session_id: str, process_id: str) -> AsyncIterator[Output]:
    """The output of one connection, ending after the exit event (``StreamDropped`` on a drop)."""
    async for event in events(svc, stream_path(session_id, process_id)):
        output = output_from_event(event)
        if output is None:
            continue
        yield output
        if output.is_exit:
            return
