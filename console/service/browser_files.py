"""The filesystem of a browser session (notes §4). Paths are absolute paths of the session's VM.

Listing is one call (a bare array, not paginated). Reads and directory zips stream; uploads stream from
a file object. A watch (``POST watch``) streams ``{type, path, name?, is_dir?}`` events (no ids, no
resume) until it is deleted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import IO, Any

from console.service.collection import BrowserPart
from console.service.http import Reply, Service, list_max_bytes, path_segment, request, stream_bytes
from console.service.records import Count, Record
from console.service.sse import ServerEvent, events
from console.service.uploads import FileSource, upload_file, upload_indexed

__all__ = [
    "FileInfo",
    "WatchEvent",
    "create_directory",
    "delete_directory",
    "delete_file",
    "download_dir_zip",
    "file_info",
    "list_files",
    "move",
    "read_file",
    "set_permissions",
    "stop_watch",
    "upload",
    "upload_zip",
    "watch",
    "watch_event_from_event",
    "watch_events",
    "watch_events_path",
    "write_file",
]

# The most entries of one directory listing the console reads (a pane of more is of no use; the service's
# listing is not paginated, so a larger directory is refused rather than cut short without saying so).
LIST_MAX_ENTRIES = 10_000


class FileInfo(Record):
    name: str | None = None
    path: str | None = None
    is_dir: bool = False
    size_bytes: Count | None = None
    mode: str | None = None  # ls form, e.g. -rw-r--r--
    mod_time: datetime | None = None


class WatchEvent(Record):
    type: str | None = None  # CREATE | WRITE | DELETE | RENAME
    path: str | None = None
    name: str | None = None
    is_dir: bool | None = None


FS = BrowserPart("fs")


async def list_files(svc: Service, session_id: str, path: str) -> list[FileInfo]:
    """One directory (not paginated): read within the list bound, at most ``LIST_MAX_ENTRIES`` entries."""
    reply = await request(
        svc,
        "GET",
        FS.at(session_id, "list_files"),
        params={"path": path},
        max_bytes=list_max_bytes(),
        max_items=LIST_MAX_ENTRIES,
    )
    return FileInfo.list_from_json(reply.data, max_items=LIST_MAX_ENTRIES)


async def file_info(svc: Service, session_id: str, path: str) -> FileInfo:
    reply = await request(svc, "GET", FS.at(session_id, "file_info"), params={"path": path})
    return FileInfo.from_json(reply.data)


@asynccontextmanager
async def read_file(
    svc: Service, session_id: str, path: str
) -> AsyncIterator[tuple[Reply, AsyncIterator[bytes]]]:
    """``async with read_file(svc, sid, path) as (reply, chunks):`` the file's bytes, streamed."""
    headers = {"Accept": "application/octet-stream"}
    async with stream_bytes(
        svc, "GET", FS.at(session_id, "read_file"), params={"path": path}, headers=headers
    ) as pair:
        yield pair


@asynccontextmanager
async def download_dir_zip(
    svc: Service, session_id: str, path: str
) -> AsyncIterator[tuple[Reply, AsyncIterator[bytes]]]:
    """``async with download_dir_zip(svc, sid, path) as (reply, chunks):`` the directory as a zip."""
    headers = {"Accept": "application/zip"}
    url = FS.at(session_id, "download_dir_zip")
    async with stream_bytes(svc, "GET", url, params={"path": path}, headers=headers) as pair:
        yield pair


async def write_file(
    svc: Service, session_id: str, path: str, content: bytes, *, mode: str | None = None
) -> None:
    params = {"path": path, "mode": mode}
    headers = {"Content-Type": "application/octet-stream"}
    await request(
        svc,
        "PUT",
        FS.at(session_id, "write_file"),
        params=params,
        content=content,
        headers=headers,
        expect="none",
    )


async def upload(svc: Service, session_id: str, files: Iterable[tuple[str, str, IO[bytes]]]) -> None:
    """Upload ``(dest_path, filename, file object)`` items in one multipart request, indexed as SDK 0.131
    sends them (``files[0][dest_path]`` + ``files[0][file]``; docs/service-changes.md §4)."""
    parts = ("files[{i}][dest_path]", "files[{i}][file]")
    await upload_indexed(svc, FS.at(session_id, "upload"), files, parts, "application/octet-stream")


async def upload_zip(
    svc: Service, session_id: str, source: FileSource, *, dest_path: str, filename: str | None = None
) -> None:
    """Send a zip and have it extracted into ``dest_path`` (multipart ``zip_file`` + ``dest_path``)."""
    await upload_file(
        svc,
        FS.at(session_id, "upload_zip"),
        field="zip_file",
        source=source,
        filename=filename or "upload.zip",
        content_type="application/zip",
        data={"dest_path": dest_path},
        expect="none",
        timeout=300,
    )


async def create_directory(svc: Service, session_id: str, path: str, *, mode: str | None = None) -> None:
    body: dict[str, Any] = {"path": path}
    if mode:
        body["mode"] = mode
    await request(svc, "PUT", FS.at(session_id, "create_directory"), json=body, expect="none")


async def delete_directory(svc: Service, session_id: str, path: str) -> None:
    await request(svc, "PUT", FS.at(session_id, "delete_directory"), json={"path": path}, expect="none")


async def delete_file(svc: Service, session_id: str, path: str) -> None:
    await request(svc, "PUT", FS.at(session_id, "delete_file"), json={"path": path}, expect="none")


async def move(svc: Service, session_id: str, src_path: str, dest_path: str) -> None:
    body = {"src_path": src_path, "dest_path": dest_path}
    await request(svc, "PUT", FS.at(session_id, "move"), json=body, expect="none")


async def set_permissions(
    svc: Service, session_id: str, path: str, mode: str, *, owner: str | None = None, group: str | None = None
) -> None:
    body = {"path": path, "mode": mode, "owner": owner, "group": group}
    body = {key: value for key, value in body.items() if value is not None}
    await request(svc, "PUT", FS.at(session_id, "set_file_permissions"), json=body, expect="none")


async def watch(svc: Service, session_id: str, path: str, *, recursive: bool = False) -> str | None:
    """Start watching a directory; returns the watch id (POST is not retried: a retry would start two)."""
    reply = await request(
        svc, "POST", FS.at(session_id, "watch"), json={"path": path, "recursive": recursive}
    )
    watch_id = (reply.data or {}).get("watch_id") if isinstance(reply.data, dict) else None
    return watch_id if isinstance(watch_id, str) and watch_id else None


def watch_events_path(session_id: str, watch_id: str) -> str:
    return FS.at(session_id, f"watch/{path_segment(watch_id)}/events")


async def stop_watch(svc: Service, session_id: str, watch_id: str) -> None:
    await request(svc, "DELETE", FS.at(session_id, f"watch/{path_segment(watch_id)}"), expect="none")


def watch_event_from_event(event: ServerEvent) -> WatchEvent | None:
    return WatchEvent.from_json(event.data) if isinstance(event.data, dict) else None


async def watch_events(svc: Service, session_id: str, watch_id: str) -> AsyncIterator[WatchEvent]:
    """The events of one connection (ends when the watch is deleted; ``StreamDropped`` on a drop)."""
    async for event in events(svc, watch_events_path(session_id, watch_id)):
        item = watch_event_from_event(event)
        if item is not None:
            yield item
