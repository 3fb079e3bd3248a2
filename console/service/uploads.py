"""Streamed multipart uploads.

httpx's ``files=`` with an open binary file object streams it: the multipart body is produced in
64 KiB ``file.read()`` chunks (``httpx._multipart.FileField.render_data``), seeking to 0 first, and its
length comes from the file size, so a large zip is never held in memory. ``upload_file`` opens a path
(or takes a file object) and sends it that way. For a source that is an async iterator of bytes (for
example a Django upload being relayed), ``multipart_body`` builds the multipart body as an async
generator passed as ``content=`` (sent chunked, never retried).
"""

from __future__ import annotations

import mimetypes
import os
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from console.service.http import Reply, Service, request

FileSource = str | os.PathLike[str] | IO[bytes] | AsyncIterable[bytes]


async def upload_file(
    svc: Service,
    path: str,
    *,
    field: str,
    source: FileSource,
    filename: str | None = None,
    content_type: str | None = None,
    data: Mapping[str, str] | None = None,
    method: str = "POST",
    expect: Any = "json",
    timeout: float | None = None,
) -> Reply:
    """Send ``source`` as the file part ``field`` of a multipart/form-data request to ``path``.

    Non-file parts (``data``) come first, then the file part (notes §0).
    """
    if isinstance(source, str | os.PathLike):
        file_path = Path(source)
        name = filename or file_path.name
        ctype = content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
        # Opening a local file is quick; its reads happen in 64 KiB chunks while sending.
        with file_path.open("rb") as fh:  # noqa: ASYNC230
            return await request(
                svc, method, path, data=data, files={field: (name, fh, ctype)}, expect=expect, timeout=timeout
            )
    if hasattr(source, "read"):
        name = filename or Path(getattr(source, "name", "upload") or "upload").name
        ctype = content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
        return await request(
            svc, method, path, data=data, files={field: (name, source, ctype)}, expect=expect, timeout=timeout
        )
    name = filename or "upload"
    ctype = content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
    headers, body = multipart_body(field=field, filename=name, content_type=ctype, chunks=source, data=data)
    return await request(svc, method, path, content=body, headers=headers, expect=expect, timeout=timeout)


async def upload_indexed(
    svc: Service, path: str, items: Iterable[tuple[str, str, IO[bytes]]], parts: tuple[str, str], ctype: str
) -> None:
    """``(value, filename, file object)`` items in one multipart request, indexed as SDK 0.131 sends them
    (docs/service-changes.md §4): ``parts`` names the value's part and the file's, ``{i}`` standing for
    the item's index (``files[{i}][dest_path]``); the values come first, the files stream (as
    ``upload_file``'s)."""
    value_part, file_part = parts
    items = list(items)
    data = {value_part.format(i=i): value for i, (value, _, _) in enumerate(items)}
    files = [(file_part.format(i=i), (name, fh, ctype)) for i, (_, name, fh) in enumerate(items)]
    await request(svc, "POST", path, data=data, files=files, expect="none", timeout=300)


def multipart_body(
    *,
    field: str,
    filename: str,
    content_type: str,
    chunks: AsyncIterable[bytes],
    data: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], AsyncIterator[bytes]]:
    """Headers and an async body for a multipart request whose file part comes from ``chunks``."""
    boundary = uuid.uuid4().hex

    def part_head(name: str, extra: str = "") -> bytes:
        quoted = name.replace('"', "%22")
        return f'--{boundary}\r\nContent-Disposition: form-data; name="{quoted}"{extra}\r\n'.encode()

    async def body() -> AsyncIterator[bytes]:
        for key, value in (data or {}).items():
            yield part_head(key) + b"\r\n" + str(value).encode() + b"\r\n"
        fname = filename.replace('"', "%22")
        yield part_head(field, f'; filename="{fname}"') + f"Content-Type: {content_type}\r\n\r\n".encode()
        async for chunk in chunks:
            if chunk:
                yield chunk
        yield f"\r\n--{boundary}--\r\n".encode()

    return {"Content-Type": f"multipart/form-data; boundary={boundary}"}, body()
