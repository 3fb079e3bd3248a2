"""Telemetry destinations: where sessions export telemetry over OTLP/HTTP (notes §6.6, SDK 0.131).

Header values (typically an ingest key) are write-only: they go out in create and update bodies and come
back as ``""``; a record only tells which header names are set.
"""

from __future__ import annotations

from datetime import datetime

from console.service.collection import Collection, given
from console.service.http import Service
from console.service.records import Count, Named, Text

__all__ = [
    "Destination",
    "create_destination",
    "delete_destination",
    "get_destination",
    "list_destinations",
    "update_destination",
]


class Destination(Named):
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
    def header_names(self) -> list[str]:
        return sorted(self.headers or {})


DESTINATIONS = Collection("/telemetry/destinations", Destination)
list_destinations = DESTINATIONS.list
get_destination = DESTINATIONS.get


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
    return await DESTINATIONS.create(svc, body)


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
    body = given(name=name, endpoint=endpoint, description=description)
    headers = {**{h: None for h in remove_headers or []}, **(set_headers or {})}
    if headers:
        body["headers"] = headers
    return await DESTINATIONS.update(svc, id_or_name, body)


async def delete_destination(svc: Service, id_or_name: str) -> None:
    """409 while a session exports to it."""
    await DESTINATIONS.delete(svc, id_or_name)
