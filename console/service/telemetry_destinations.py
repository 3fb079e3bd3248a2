"""Telemetry destinations: where sessions export telemetry over OTLP/HTTP (notes §6.6, SDK 0.131).

Header values (typically an ingest key) are write-only: they go out in create and update bodies and come
back as ``""``; a record only tells which header names are set.
"""

from __future__ import annotations

from datetime import datetime

from console.service.http import Service, path_segment, request
from console.service.pagination import Page, fetch_page
from console.service.records import Count, Record, Text

__all__ = [
    "Destination",
    "create_destination",
    "delete_destination",
    "get_destination",
    "list_destinations",
    "update_destination",
]


class Destination(Record):
    id: str
    name: str | None = None
    endpoint: str | None = None
    description: str | None = None
    headers: dict[str, str] | None = None  # values always "" (write-only)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    consecutive_failures: Count | None = None
    last_error: Text | None = None
    last_error_at: datetime | None = None
    last_export_at: datetime | None = None

    @property
    def label(self) -> str:
        return self.name or self.id

    @property
    def header_names(self) -> list[str]:
        return sorted(self.headers or {})


def _path(id_or_name: str) -> str:
    return f"/telemetry/destinations/{path_segment(id_or_name)}"


async def list_destinations(
    svc: Service, *, limit: int = 20, offset: int = 0, query: str | None = None
) -> Page[Destination]:
    params = {"query": query or None}
    return await fetch_page(
        svc, "/telemetry/destinations", Destination, limit=limit, offset=offset, params=params
    )


async def get_destination(svc: Service, id_or_name: str) -> Destination:
    return Destination.from_json((await request(svc, "GET", _path(id_or_name))).data)


async def create_destination(
    svc: Service,
    *,
    name: str,
    endpoint: str,
    description: str | None = None,
    headers: dict[str, str] | None = None,
) -> Destination:
    body = {"name": name, "endpoint": endpoint}
    if description:
        body["description"] = description
    if headers:
        body["headers"] = dict(headers)
    return Destination.from_json((await request(svc, "POST", "/telemetry/destinations", json=body)).data)


async def update_destination(
    svc: Service,
    id_or_name: str,
    *,
    name: str | None = None,
    endpoint: str | None = None,
    description: str | None = None,
    set_headers: dict[str, str] | None = None,
    remove_headers: list[str] | None = None,
) -> Destination:
    """Only what is given changes; headers merge (``remove_headers`` are sent as null)."""
    body: dict = {}
    if name is not None:
        body["name"] = name
    if endpoint is not None:
        body["endpoint"] = endpoint
    if description is not None:
        body["description"] = description
    headers = {**{h: None for h in remove_headers or []}, **(set_headers or {})}
    if headers:
        body["headers"] = headers
    return Destination.from_json((await request(svc, "PATCH", _path(id_or_name), json=body)).data)


async def delete_destination(svc: Service, id_or_name: str) -> None:
    """409 while a session exports to it."""
    await request(svc, "DELETE", _path(id_or_name), expect="none")
