"""Paging parameters of the console's own list URLs: read, bounded, never forwarded as typed.

The service accepts ``limit`` 1..100 and ``offset`` >= 0 (spec: Limits). A URL outside those bounds is
corrected, and the page says so, instead of sending the service a request it would refuse.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

MAX_LIMIT = 100


@dataclass(frozen=True)
class Paging:
    limit: int
    offset: int
    notice: str = ""

    def url(self, request, offset: int | str | None) -> str:
        """The current URL with another offset (other query parameters kept)."""
        params = request.GET.copy()
        # A list loaded after its page (console/web/deferred.py) links to the page, not to the part.
        params.pop("part", None)
        params["offset"] = str(offset or 0)
        params["limit"] = str(self.limit)
        return f"{request.path}?{urlencode(sorted(params.lists()), doseq=True)}"


def paging(request, default_limit: int = 20) -> Paging:
    notes = []
    limit = _int(request.GET.get("limit"), default_limit)
    if limit is None:
        notes.append(f"“limit” must be a number; showing {default_limit} per page.")
        limit = default_limit
    elif not 1 <= limit <= MAX_LIMIT:
        fixed = min(max(limit, 1), MAX_LIMIT)
        notes.append(f"“limit” must be between 1 and {MAX_LIMIT}; showing {fixed} per page.")
        limit = fixed
    offset = _int(request.GET.get("offset"), 0)
    if offset is None or offset < 0:
        notes.append("“offset” must be 0 or more; showing the first page.")
        offset = 0
    return Paging(limit=limit, offset=offset, notice=" ".join(notes))


def _int(raw: str | None, default: int) -> int | None:
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        return None


def pager(request, paging: Paging, page) -> dict:
    """Template context for ``web/pager.html``: previous/next links and the range shown."""
    count = len(page.items)
    prev_offset = max(paging.offset - paging.limit, 0) if paging.offset > 0 else None
    return {
        "paging": paging,
        "first": paging.offset + 1 if count else 0,
        "last": paging.offset + count,
        "prev_url": paging.url(request, prev_offset) if prev_offset is not None else "",
        "next_url": paging.url(request, page.next_offset) if page.has_more else "",
    }
