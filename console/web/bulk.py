"""Bulk actions on rows of a list (delete sessions, release leased browsers).

One shape for all of them: the list's row checkboxes POST the chosen ids; the answer is a confirmation that
lists what will happen to each (ids the organization cannot see are named and skipped, nothing is sent for
them); confirming POSTs again, and the answer reports each row's outcome. Each row is its own service call in
its own ``audited()`` block, so one failure (a session already gone) never stops the others.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

# More than a page of the largest list the console shows would not have come from a page.
MAX_IDS = 100
# Service ids are short tokens; anything else is not sent (a name would match by name upstream).
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
# At most this many calls at once: the service's rate limits are per key, shared by the whole org.
CONCURRENCY = 4

OK, SKIPPED, FAILED = "ok", "skipped", "failed"


@dataclass
class Row:
    """One chosen id and what became of it (before confirmation ``state`` is "" for the ones to do)."""

    id: str
    label: str = ""
    state: str = ""
    message: str = ""
    record: Any = field(default=None, repr=False)

    @property
    def todo(self) -> bool:
        return self.state == ""


@dataclass
class Selection:
    rows: list[Row]
    error: str = ""

    @property
    def todo(self) -> list[Row]:
        return [r for r in self.rows if r.todo]

    @property
    def skipped(self) -> list[Row]:
        return [r for r in self.rows if r.state == SKIPPED]

    @property
    def done(self) -> list[Row]:
        return [r for r in self.rows if r.state == OK]

    @property
    def failed(self) -> list[Row]:
        return [r for r in self.rows if r.state == FAILED]

    @property
    def done_ids(self) -> str:
        """For the page's script: the rows whose checkboxes to untick."""
        return " ".join(r.id for r in self.done)


def chosen(values: Iterable[str], noun: str) -> Selection:
    """The ids a form sent, once each in their order; malformed ones are kept as skipped rows (never sent)."""
    rows: list[Row] = []
    seen: set[str] = set()
    for raw in values:
        value = (raw or "").strip()
        if not value or value in seen:
            continue
        seen.add(value)
        if ID.fullmatch(value):
            rows.append(Row(id=value))
        else:
            rows.append(Row(id=value[:60], state=SKIPPED, message=f"Not a {noun} id: nothing was sent."))
    if not rows:
        return Selection(rows=[], error=f"Select at least one {noun}.")
    if len(rows) > MAX_IDS:
        return Selection(rows=[], error=f"Select at most {MAX_IDS} {noun}s at once.")
    return Selection(rows=rows)


async def each(rows: list[Row], call: Callable[[Row], Awaitable[None]]) -> None:
    """``call`` for every row, a few at a time; it fills in the row's state itself."""
    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(row: Row) -> None:
        async with limit:
            await call(row)

    await asyncio.gather(*(one(row) for row in rows))


def is_confirmed(request) -> bool:
    return request.POST.get("confirm") == "yes"
