"""One page of a list (STYLE habit 4), read from the ``X-Has-More`` / ``X-Next-Offset`` headers.

Stop rules (notes §0): no next page when ``X-Has-More`` is false, ``X-Next-Offset`` is absent, or
``X-Next-Offset`` is 0 (the API's "last page" sentinel). ``X-Next-Offset`` is the absolute start of
the next page (never add the page length to it). For telemetry it is an opaque cursor, which is why
``next_offset`` is kept as the string the service sent when it is not an integer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from console.service.http import LIST_MAX_ITEMS, Service, list_max_bytes, request
from console.service.records import Record

T = TypeVar("T", bound=Record)


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    has_more: bool
    next_offset: int | str | None
    limit: int | None
    offset: int | str | None

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def _parse_offset(value: str | None) -> int | str | None:
    if value is None or value.strip() == "":
        return None
    value = value.strip()
    try:
        return int(value)
    except ValueError:
        return value


def page_from_reply(items: list[T], headers: Mapping[str, str], *, limit: Any, offset: Any) -> Page[T]:
    has_more = headers.get("x-has-more", "").strip().lower() == "true"
    next_offset = _parse_offset(headers.get("x-next-offset"))
    if not has_more or next_offset is None or next_offset in (0, "0"):
        has_more, next_offset = False, None
    return Page(items=items, has_more=has_more, next_offset=next_offset, limit=limit, offset=offset)


async def fetch_page(
    svc: Service,
    path: str,
    record_cls: type[T],
    *,
    limit: int | None = None,
    offset: int | str | None = None,
    params: Mapping[str, Any] | None = None,
) -> Page[T]:
    """GET one page of ``path`` (a bare JSON array) as ``Page[record_cls]``.

    ``offset`` may be an int or an opaque cursor (telemetry); None values in ``params`` are dropped. A page is
    read within the list bound (``list_max_bytes()``) and refused when it holds more items than asked for
    (``LIST_MAX_ITEMS`` when the call asks for the service's default).
    """
    query = {**(params or {}), "limit": limit, "offset": offset}
    most = limit or LIST_MAX_ITEMS
    reply = await request(svc, "GET", path, params=query, max_bytes=list_max_bytes(), max_items=most)
    items = record_cls.list_from_json(reply.data, max_items=most)
    return page_from_reply(items, reply.headers, limit=limit, offset=offset)


@dataclass(frozen=True)
class Walk(Generic[T]):
    """Every item of a bounded walk over a list's pages; ``complete`` is False when the walk stopped at its
    page bound while the service still said "more" (then the items are the first ones only)."""

    items: list[T]
    complete: bool


async def walk(
    svc: Service,
    path: str,
    record_cls: type[T],
    *,
    limit: int = 100,
    max_pages: int = 10,
    params: Mapping[str, Any] | None = None,
) -> Walk[T]:
    """The items of at most ``max_pages`` pages: for a total a page cannot give (pooled capacity, active
    sessions), at a bounded cost whatever the service says ("more" forever costs ``max_pages`` requests)."""
    items: list[T] = []
    offset: int | str | None = None
    seen: set[Any] = set()
    for _ in range(max_pages):
        page = await fetch_page(svc, path, record_cls, limit=limit, offset=offset, params=params)
        items += page.items
        if not page.has_more or page.next_offset in seen:
            return Walk(items=items, complete=True)
        seen.add(page.next_offset)
        offset = page.next_offset
    return Walk(items=items, complete=False)


async def iter_all(
    svc: Service,
    path: str,
    record_cls: type[T],
    *,
    limit: int = 100,
    offset: int | str | None = None,
    params: Mapping[str, Any] | None = None,
    max_pages: int = 10_000,
) -> AsyncIterator[T]:
    """Every item of every page, for exports only; pages and views use ``fetch_page``."""
    seen: set[Any] = set()
    for _ in range(max_pages):
        page = await fetch_page(svc, path, record_cls, limit=limit, offset=offset, params=params)
        for item in page.items:
            yield item
        if not page.has_more or page.next_offset in seen:
            return
        seen.add(page.next_offset)
        offset = page.next_offset
