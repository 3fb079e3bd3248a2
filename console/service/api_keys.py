"""API keys of the organization (``/org/api_keys``; docs/service-changes.md §11).

The plaintext of a key exists in exactly one response: the one that creates (or rotates) it. It is a
``CreatedAPIKey.key``, kept out of ``repr``; the console shows it once and never stores it.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from console.service.collection import Collection, given
from console.service.http import Service, request
from console.service.pagination import Page
from console.service.records import Named

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


class APIKey(Named):
    masked_key: str | None = None
    created_at: datetime | None = None
    created_by: dict[str, Any] | None = None
    expires_at: datetime | None = None
    deleted_at: datetime | None = None
    project_id: str | None = None  # None: org-wide
    project_name: str | None = None
    policy: dict[str, Any] | None = None

    @property
    def creator(self) -> str:
        by = self.created_by or {}
        return str(by.get("name") or by.get("email") or by.get("id") or "")


class CreatedAPIKey(APIKey):
    """A key as created or rotated: ``key`` is its plaintext, returned this once."""

    key: str | None = dataclasses.field(default=None, repr=False)


API_KEYS = Collection("/org/api_keys", APIKey, filters=("status", "query", "sort_by", "sort_direction"))


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
    return await API_KEYS.list(
        svc,
        limit=limit,
        offset=offset,
        status=status,
        query=query,
        sort_by=sort_by,
        sort_direction=sort_direction,
    )


async def get_api_key(svc: Service, key_id: str, *, include_deleted: bool = False) -> APIKey:
    params = {"include_deleted": True} if include_deleted else None
    return await API_KEYS.call(svc, "GET", API_KEYS.at(key_id), params=params)


async def create_api_key(
    svc: Service, *, name: str, days_to_expire: int | None = None, project_id: str | None = None
) -> CreatedAPIKey:
    """``project_id`` None makes an org-wide key; ``days_to_expire`` None one that never expires."""
    body = {"name": name, "days_to_expire": days_to_expire, "project_id": project_id or None}
    return CreatedAPIKey.from_json((await request(svc, "POST", API_KEYS.path, json=body)).data)


async def rename_api_key(svc: Service, key_id: str, name: str) -> APIKey:
    return await API_KEYS.update(svc, key_id, {"name": name})


async def rotate_api_key(
    svc: Service, key_id: str, *, days_to_expire: int | None = None, expire_in_days: int | None = None
) -> CreatedAPIKey:
    """A new key with the same name and project; the old one expires after ``expire_in_days`` (default 7)."""
    body = given(days_to_expire=days_to_expire, expire_in_days=expire_in_days)
    return CreatedAPIKey.from_json(
        (await request(svc, "POST", API_KEYS.at(key_id, "/rotate"), json=body)).data
    )


async def delete_api_key(svc: Service, key_id: str) -> None:
    """Soft delete; the service refuses (409) a key deleting itself."""
    await API_KEYS.delete(svc, key_id)
