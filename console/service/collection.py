"""One collection of the service (``/profiles``, ``/proxies``, ``/org/api_keys``…) and the calls every
resource module makes on it: a page of the list, one record, create, change, delete.

A resource module declares its collection once (path, record, list filters) and keeps its own functions
only where its resource differs (a create body, a rename, an action such as ``/check``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from console.service.http import Service, list_max_bytes, path_segment, request
from console.service.pagination import Page, fetch_page
from console.service.records import Record

T = TypeVar("T", bound=Record)


class Collection(Generic[T]):
    """``path`` is the collection's URL path; ``filters`` are the query parameters its list takes, each an
    optional string that is left out when empty."""

    def __init__(self, path: str, record: type[T], *, filters: tuple[str, ...] = ("query",)) -> None:
        self.path = path
        self.record = record
        self.filters = filters

    def at(self, key: str, tail: str = "") -> str:
        """The path of one member (by id, or by name where the service accepts one), plus ``tail``."""
        return f"{self.path}/{path_segment(key)}{tail}"

    async def list(
        self, svc: Service, *, limit: int = 20, offset: int | str | None = 0, **filters: str | None
    ) -> Page[T]:
        """One page of the list; a filter the collection does not take is a TypeError (a wrong keyword)."""
        unknown = sorted(set(filters) - set(self.filters))
        if unknown:
            raise TypeError(f"{self.path} has no filter {', '.join(unknown)}")
        params = {name: value or None for name, value in filters.items()}
        return await fetch_page(svc, self.path, self.record, limit=limit, offset=offset, params=params)

    async def call(self, svc: Service, method: str, path: str, **kw: Any) -> T:
        """Any call on the collection that answers with one of its records."""
        return await fetch_one(svc, self.record, method, path, **kw)

    async def get(self, svc: Service, key: str) -> T:
        return await self.call(svc, "GET", self.at(key))

    async def create(self, svc: Service, body: Mapping[str, Any]) -> T:
        return await self.call(svc, "POST", self.path, json=body)

    async def update(self, svc: Service, key: str, body: Mapping[str, Any]) -> T:
        return await self.call(svc, "PATCH", self.at(key), json=body)

    async def delete(self, svc: Service, key: str) -> None:
        await request(svc, "DELETE", self.at(key), expect="none")


R = TypeVar("R", bound=Record)


def browser_path(session_id: str, *tail: str) -> str:
    """The path of a browser session, ``/browsers/{id}``, and of what is below it: ``browser_path(id,
    "telemetry", "events")`` is ``/browsers/{id}/telemetry/events`` (the parts of ``tail``, joined by
    ``/``, are escaped already)."""
    return "/".join(("/browsers", path_segment(session_id), *tail))


class BrowserPart:
    """One part of every browser session (``/browsers/{id}/fs``, ``…/process``): the paths of its calls."""

    def __init__(self, name: str) -> None:
        self.name = name

    def at(self, session_id: str, *tail: str) -> str:
        return browser_path(session_id, self.name, *tail)


async def fetch_one(svc: Service, record: type[R], method: str, path: str, **kw: Any) -> R:
    """A call that answers with one record (of the collection's kind or another: a probe's result, a
    created key)."""
    return record.from_json((await request(svc, method, path, **kw)).data)


async def fetch_list(
    svc: Service, record: type[R], path: str, *, key: str | None = None, **kw: Any
) -> list[R]:
    """A list the service does not paginate, read within the list bounds: the answer itself (an answer that
    is no list is an empty one), or the ``key`` member of an object."""
    data = (await request(svc, "GET", path, max_bytes=list_max_bytes(), **kw)).data
    if key is None:
        items = data if isinstance(data, list) else None
    else:
        items = data.get(key) if isinstance(data, dict) else None
    return record.list_from_json(items)


def given(**fields: Any) -> dict[str, Any]:
    """The fields that are not None: the body of a change where only what is given changes."""
    return {name: value for name, value in fields.items() if value is not None}


def filled(**fields: Any) -> dict[str, Any]:
    """The fields that are not empty: optional parts of a body, left out so the service applies its
    default."""
    return {name: value for name, value in fields.items() if value}
