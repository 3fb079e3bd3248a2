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

__all__ = ["Chunk", "Entry", "EntryPage", "export", "export_chunk", "list_entries"]

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
    reply = await request(svc, "GET", "/audit-logs/export/chunk", params=params, expect="bytes")
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


async def export(svc: Service, *, start: datetime, end: datetime, **filters) -> AsyncIterator[Chunk]:
    """Every chunk of the window, in order; refuses a cursor the service gives twice (it would loop)."""
    seen: set[str] = set()
    cursor = None
    while True:
        chunk = await export_chunk(svc, start=start, end=end, cursor=cursor, **filters)
        yield chunk
        if not chunk.has_more:
            return
        if chunk.next_cursor in seen:
            raise errors.Unavailable(
                "the export repeated a cursor; stopped to avoid a loop", code="repeated_cursor"
            )
        seen.add(chunk.next_cursor)
        cursor = chunk.next_cursor
