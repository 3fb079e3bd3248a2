"""The service's own audit log (``/audit-logs``; notes §0, §15, SDK 0.131): who did what through the
service, paged by token; and its export in chunks (cursor, row count and sha256 per chunk).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console.service import errors
from console.service.http import Service, list_max_bytes, request
from console.service.records import Millis, Record

__all__ = ["Chunk", "Entry", "EntryPage", "cap_reached", "export", "export_chunk", "list_entries"]

MAX_WINDOW_DAYS = 30


class Entry(Record):
    timestamp: datetime | None = None
    method: str | None = None
    path: str | None = None
    route: str | None = None
    status: int | None = None
    duration_ms: Millis | None = None
    client_ip: str | None = None
    domain: str | None = None
    user_agent: str | None = None
    user_id: str | None = None
    email: str | None = None
    auth_strategy: str | None = None

    @property
    def who(self) -> str:
        return self.email or self.user_id or ""


@dataclass(frozen=True)
class EntryPage:
    items: list[Entry]
    has_more: bool
    next_token: str | None


@dataclass(frozen=True)
class Chunk:
    content: bytes
    row_count: int
    has_more: bool
    next_cursor: str | None
    # Set on the last item ``export`` yields when it stopped before the service's end: why (no content).
    stopped: str | None = None


# What one chunk may be: 1000 rows of 16 KiB each (a row is a few hundred bytes).
CHUNK_MAX_BYTES = 16 * 1024 * 1024


def _params(start: datetime, end: datetime, filters: dict[str, Any]) -> dict[str, Any]:
    params = {"start": start.isoformat(), "end": end.isoformat()}
    for key, value in filters.items():
        if value not in (None, "", [], ()):
            params[key] = list(value) if isinstance(value, Sequence) and not isinstance(value, str) else value
    return params


async def list_entries(
    svc: Service, *, start: datetime, end: datetime, limit: int = 50, page_token: str | None = None, **filters
) -> EntryPage:
    """One page, newest first. ``filters``: method, exclude_method, auth_strategy, service, search,
    search_user_id (the service's names)."""
    params = {**_params(start, end, filters), "limit": limit, "page_token": page_token or None}
    reply = await request(
        svc, "GET", "/audit-logs", params=params, max_bytes=list_max_bytes(), max_items=limit
    )
    has_more = reply.headers.get("x-has-more", "").lower() == "true"
    token = reply.headers.get("x-next-page-token") or None
    return EntryPage(
        Entry.list_from_json(reply.data, max_items=limit),
        has_more and token is not None,
        token if has_more else None,
    )


async def export_chunk(
    svc: Service, *, start: datetime, end: datetime, cursor: str | None = None, limit: int = 1000, **filters
) -> Chunk:
    """One chunk of JSON lines, checked against its ``X-Content-Sha256``."""
    params = {**_params(start, end, filters), "cursor": cursor or None, "limit": limit, "format": "jsonl"}
    reply = await request(
        svc, "GET", "/audit-logs/export/chunk", params=params, expect="bytes", max_bytes=CHUNK_MAX_BYTES
    )
    digest = reply.headers.get("x-content-sha256") or ""
    # A chunk without its checksum cannot be trusted either (the SDK's downloader refuses it too).
    if hashlib.sha256(reply.content).hexdigest() != digest.lower():
        raise errors.Unavailable(
            "an export chunk arrived damaged (its sha256 does not match)", code="bad_checksum"
        )
    has_more = reply.headers.get("x-has-more", "").lower() == "true"
    next_cursor = reply.headers.get("x-next-cursor") or None
    rows = (reply.headers.get("x-row-count") or "0").strip()
    if not (rows.isascii() and rows.isdigit() and len(rows) <= 15):
        raise errors.BadResponse(
            f"the export chunk's row count is not a number ({rows[:20]!r})",
            status=reply.status,
            request_id=reply.request_id,
        )
    return Chunk(reply.content, int(rows), has_more and bool(next_cursor), next_cursor)


def cap_reached(chunks: int, size: int, *, max_chunks: int, max_bytes: int) -> str | None:
    """Why an export that has read ``chunks`` chunks of ``size`` bytes in all stops there, or None."""
    if size > max_bytes:
        amount = f"{max_bytes >> 20} MiB" if max_bytes >= 1 << 20 else f"{max_bytes} bytes"
        return (
            f"the service still had more after {amount}, the most the console reads in one export; narrow "
            "the window to export the rest"
        )
    if chunks >= max_chunks:
        return (
            f"the service still had more after {chunks} chunks, the most the console reads in one export; "
            "narrow the window to export the rest"
        )
    return None


async def export(
    svc: Service, *, start: datetime, end: datetime, max_chunks: int, max_bytes: int, **filters
) -> AsyncIterator[Chunk]:
    """Every chunk of the window, in order, within ``max_chunks`` chunks and ``max_bytes`` bytes of rows.

    A service that always says "more" (or sends a cursor it gave before) would keep an export going for as
    long as it liked: past a bound, or at a repeated cursor, the last item is a ``Chunk`` whose ``stopped``
    says why (and holds no rows), and the export ends there. The cursors seen are kept as digests, so their
    set is as bounded as the chunks are."""
    seen: set[bytes] = set()
    cursor, chunks, size = None, 0, 0
    while True:
        chunk = await export_chunk(svc, start=start, end=end, cursor=cursor, **filters)
        chunks, size = chunks + 1, size + len(chunk.content)
        if size > max_bytes:  # this chunk would take the file past the bound: it is left out
            yield _stop(cap_reached(chunks, size, max_chunks=max_chunks, max_bytes=max_bytes))
            return
        yield chunk
        if not chunk.has_more:
            return
        digest = hashlib.sha256(chunk.next_cursor.encode()).digest()
        if digest in seen:
            yield _stop("the service gave a cursor it had given before; stopped to avoid a loop")
            return
        reason = cap_reached(chunks, size, max_chunks=max_chunks, max_bytes=max_bytes)
        if reason:
            yield _stop(reason)
            return
        seen.add(digest)
        cursor = chunk.next_cursor


def _stop(reason: str | None) -> Chunk:
    return Chunk(b"", 0, True, None, stopped=reason)
