"""Operator tools of a running session (docs/service-changes.md §2, §4): an HTTP request made through the
session's browser (its cookies, proxy and TLS fingerprint), extensions loaded into it (Chromium restarts),
and the paths of its log streams.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

from console.service.collection import browser_path
from console.service.http import Service, request
from console.service.records import Millis, Record, Text
from console.service.uploads import upload_indexed

__all__ = ["CurlResult", "curl", "load_extensions", "logs_stream_path"]


class CurlResult(Record):
    status: int | None = None
    headers: dict[str, list[str]] | None = None
    body: Text | None = None  # the page's body, whatever its size (within the answer's bound)
    duration_ms: Millis | None = None


async def curl(
    svc: Service,
    session_id: str,
    *,
    url: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: str | None = None,
    response_encoding: str = "utf8",
    timeout_ms: int | None = None,
) -> CurlResult:
    payload: dict[str, Any] = {"url": url, "method": method, "response_encoding": response_encoding}
    if headers:
        payload["headers"] = dict(headers)
    if body is not None:
        payload["body"] = body
    if timeout_ms is not None:
        payload["timeout_ms"] = timeout_ms
    return CurlResult.from_json(
        (await request(svc, "POST", browser_path(session_id, "curl"), json=payload)).data
    )


async def load_extensions(
    svc: Service, session_id: str, extensions: Iterable[tuple[str, str, IO[bytes]]]
) -> None:
    """Load ``(name, filename, zip file)`` items; each goes to ``/home/kernel/extensions/<name>``."""
    parts = ("extensions[{i}][name]", "extensions[{i}][zip_file]")
    await upload_indexed(svc, browser_path(session_id, "extensions"), extensions, parts, "application/zip")


def logs_stream_path(session_id: str) -> str:
    """``GET`` with ``source=supervisor&supervisor_process=…`` or ``source=path&path=…``, ``follow``."""
    return browser_path(session_id, "logs/stream")
