"""Playwright code run next to a session's browser (SDK 0.131 ``browsers.playwright``; docs/sandbox.md):
``execute`` in an executor (``default``, or a named one with its own tab), the executors, and deleting one
(a named one goes, the default restarts: either way a call running on it fails at once).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from console.service.collection import BrowserPart
from console.service.http import Service, path_segment, request
from console.service.records import Record, Text

__all__ = ["ExecuteResult", "Executor", "Tab", "delete_executor", "execute", "executors"]

DEFAULT_EXECUTOR = "default"
# How much longer than the code's own time the console waits for the answer (the service's own margin).
ANSWER_MARGIN = 30.0


class Tab(Record):
    created: bool | None = None
    target_id: str | None = None


class ExecuteResult(Record):
    success: bool = False
    result: Any = None
    error: Text | None = None
    stdout: Text | None = None
    stderr: Text | None = None
    tab: Tab | None = None
    returned: bool = False  # the code returned a value (``result`` may be null): set by ``execute``


class Executor(Record):
    name: str
    busy: bool | None = None
    created_at: datetime | None = None
    last_used_at: datetime | None = None
    target_id: str | None = None
    url: str | None = None


PLAYWRIGHT = BrowserPart("playwright")


async def execute(
    svc: Service, session_id: str, *, code: str, executor: str = DEFAULT_EXECUTOR, timeout_sec: int = 60
) -> ExecuteResult:
    body: dict[str, Any] = {"code": code, "timeout_sec": timeout_sec}
    if executor != DEFAULT_EXECUTOR:
        body["executor"] = executor
    path, wait = PLAYWRIGHT.at(session_id, "execute"), timeout_sec + ANSWER_MARGIN
    reply = await request(svc, "POST", path, json=body, retry=False, timeout=wait)
    data = reply.data if isinstance(reply.data, dict) else {}
    return dataclasses.replace(ExecuteResult.from_json(data), returned="result" in data)


async def executors(svc: Service, session_id: str) -> list[Executor]:
    reply = await request(svc, "GET", PLAYWRIGHT.at(session_id, "executors"))
    data = reply.data if isinstance(reply.data, dict) else {}
    return Executor.list_from_json(data.get("executors") or [])


async def delete_executor(svc: Service, session_id: str, name: str, *, close_tab: bool = True) -> None:
    await request(
        svc,
        "DELETE",
        PLAYWRIGHT.at(session_id, f"executors/{path_segment(name)}"),
        params={"close_tab": "true" if close_tab else "false"},
        expect="none",
    )
