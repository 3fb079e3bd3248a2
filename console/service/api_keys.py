"""API keys of the organization (``/org/api_keys``; docs/service-changes.md §11).

The plaintext of a key exists in exactly one response: the one that creates (or rotates) it. It is a
``CreatedAPIKey.key``, kept out of ``repr``; the console shows it once and never stores it.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from console.service.http import Service, path_segment, request
from console.service.pagination import Page, fetch_page
from console.service.records import Record

__all__ = [
    "APIKey",
    "CreatedAPIKey",
    "create_api_key",
    "delete_api_key",
    "get_api_key",
    "list_api_keys",
    "rename_api_key",
    "rotate_api_key",
]

MAX_DAYS = 3650


class APIKey(Record):
    id: str
    name: str | None = None
    masked_key: str | None = None
    created_at: datetime | None = None
    created_by: dict[str, Any] | None = None
    expires_at: datetime | None = None
    deleted_at: datetime | None = None
    project_id: str | None = None  # None: org-wide
    project_name: str | None = None
    policy: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        return self.name or self.id

    @property
    def creator(self) -> str:
        by = self.created_by or {}
        return str(by.get("name") or by.get("email") or by.get("id") or "")


class CreatedAPIKey(APIKey):
    """A key as created or rotated: ``key`` is its plaintext, returned this once."""

    key: str | None = dataclasses.field(default=None, repr=False)


def _path(key_id: str) -> str:
    return f"/org/api_keys/{path_segment(key_id)}"


async def list_api_keys(
    svc: Service,
    *,
    limit: int = 20,
    offset: int = 0,
    status: str = "active",
    query: str | None = None,
    sort_by: str = "created_at",
    sort_direction: str = "desc",
) -> Page[APIKey]:
    params = {"status": status, "query": query or None, "sort_by": sort_by, "sort_direction": sort_direction}
    return await fetch_page(svc, "/org/api_keys", APIKey, limit=limit, offset=offset, params=params)


async def get_api_key(svc: Service, key_id: str, *, include_deleted: bool = False) -> APIKey:
    params = {"include_deleted": True} if include_deleted else None
    return APIKey.from_json((await request(svc, "GET", _path(key_id), params=params)).data)


async def create_api_key(
    svc: Service, *, name: str, days_to_expire: int | None = None, project_id: str | None = None
) -> CreatedAPIKey:
    """``project_id`` None makes an org-wide key; ``days_to_expire`` None one that never expires."""
    body = {"name": name, "days_to_expire": days_to_expire, "project_id": project_id or None}
    return CreatedAPIKey.from_json((await request(svc, "POST", "/org/api_keys", json=body)).data)


async def rename_api_key(svc: Service, key_id: str, name: str) -> APIKey:
    return APIKey.from_json((await request(svc, "PATCH", _path(key_id), json={"name": name})).data)


async def rotate_api_key(
    svc: Service, key_id: str, *, days_to_expire: int | None = None, expire_in_days: int | None = None
) -> CreatedAPIKey:
    """A new key with the same name and project; the old one expires after ``expire_in_days`` (default 7)."""
    body = {"days_to_expire": days_to_expire, "expire_in_days": expire_in_days}
    body = {k: v for k, v in body.items() if v is not None}
    return CreatedAPIKey.from_json((await request(svc, "POST", _path(key_id) + "/rotate", json=body)).data)


async def delete_api_key(svc: Service, key_id: str) -> None:
    """Soft delete; the service refuses (409) a key deleting itself."""
    await request(svc, "DELETE", _path(key_id), expect="none")
