"""Profiles: saved browser state that sessions and pools load (notes §8).

Downloads stream (``download_profile``): a profile archive is never held in memory by the console.
The console asks for ``format=tar`` by default; the service's stored default is ``tar.zst``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from console.service.collection import Collection
from console.service.contract import PROFILE_FORMATS
from console.service.http import Reply, Service, stream_bytes
from console.service.records import Named

__all__ = [
    "Profile",
    "create_profile",
    "delete_profile",
    "download_profile",
    "get_profile",
    "list_profiles",
    "rename_profile",
]


class Profile(Named):
    created_at: datetime | None = None
    updated_at: datetime | None = None
    last_used_at: datetime | None = None


# ``query`` matches a substring of the name or the id.
PROFILES = Collection("/profiles", Profile, filters=("name", "query"))
list_profiles = PROFILES.list
get_profile = PROFILES.get
delete_profile = PROFILES.delete


async def create_profile(svc: Service, name: str | None = None) -> Profile:
    """409 when the name is taken in the project."""
    return await PROFILES.create(svc, {"name": name} if name else {})


async def rename_profile(svc: Service, id_or_name: str, name: str) -> Profile:
    return await PROFILES.update(svc, id_or_name, {"name": name})


@asynccontextmanager
async def download_profile(
    svc: Service, id_or_name: str, *, format: str = "tar"
) -> AsyncIterator[tuple[Reply, AsyncIterator[bytes]]]:
    """``async with download_profile(svc, key) as (reply, chunks):`` the archive, streamed."""
    if format not in PROFILE_FORMATS:
        raise ValueError(f"format must be one of {', '.join(PROFILE_FORMATS)}")
    path = PROFILES.at(id_or_name, "/download")
    accept = {"Accept": "application/x-tar, application/zstd, application/octet-stream"}
    async with stream_bytes(svc, "GET", path, params={"format": format}, headers=accept) as pair:
        yield pair
