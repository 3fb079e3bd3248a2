"""Profiles: saved browser state that sessions and pools load (notes §8).

Downloads stream (``download_profile``): a profile archive is never held in memory by the console.
The console asks for ``format=tar`` by default; the service's stored default is ``tar.zst``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from console.service.contract import PROFILE_FORMATS
from console.service.http import Reply, Service, path_segment, request, stream_bytes
from console.service.pagination import Page, fetch_page
from console.service.records import Record

__all__ = [
    "Profile",
    "create_profile",
    "delete_profile",
    "download_profile",
    "get_profile",
    "list_profiles",
    "rename_profile",
]


class Profile(Record):
    id: str
    name: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    last_used_at: datetime | None = None

    @property
    def label(self) -> str:
        return self.name or self.id


def _path(id_or_name: str) -> str:
    return f"/profiles/{path_segment(id_or_name)}"


async def list_profiles(
    svc: Service, *, limit: int = 20, offset: int = 0, name: str | None = None, query: str | None = None
) -> Page[Profile]:
    """``query`` matches a substring of the name or the id."""
    params = {"name": name or None, "query": query or None}
    return await fetch_page(svc, "/profiles", Profile, limit=limit, offset=offset, params=params)


async def get_profile(svc: Service, id_or_name: str) -> Profile:
    return Profile.from_json((await request(svc, "GET", _path(id_or_name))).data)


async def create_profile(svc: Service, name: str | None = None) -> Profile:
    """409 when the name is taken in the project."""
    body = {"name": name} if name else {}
    return Profile.from_json((await request(svc, "POST", "/profiles", json=body)).data)


async def rename_profile(svc: Service, id_or_name: str, name: str) -> Profile:
    return Profile.from_json((await request(svc, "PATCH", _path(id_or_name), json={"name": name})).data)


async def delete_profile(svc: Service, id_or_name: str) -> None:
    await request(svc, "DELETE", _path(id_or_name), expect="none")


@asynccontextmanager
async def download_profile(
    svc: Service, id_or_name: str, *, format: str = "tar"
) -> AsyncIterator[tuple[Reply, AsyncIterator[bytes]]]:
    """``async with download_profile(svc, key) as (reply, chunks):`` the archive, streamed."""
    if format not in PROFILE_FORMATS:
        raise ValueError(f"format must be one of {', '.join(PROFILE_FORMATS)}")
    path = _path(id_or_name) + "/download"
    accept = {"Accept": "application/x-tar, application/zstd, application/octet-stream"}
    async with stream_bytes(svc, "GET", path, params={"format": format}, headers=accept) as pair:
        yield pair
