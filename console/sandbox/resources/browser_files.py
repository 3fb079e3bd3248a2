"""A browser session's filesystem (notes §4): listing, file info, read, write, uploads, zip upload with
extraction, directory zip download, directories, delete, move, permissions, and watches.

Choices where the contract and the notes are silent (the lead copies them into the docs):

- Each session has a real working directory on disk, ``<temp root>/<session id>/``, under a per-process
  temp root (``sandbox-fs-…``, removed when the sandbox stops). The service's absolute paths map inside
  it: ``/home/kernel/Downloads`` is ``<root>/home/kernel/Downloads``. A new session starts with
  ``/home/kernel/Downloads``, ``/home/kernel/Desktop`` and ``/tmp``.
- Paths must be absolute (400 otherwise); a ``..`` segment is refused (400, path traversal), and so is a
  path that resolves outside the session's directory through a symlink. A path never reaches the host's
  own filesystem: ``/etc/passwd`` is the session's (absent) ``/etc/passwd``.
- Missing files and directories are 404 ``file_not_found``; a file where a directory is needed (or the
  reverse) is 400 with a field detail. ``write_file`` and ``upload`` create missing parent directories;
  ``move`` needs the destination's directory to exist (404 otherwise) and replaces an existing file;
  ``delete_directory`` removes the directory with its contents; ``/`` cannot be deleted or moved.
- Writes through the API stamp the file's modification time with the tenant clock.
- ``upload_zip`` extracts into ``dest_path`` (created if missing). Every entry is checked before anything
  is written: an absolute name, a ``..`` segment or a symlink entry refuses the whole archive (400, the
  entry is named); the declared sizes may total at most ``MAX_EXTRACT_BYTES`` (100 MiB), and extraction
  stops (and removes what it wrote) if the actual bytes exceed it, so a lying header cannot fill the disk.
  Uploads and single writes are limited to ``MAX_UPLOAD_BYTES`` (100 MiB); ``download_dir_zip`` refuses a
  directory holding more than that.
- ``set_file_permissions`` applies ``mode``; ``owner`` and ``group`` are accepted and ignored (every
  command runs as one user). What the API writes belongs to that user (``confine``), so the session's
  commands can change it: a command sees this directory as its ``/``.
- Watches poll the watched tree every ``WATCH_INTERVAL`` (0.2 s) and diff it (no inotify), reporting
  ``CREATE``, ``WRITE``, ``DELETE`` and ``RENAME`` like fsnotify: a rename is ``RENAME`` of the old path
  followed by ``CREATE`` of the new one; a deleted directory reports its contents first. Events are
  delivered to the streams connected at that moment; events that happen while no stream is connected are
  held (the newest ``WATCH_HELD`` of them) for the next stream, so a console that connects right after
  creating a watch misses nothing and a reconnect sees what happened in between. A watch lives until
  ``DELETE`` or the end of its session; its streams then end. At most ``MAX_WATCHES`` per session.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import io
import os
import re
import shutil
import stat
import tempfile
import zipfile
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import FileResponse, StreamingResponse
from starlette.routing import Route

from console.sandbox import confine
from console.sandbox.errors import ApiError, conflict, invalid
from console.sandbox.http import endpoint, multipart_array, no_content, ok, read_json, sse_response
from console.sandbox.state import Tenant, new_id, rfc3339

MAX_UPLOAD_BYTES = 100 * 1024 * 1024
MAX_EXTRACT_BYTES = 100 * 1024 * 1024
MAX_ZIP_ENTRIES = 10_000
WATCH_INTERVAL = 0.2
WATCH_HELD = 1_000
MAX_WATCHES = 16
MAX_WATCH_ENTRIES = 20_000
HOME = "/home/kernel"
SKELETON = ("home/kernel/Downloads", "home/kernel/Desktop", "tmp")
MODE = re.compile(r"^[0-7]{3,4}$")
CHUNK = 64 * 1024

_temp_root: Path | None = None


def temp_root() -> Path:
    """The per-process directory holding every session's filesystem (removed at exit)."""
    global _temp_root
    if _temp_root is None:
        _temp_root = Path(tempfile.mkdtemp(prefix="sandbox-fs-")).resolve()
        atexit.register(shutil.rmtree, _temp_root, True)
        if confine.identity() is not None:
            _temp_root.chmod(0o711)  # the commands' identity reaches its session directory, lists nothing
    return _temp_root


def session_root(record: dict) -> Path:
    """The session's directory, created with its skeleton on first use."""
    root = record.get("_fs_root")
    if root is None:
        root = temp_root() / record["session_id"]
        for part in SKELETON:
            (root / part).mkdir(parents=True, exist_ok=True)
        confine.prepare(root)
        record["_fs_root"] = root
    return root


def own(record: dict, host: Path) -> None:
    """Hand what the API just wrote (and the parents it created) to the session's commands, so a
    command can change what an operator uploaded (a root sandbox writes as root)."""
    root = session_root(record)
    for path in (host, *host.parents):
        if path == root or root not in path.parents:
            return
        confine.own(path)


# Paths ---------------------------------------------------------------------------------------------

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


def resolve(record: dict, raw, field: str = "path") -> Path:
    """A service path → the host path inside the session's directory (400 when it would escape)."""
    if not isinstance(raw, str) or not raw.strip():
        raise invalid(f"{field} is required", **{field: "an absolute path is required"})
    if "\x00" in raw:
        raise invalid(f"{field} is not a valid path", **{field: "must not contain NUL bytes"})
    if not raw.startswith("/"):
        raise invalid(f"{field} must be an absolute path", **{field: f"{raw!r} is not absolute"})
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise invalid(f"{field} must not contain ..", **{field: "path traversal (..) is not allowed"})
    # Linux's own limits (PATH_MAX, NAME_MAX), checked here so the answer is a 400, not an OSError.
    if len(raw.encode()) > MAX_PATH_BYTES:
        raise invalid(f"{field} is too long", **{field: f"at most {MAX_PATH_BYTES} bytes"})
    if any(len(p.encode()) > MAX_NAME_BYTES for p in parts):
        raise invalid(
            f"{field} has a name that is too long", **{field: f"each name at most {MAX_NAME_BYTES} bytes"}
        )
    root = session_root(record)
    target = root.joinpath(*parts)
    real = target.resolve()
    if real != root and root not in real.parents:
        raise invalid(
            f"{field} leaves the session's filesystem",
            **{field: "the path resolves outside the session's filesystem"},
        )
    return target


def service_path(record: dict, host: Path) -> str:
    relative = host.relative_to(session_root(record)).as_posix()
    return "/" if relative == "." else "/" + relative


def file_not_found(path: str) -> ApiError:
    return ApiError(404, "file_not_found", f"no such file or directory: {path}")


def _existing(record: dict, raw, field: str = "path") -> Path:
    target = resolve(record, raw, field)
    if not target.exists() and not target.is_symlink():
        raise file_not_found(raw)
    return target


def _directory(record: dict, raw, field: str = "path") -> Path:
    target = _existing(record, raw, field)
    if not target.is_dir():
        raise invalid(f"{raw} is not a directory", **{field: "must be a directory"})
    return target


def _mode(raw, field: str = "mode", default: str | None = None) -> int | None:
    if raw is None or raw == "":
        if default is None:
            return None
        raw = default
    if not isinstance(raw, str) or not MODE.match(raw):
        raise invalid(f"{field} must be an octal string such as 644", **{field: "an octal string like 644"})
    return int(raw, 8)


def _stamp(tenant: Tenant, host: Path) -> None:
    moment = tenant.now().timestamp()
    with contextlib.suppress(OSError):
        os.utime(host, (moment, moment), follow_symlinks=False)


def file_info(record: dict, host: Path) -> dict:
    """FileInfo (notes §4): name, path, is_dir, size_bytes (0 for directories), mode, mod_time."""
    st = host.lstat()
    is_dir = stat.S_ISDIR(st.st_mode)
    return {
        "name": host.name or "/",
        "path": service_path(record, host),
        "is_dir": is_dir,
        "size_bytes": 0 if is_dir else st.st_size,
        "mode": stat.filemode(st.st_mode),
        "mod_time": rfc3339(datetime.fromtimestamp(st.st_mtime, UTC)),
    }


def _session(request: Request, *, activity: bool = True) -> dict:
    """The session of the path; a call that drives it counts as activity, a read does not."""
    from console.sandbox.resources.browsers import get_session, touch

    record = get_session(request, request.path_params["id"])
    if activity:
        touch(request.state.tenant, record)
    return record


def _require_path(request: Request, name: str = "path") -> str:
    raw = request.query_params.get(name)
    if not raw:
        raise invalid(f"{name} is required", **{name: "an absolute path is required"})
    return raw


# Reading -------------------------------------------------------------------------------------------


@endpoint
async def list_files(request: Request):
    record = _session(request, activity=False)
    directory = _directory(record, _require_path(request))
    entries = []
    for child in sorted(directory.iterdir(), key=lambda p: p.name):
        with contextlib.suppress(OSError):
            entries.append(file_info(record, child))
    return ok(entries)


@endpoint
async def get_file_info(request: Request):
    record = _session(request, activity=False)
    return ok(file_info(record, _existing(record, _require_path(request))))


@endpoint
async def read_file(request: Request):
    record = _session(request, activity=False)
    raw = _require_path(request)
    target = _existing(record, raw)
    if target.is_dir():
        raise invalid(f"{raw} is a directory", path="is a directory; use list_files or download_dir_zip")
    return FileResponse(target, media_type="application/octet-stream", filename=target.name)


# Writing -------------------------------------------------------------------------------------------


def _writable(record: dict, raw, field: str) -> Path:
    target = resolve(record, raw, field)
    if target == session_root(record):
        raise invalid(f"{field} cannot be /", **{field: "name a file, not the root directory"})
    if target.is_dir():
        raise invalid(f"{raw} is a directory", **{field: "is a directory"})
    for parent in target.parents:
        if parent == session_root(record):
            break
        if parent.exists() and not parent.is_dir():
            raise invalid(
                f"{service_path(record, parent)} is not a directory", **{field: "a parent is a file"}
            )
    return target


async def _spool(chunks, target: Path, field: str) -> int:
    """Write an async stream of bytes to ``target`` (via a temp file beside it), bounded in size."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".upload-")
    written = 0
    try:
        with os.fdopen(fd, "wb") as out:
            async for chunk in chunks:
                written += len(chunk)
                if written > MAX_UPLOAD_BYTES:
                    raise _too_large(field)
                out.write(chunk)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return written


def _too_large(field: str) -> ApiError:
    limit = MAX_UPLOAD_BYTES // (1024 * 1024)
    return ApiError(
        413,
        "file_too_large",
        f"the upload exceeds the {limit} MiB limit",
        details=[{"code": field, "message": f"at most {limit} MiB"}],
    )


@endpoint
async def write_file(request: Request):
    record = _session(request)
    target = _writable(record, _require_path(request), "path")
    mode = _mode(request.query_params.get("mode"), default="644")
    await _spool(request.stream(), target, "path")
    os.chmod(target, mode)
    own(record, target)
    _stamp(request.state.tenant, target)
    return no_content()


async def _form(request: Request, *, max_files: int, field: str):
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise invalid("send multipart/form-data", **{field: "upload the file as a multipart field"})
    try:
        return await request.form(
            max_files=max_files, max_fields=max_files * 2 + 10, max_part_size=1024 * 1024
        )
    except (HTTPException, MultiPartException) as exc:
        why = str(getattr(exc, "detail", None) or getattr(exc, "message", None) or exc)[:200]
        raise invalid("the multipart body could not be read", **{field: why or "malformed body"}) from None


async def _upload_chunks(upload: UploadFile):
    while chunk := await upload.read(CHUNK):
        yield chunk


@endpoint
async def upload_files(request: Request):
    """Multipart ``files[i][dest_path]`` + ``files[i][file]`` (SDK 0.131), or the ``files[][…]`` pairs
    matched by order (SDK 0.93, notes §4). Every destination is checked before anything is written."""
    record = _session(request)
    form = await _form(request, max_files=100, field="files")
    try:
        entries = multipart_array(form, "files", ("dest_path", "file"))
        if not entries:
            raise invalid("no files were sent", files="send files[0][dest_path] and files[0][file] parts")
        bad = [i for i, e in enumerate(entries) if not isinstance(e["file"], UploadFile)]
        if bad:
            raise invalid("a file part carries no file", **{f"files[{bad[0]}].file": "must be a file part"})
        dests = [e["dest_path"] for e in entries]
        uploads = [e["file"] for e in entries]
        targets = [_writable(record, d, f"files[{i}].dest_path") for i, d in enumerate(dests)]
        for index, (upload, target) in enumerate(zip(uploads, targets, strict=True)):
            await _spool(_upload_chunks(upload), target, f"files[{index}].file")
            own(record, target)
            _stamp(request.state.tenant, target)
    finally:
        await form.close()
    return no_content()


class BadZip(Exception):
    def __init__(self, message: str, entry: str | None = None):
        super().__init__(message)
        self.entry = entry


def _entry_parts(info: zipfile.ZipInfo) -> list[str]:
    name = info.filename.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise BadZip(f"entry {info.filename!r} has an absolute path", info.filename)
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BadZip(f"entry {info.filename!r} would be written outside the target directory", info.filename)
    if stat.S_ISLNK(info.external_attr >> 16):
        raise BadZip(f"entry {info.filename!r} is a symbolic link", info.filename)
    return parts


def extract_zip(archive, dest: Path) -> list[Path]:
    """Check every entry, then extract into ``dest``; returns the paths written (runs in a thread)."""
    try:
        bundle = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BadZip(f"not a zip archive: {exc}") from None
    with bundle:
        infos = bundle.infolist()
        if len(infos) > MAX_ZIP_ENTRIES:
            raise BadZip(f"the archive has {len(infos)} entries; at most {MAX_ZIP_ENTRIES}")
        planned = [(info, _entry_parts(info)) for info in infos]
        declared = sum(info.file_size for info in infos)
        if declared > MAX_EXTRACT_BYTES:
            raise BadZip(
                f"the archive would extract to {declared} bytes; at most {MAX_EXTRACT_BYTES} (100 MiB)"
            )
        dest.mkdir(parents=True, exist_ok=True)
        root = dest.resolve()
        written: list[Path] = []
        total = 0
        try:
            for info, parts in planned:
                if not parts:
                    continue
                target = root.joinpath(*parts)
                if target.is_symlink() or root not in target.resolve().parents:
                    raise BadZip(f"entry {info.filename!r} would leave the target directory", info.filename)
                if info.is_dir():
                    if not target.exists():
                        target.mkdir(parents=True)
                        written.append(target)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_dir():
                    raise BadZip(f"entry {info.filename!r} collides with a directory", info.filename)
                with bundle.open(info) as source, target.open("wb") as out:
                    written.append(target)
                    while chunk := source.read(CHUNK):
                        total += len(chunk)
                        if total > MAX_EXTRACT_BYTES:
                            raise BadZip(
                                "the archive extracts to more than 100 MiB (its headers understate it)"
                            )
                        out.write(chunk)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    os.chmod(target, mode | 0o600)
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
            _remove(written)
            raise BadZip(f"the archive could not be extracted: {exc}") from None
        except BadZip:
            _remove(written)
            raise
        return written


def _remove(paths: list[Path]) -> None:
    for path in reversed(paths):
        with contextlib.suppress(OSError):
            if path.is_dir():
                path.rmdir()
            else:
                path.unlink()


@endpoint
async def upload_zip(request: Request):
    record = _session(request)
    form = await _form(request, max_files=1, field="zip_file")
    try:
        dest_raw = form.get("dest_path")
        if not isinstance(dest_raw, str) or not dest_raw:
            raise invalid("dest_path is required", dest_path="the directory to extract into")
        dest = resolve(record, dest_raw, "dest_path")
        if dest.exists() and not dest.is_dir():
            raise invalid(f"{dest_raw} is not a directory", dest_path="must be a directory")
        upload = form.get("zip_file")
        if not isinstance(upload, UploadFile):
            raise invalid("zip_file is required", zip_file="upload the archive as 'zip_file'")
        if upload.size is not None and upload.size > MAX_UPLOAD_BYTES:
            raise _too_large("zip_file")
        try:
            written = await asyncio.to_thread(extract_zip, upload.file, dest)
        except BadZip as exc:
            raise invalid(f"the zip archive was refused: {exc}", zip_file=str(exc)) from None
    finally:
        await form.close()
    tenant = request.state.tenant
    own(record, dest)
    for path in written:
        own(record, path)
        _stamp(tenant, path)
    return no_content()


def _zip_directory(directory: Path) -> io.BytesIO | tempfile.SpooledTemporaryFile:
    total = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file() and not p.is_symlink())
    if total > MAX_UPLOAD_BYTES:
        raise BadZip(f"the directory holds {total} bytes; at most {MAX_UPLOAD_BYTES} can be zipped")
    buffer = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)  # noqa: SIM115 - returned open
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for path in sorted(directory.rglob("*")):
            if path.is_symlink():
                continue
            bundle.write(path, path.relative_to(directory).as_posix())
    buffer.seek(0)
    return buffer


@endpoint
async def download_dir_zip(request: Request):
    record = _session(request, activity=False)
    raw = _require_path(request)
    directory = _directory(record, raw)
    try:
        buffer = await asyncio.to_thread(_zip_directory, directory)
    except BadZip as exc:
        raise invalid(str(exc), path="the directory is too large to download as a zip") from None

    async def body():
        try:
            while chunk := buffer.read(CHUNK):
                yield chunk
        finally:
            buffer.close()

    name = (directory.name or "root") + ".zip"
    return StreamingResponse(
        body(),
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@endpoint
async def create_directory(request: Request):
    record = _session(request)
    body = await read_json(request)
    target = resolve(record, body.get("path"))
    mode = _mode(body.get("mode"), default="755")
    if target.exists() and not target.is_dir():
        raise invalid(f"{body['path']} is a file", path="a file already has this name")
    for parent in target.parents:
        if parent.exists() and not parent.is_dir():
            raise invalid(f"{service_path(record, parent)} is a file", path="a parent is a file")
        if parent == session_root(record):
            break
    target.mkdir(parents=True, exist_ok=True)
    os.chmod(target, mode)
    own(record, target)
    return no_content()


@endpoint
async def delete_directory(request: Request):
    record = _session(request)
    body = await read_json(request)
    target = _directory(record, body.get("path"))
    if target == session_root(record):
        raise invalid("/ cannot be deleted", path="the root directory cannot be deleted")
    await asyncio.to_thread(shutil.rmtree, target)
    return no_content()


@endpoint
async def delete_file(request: Request):
    record = _session(request)
    body = await read_json(request)
    raw = body.get("path")
    target = _existing(record, raw)
    if target.is_dir() and not target.is_symlink():
        raise invalid(f"{raw} is a directory", path="is a directory; use delete_directory")
    target.unlink()
    return no_content()


@endpoint
async def move(request: Request):
    record = _session(request)
    body = await read_json(request)
    src = _existing(record, body.get("src_path"), "src_path")
    dest = resolve(record, body.get("dest_path"), "dest_path")
    root = session_root(record)
    if src == root or dest == root:
        raise invalid("/ cannot be moved", src_path="the root directory cannot be moved or replaced")
    if src == dest:
        return no_content()
    if not dest.parent.is_dir():
        raise file_not_found(service_path(record, dest.parent))
    if src.is_dir() and (dest == src or src in dest.parents):
        raise invalid("a directory cannot move into itself", dest_path="is inside src_path")
    if dest.is_dir() and not dest.is_symlink():
        if not src.is_dir():
            raise invalid(f"{body['dest_path']} is a directory", dest_path="a directory has this name")
        if any(dest.iterdir()):
            raise invalid(
                f"{body['dest_path']} is not empty", dest_path="a non-empty directory has this name"
            )
    os.replace(src, dest)
    return no_content()


@endpoint
async def set_file_permissions(request: Request):
    record = _session(request)
    body = await read_json(request)
    target = _existing(record, body.get("path"))
    mode = _mode(body.get("mode"))
    if mode is None:
        raise invalid("mode is required", mode="an octal string like 644")
    for key in ("owner", "group"):
        if body.get(key) is not None and not isinstance(body[key], str | int):
            raise invalid(f"{key} must be a name or an id", **{key: "a name or a numeric id"})
    os.chmod(target, mode)
    return no_content()


# Watches -------------------------------------------------------------------------------------------

_END = object()


@dataclass
class Watch:
    id: str
    path: str
    host: Path
    recursive: bool
    snapshot: dict[str, tuple]
    held: deque = field(default_factory=lambda: deque(maxlen=WATCH_HELD))
    readers: set[asyncio.Queue] = field(default_factory=set)
    closed: bool = False
    task: asyncio.Task | None = None

    def publish(self, event) -> None:
        if self.readers:
            for queue in list(self.readers):
                queue.put_nowait(event)
        elif event is not _END:
            self.held.append(event)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for queue in list(self.readers):
            queue.put_nowait(_END)
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()


def watches_of(record: dict) -> dict[str, Watch]:
    return record.setdefault("_watches", {})


def snapshot(record: dict, host: Path, recursive: bool) -> dict[str, tuple]:
    """Service path → (is_dir, inode, size, mtime_ns) of everything under ``host`` (bounded)."""
    found: dict[str, tuple] = {}
    if not host.is_dir():
        return found
    stack = [host]
    while stack and len(found) < MAX_WATCH_ENTRIES:
        directory = stack.pop()
        try:
            children = list(os.scandir(directory))
        except OSError:
            continue
        for entry in children:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            found[service_path(record, Path(entry.path))] = (is_dir, st.st_ino, st.st_size, st.st_mtime_ns)
            if is_dir and recursive:
                stack.append(Path(entry.path))
    return found


def _event(kind: str, path: str, is_dir: bool) -> dict:
    return {"type": kind, "name": path.rsplit("/", 1)[-1], "path": path, "is_dir": is_dir}


def _inside(path: str, parents: set[str]) -> bool:
    return any(path.startswith(parent + "/") for parent in parents)


def diff(old: dict[str, tuple], new: dict[str, tuple]) -> list[dict]:
    """fsnotify-like events for the change from ``old`` to ``new``.

    A path whose inode (same kind, same size for files) now lives at a new path was renamed: ``RENAME``
    of the old path, ``CREATE`` of the new one; the contents of a renamed directory are not repeated.
    """
    removed = {p: old[p] for p in old.keys() - new.keys()}
    added = {p: new[p] for p in new.keys() - old.keys()}
    replaced = {p: v for p, v in new.items() if p in old and v[1] != old[p][1]}
    arrivals = {**added, **replaced}
    renames: dict[str, str] = {}
    for old_path, before in sorted(removed.items()):
        for new_path, after in arrivals.items():
            same = after[0] == before[0] and after[1] == before[1] and (after[0] or after[2] == before[2])
            if same and new_path not in renames.values():
                renames[old_path] = new_path
                break
    moved_from = {p for p in renames if removed[p][0]}
    moved_to = {renames[p] for p in moved_from}
    events: list[dict] = []
    for old_path, new_path in sorted(renames.items()):
        if not _inside(old_path, moved_from):
            events.append(_event("RENAME", old_path, removed[old_path][0]))
            events.append(_event("CREATE", new_path, new[new_path][0]))
    arrived_by_rename = set(renames.values())
    for path in sorted(added):
        if path not in arrived_by_rename and not _inside(path, moved_to):
            events.append(_event("CREATE", path, added[path][0]))
    for path in sorted(new.keys() & old.keys()):
        before, after = old[path], new[path]
        if not after[0] and path not in arrived_by_rename and before[1:] != after[1:]:
            events.append(_event("WRITE", path, False))
    for path in sorted(removed, reverse=True):
        if path not in renames:
            events.append(_event("DELETE", path, removed[path][0]))
    return events


async def _poll(tenant: Tenant, record: dict, watch: Watch) -> None:
    from console.sandbox.resources.browsers import is_active

    try:
        while not watch.closed:
            await asyncio.sleep(WATCH_INTERVAL)
            if not is_active(tenant, record):
                watch.close()
                watches_of(record).pop(watch.id, None)
                return
            current = await asyncio.to_thread(snapshot, record, watch.host, watch.recursive)
            for event in diff(watch.snapshot, current):
                watch.publish(event)
            watch.snapshot = current
    except asyncio.CancelledError:
        raise
    except Exception:  # a vanished tree mid-scan: end the watch rather than leave streams hanging
        watch.close()


@endpoint
async def create_watch(request: Request):
    record = _session(request)
    body = await read_json(request)
    host = _directory(record, body.get("path"))
    recursive = body.get("recursive", False)
    if not isinstance(recursive, bool):
        raise invalid("recursive must be true or false", recursive="must be true or false")
    watches = watches_of(record)
    if len(watches) >= MAX_WATCHES:
        raise conflict(
            f"this session already has {MAX_WATCHES} watches; delete one first", code="too_many_watches"
        )
    watch = Watch(
        id=new_id("watch", 16),
        path=service_path(record, host),
        host=host,
        recursive=recursive,
        snapshot=snapshot(record, host, recursive),
    )
    watches[watch.id] = watch
    watch.task = asyncio.get_running_loop().create_task(_poll(request.state.tenant, record, watch))
    return ok({"watch_id": watch.id}, status=201)


def _watch(request: Request, record: dict) -> Watch:
    watch = watches_of(record).get(request.path_params["watch_id"])
    if watch is None or watch.closed:
        raise ApiError(
            404, "watch_not_found", f"no watch {request.path_params['watch_id']!r} on this session"
        )
    return watch


@endpoint
async def watch_events(request: Request):
    from console.sandbox.resources.browsers import get_session

    record = get_session(request, request.path_params["id"])
    watch = _watch(request, record)
    queue: asyncio.Queue = asyncio.Queue()
    while watch.held:
        queue.put_nowait(watch.held.popleft())
    watch.readers.add(queue)

    async def frames():
        try:
            while True:
                event = await queue.get()
                if event is _END:
                    return
                yield None, event
        finally:
            watch.readers.discard(queue)

    return sse_response(request, frames())


@endpoint
async def delete_watch(request: Request):
    record = _session(request)
    watch = _watch(request, record)
    watch.close()
    watches_of(record).pop(watch.id, None)
    return no_content()


# Demo data -----------------------------------------------------------------------------------------

DEMO_FILES = {
    "home/kernel/Downloads/invoice-2026-03.pdf": (b"%PDF-1.7\n% sandbox demo invoice\n" + b"0" * 48_000, 95),
    "home/kernel/Downloads/orders-export.csv": (
        b"order_id,sku,qty,total,currency\n"
        + b"".join(f"A{1000 + i},WH1000XM5,1,349.99,USD\n".encode() for i in range(120)),
        40,
    ),
    "home/kernel/Downloads/screenshots/checkout-step-2.png": (
        bytes.fromhex("89504e470d0a1a0a") + b"\x00" * 20_000,
        32,
    ),
    "home/kernel/Desktop/notes.txt": (
        b"Checkout regression, run 14\n- coupon field loses focus on mobile widths\n- retry payment step\n",
        12,
    ),
    "home/kernel/scripts/check_cart.py": (
        b"import json, sys\n\ncart = json.load(open(sys.argv[1]))\n"
        b"print(f\"{len(cart['items'])} item(s)\")\n",
        150,
    ),
    "tmp/chrome-crash-report.log": (
        b"[0402/091502.118:ERROR:gpu_init.cc(523)] Passthrough is not supported\n",
        8,
    ),
}


def seed(tenant: Tenant) -> None:
    """Realistic files in every live demo session: downloads, a notes file, a script, a log."""
    now = tenant.now()
    for record in tenant.table("browsers").values():
        if record.get("_deleted"):
            continue
        root = session_root(record)
        for relative, (content, minutes_ago) in DEMO_FILES.items():
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            own(record, target)
            moment = (now - timedelta(minutes=minutes_ago)).timestamp()
            os.utime(target, (moment, moment))


routes = [
    Route("/browsers/{id}/fs/list_files", list_files, methods=["GET"]),
    Route("/browsers/{id}/fs/file_info", get_file_info, methods=["GET"]),
    Route("/browsers/{id}/fs/read_file", read_file, methods=["GET"]),
    Route("/browsers/{id}/fs/write_file", write_file, methods=["PUT"]),
    Route("/browsers/{id}/fs/upload", upload_files, methods=["POST"]),
    Route("/browsers/{id}/fs/upload_zip", upload_zip, methods=["POST"]),
    Route("/browsers/{id}/fs/download_dir_zip", download_dir_zip, methods=["GET"]),
    Route("/browsers/{id}/fs/create_directory", create_directory, methods=["PUT"]),
    Route("/browsers/{id}/fs/delete_directory", delete_directory, methods=["PUT"]),
    Route("/browsers/{id}/fs/delete_file", delete_file, methods=["PUT"]),
    Route("/browsers/{id}/fs/move", move, methods=["PUT"]),
    Route("/browsers/{id}/fs/set_file_permissions", set_file_permissions, methods=["PUT"]),
    Route("/browsers/{id}/fs/watch", create_watch, methods=["POST"]),
    Route("/browsers/{id}/fs/watch/{watch_id}/events", watch_events, methods=["GET"]),
    Route("/browsers/{id}/fs/watch/{watch_id}", delete_watch, methods=["DELETE"]),
]
