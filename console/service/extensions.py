"""Extensions: upload a zipped unpacked extension, list, read metadata, download, delete (notes §12).

Uploads stream: a file object or a path is sent in 64 KiB chunks (``console.service.uploads``), so a
large archive is never held in memory. Downloads stream too (``download_extension``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from console.service.collection import Collection
from console.service.http import Reply, Service, stream_bytes
from console.service.records import Count, Named
from console.service.uploads import FileSource, upload_file

__all__ = [
    "Extension",
    "delete_extension",
    "download_extension",
    "get_extension",
    "list_extensions",
    "upload_extension",
]

# Sending a large archive takes longer than the default read timeout allows for the answer.
UPLOAD_TIMEOUT = 120.0


class Extension(Named):
    created_at: datetime | None = None
    size_bytes: Count | None = None
    checksum: str | None = None  # sha256 hex of the archive; absent for legacy extensions
    last_used_at: datetime | None = None


EXTENSIONS = Collection("/extensions", Extension, filters=("name", "query"))
list_extensions = EXTENSIONS.list
delete_extension = EXTENSIONS.delete


async def get_extension(svc: Service, id_or_name: str) -> Extension:
    return await EXTENSIONS.call(svc, "GET", EXTENSIONS.at(id_or_name, "/metadata"))


async def upload_extension(
    svc: Service, source: FileSource, *, name: str | None = None, filename: str | None = None
) -> Extension:
    """Multipart ``file`` (and ``name`` when given, sent first); 409 when the name is taken."""
    reply = await upload_file(
        svc,
        "/extensions",
        field="file",
        source=source,
        filename=filename,
        content_type="application/zip",
        data={"name": name} if name else None,
        timeout=UPLOAD_TIMEOUT,
    )
    return Extension.from_json(reply.data)


@asynccontextmanager
async def download_extension(
    svc: Service, id_or_name: str
) -> AsyncIterator[tuple[Reply, AsyncIterator[bytes]]]:
    """``async with download_extension(svc, key) as (reply, chunks):`` the zip, streamed."""
    accept = {"Accept": "application/zip"}
    async with stream_bytes(svc, "GET", EXTENSIONS.at(id_or_name), headers=accept) as pair:
        yield pair
