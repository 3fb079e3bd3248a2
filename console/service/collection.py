"""One collection of the service (``/profiles``, ``/proxies``, ``/org/api_keys``…) and the calls every
resource module makes on it: a page of the list, one record, create, change, delete.

A resource module declares its collection once (path, record, list filters) and keeps its own functions
only where its resource differs (a create body, a rename, an action such as ``/check``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from console.service.http import Service, path_segment, request
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
        return self.record.from_json((await request(svc, method, path, **kw)).data)

    async def get(self, svc: Service, key: str) -> T:
        return await self.call(svc, "GET", self.at(key))

    async def create(self, svc: Service, body: Mapping[str, Any]) -> T:
        return await self.call(svc, "POST", self.path, json=body)

    async def update(self, svc: Service, key: str, body: Mapping[str, Any]) -> T:
        return await self.call(svc, "PATCH", self.at(key), json=body)

    async def delete(self, svc: Service, key: str) -> None:
        await request(svc, "DELETE", self.at(key), expect="none")


def given(**fields: Any) -> dict[str, Any]:
    """The fields that are not None: the body of a change where only what is given changes."""
    return {name: value for name, value in fields.items() if value is not None}
