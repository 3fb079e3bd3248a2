"""A browser session's filesystem (notes §4): listing, file info, read, write, uploads, zip upload with
extraction, directory zip download, directories, delete, move, permissions, and watches.

Choices where the contract and the notes are silent (the lead copies them into the docs):

- Each session has a real working directory on disk, ``<temp root>/<session id>/``, under a per-process
  temp root (``sandbox-fs-…``, removed when the sandbox stops). The service's absolute paths map inside
  it: ``/home/kernel/Downloads`` is ``<root>/home/kernel/Downloads``. A new session starts with
  ``/home/kernel/Downloads``, ``/home/kernel/Desktop`` and ``/tmp``.
- Paths must be absolute (400 otherwise); a ``..`` segment is refused (400, path traversal). A path never
  reaches the host's own filesystem: ``/etc/passwd`` is the session's (absent) ``/etc/passwd``.
- Symlinks (the session's commands make them; the API never does): every operation walks its path from a
  descriptor of the session's directory (``console/sandbox/chromium/rooted.py``), never by name from the
  host's ``/``, so a command swapping a component for a link mid-request cannot lead the sandbox (root, when
  it runs as root) anywhere else. A relative link that stays inside the session is followed on the way; an
  absolute one (its text names the host in the sandbox's view) or one climbing above ``/`` is 400, the path
  "resolves outside". The last component: ``read_file``, ``list_files``, ``create_directory``,
  ``set_file_permissions``, ``upload_zip``'s ``dest_path``, ``download_dir_zip`` and watches follow it the
  same way; ``file_info`` describes the link itself; ``delete_file`` and ``move`` act on the link;
  ``write_file`` and ``upload`` replace it with the file; ``delete_directory`` refuses it (400). Directory
  zips, watches and ``delete_directory`` never descend into a link (a zip leaves it out), and zip extraction
  refuses an archive that would write through one (400). ``read_file`` of something that is not a regular file
  (a FIFO) is 400; the mode of ``/`` itself cannot be changed (400) and ``create_directory /`` leaves it
  alone: it is the host directory guarding the session.
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
  directory holding more than that, or more than ``MAX_DIR_ZIP_ENTRIES`` (100,000) entries.
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
import errno
import os
import re
import secrets
import stat
import tempfile
import time
import zipfile
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import formatdate
from pathlib import Path
from urllib.parse import quote

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from console.sandbox.chromium import confine, rooted
from console.sandbox.core import store
from console.sandbox.core.errors import ApiError, conflict, invalid
from console.sandbox.core.http import endpoint, multipart_array, no_content, ok, read_json, sse_response
from console.sandbox.core.state import Tenant, new_id, rfc3339
from console.sandbox.resources import sessions

MAX_UPLOAD_BYTES = 100 * 1024 * 1024
# A write lands in a temporary file renamed into place: watches never report those (a poll that caught
# one would report a CREATE and a RENAME for what is one write).
TEMP_PREFIX = ".sandbox-upload-"
MAX_EXTRACT_BYTES = 100 * 1024 * 1024
MAX_ZIP_ENTRIES = 10_000
MAX_DIR_ZIP_ENTRIES = 100_000
WATCH_INTERVAL = 0.2
WATCH_HELD = 1_000
MAX_WATCHES = 16
MAX_WATCH_ENTRIES = 20_000
HOME = "/home/kernel"
SKELETON = ("home/kernel/Downloads", "home/kernel/Desktop", "tmp")
MODE = re.compile(r"^[0-7]{3,4}$")
CHUNK = 64 * 1024
BUFFERED_READ = 4 * 1024 * 1024  # files up to this size are read whole before they are sent

_temp_root: Path | None = None
_temporary = False  # whether _temp_root is this process's own temporary directory (no SANDBOX_STATE)


def temp_root() -> Path:
    """The directory holding every session's filesystem: a temporary one removed at exit, or beside the
    state file with ``SANDBOX_STATE``."""
    global _temp_root, _temporary
    if _temp_root is None:
        kept = store.files_root()  # with SANDBOX_STATE, sessions' files outlive the process
        if kept is not None:
            _temp_root = (kept / "fs").resolve()
            _temp_root.mkdir(mode=0o700, exist_ok=True)
            if confine.identity() is not None:
                kept.chmod(0o711)  # the commands' identity must pass through to its session directory
                store.warn_if_unreachable(kept)
        else:
            _temp_root = Path(tempfile.mkdtemp(prefix="sandbox-fs-")).resolve()
            _temporary = True
            atexit.register(rooted.remove_beneath, _temp_root.parent, _temp_root.name)
        if confine.identity() is not None:
            _temp_root.chmod(0o711)  # the commands' identity reaches its session directory, lists nothing
    return _temp_root


def remove_temporary() -> None:
    """Remove the sessions' files when they live in a temporary directory (the sandbox is stopping;
    with ``SANDBOX_STATE`` they stay beside the state file)."""
    global _temp_root, _temporary
    if _temp_root is not None and _temporary:
        # The commands wrote in it: removed by descriptor, never through a link or a FIFO of theirs.
        rooted.remove_beneath(_temp_root.parent, _temp_root.name)
        _temp_root, _temporary = None, False


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
    """Hand what the sandbox itself wrote at ``host`` (and its parents) to the session's commands, never
    through a symlink (a root sandbox writes as root). The files API owns what it creates as it goes."""
    if confine.identity() is None:
        return
    parts = list(host.relative_to(session_root(record)).parts)
    with _top(record) as top:
        for depth in range(1, len(parts) + 1):
            with rooted.Walk(top, links=False) as walk:
                _own_at(walk.fd, walk.locate(parts[:depth], follow_last=False))


def _own_at(directory: int, name: str) -> None:
    """Hand ``name`` in ``directory`` to the commands' identity (never following it)."""
    ids = confine.identity()
    if ids is not None:
        os.chown(name, *ids, dir_fd=directory, follow_symlinks=False)


def _own_fd(fd: int) -> None:
    ids = confine.identity()
    if ids is not None:
        os.fchown(fd, *ids)


# Paths ---------------------------------------------------------------------------------------------
#
# Every operation reaches the session's files through ``rooted``: a walk from a descriptor of the
# session's directory that no symlink can lead out of, then acts relative to the parent's descriptor.
# A path is never checked and then used by name (a command of the session may swap any component for a
# symlink in between). Paths in answers are the ones asked for (``/`` + the parts), not where links led.

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


def _parts(raw, field: str = "path") -> list[str]:
    """A service path's components (400 unless absolute, without NUL and without ``..``)."""
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
    return parts


def resolve(record: dict, raw, field: str = "path") -> Path:
    """A service path → the host path inside the session's directory, for what only names it (a
    command's ``cwd``, used inside the confinement). 400 when it would escape today; the files API
    never opens a path this way."""
    parts = _parts(raw, field)
    root = session_root(record)
    target = root.joinpath(*parts)
    real = target.resolve()
    if real != root and root not in real.parents:
        raise _outside(field)
    return target


def open_regular(record: dict, raw, field: str = "path") -> int:
    """A descriptor of the regular file at ``raw``, opened as ``read_file`` opens it: walked from the
    session's directory, never through a symlink out of it, without waiting on a FIFO a command left
    there (the caller closes it). The API's errors otherwise: 404 missing, 400 a directory or no file."""
    parts = _parts(raw, field)
    with _walk(record, raw, field) as walk:
        name = walk.locate(parts)
        if name is None:
            raise invalid(f"{raw} is a directory", **{field: "is a directory"})
        fd = walk.open(name, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise invalid(f"{raw} is a directory", **{field: "is a directory"})
        if not stat.S_ISREG(st.st_mode):
            raise invalid(f"{raw} is not a regular file", **{field: "only regular files can be read"})
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _outside(field: str) -> ApiError:
    return invalid(
        f"{field} leaves the session's filesystem",
        **{field: "the path resolves outside the session's filesystem"},
    )


def service_path(record: dict, host: Path) -> str:
    relative = host.relative_to(session_root(record)).as_posix()
    return "/" if relative == "." else "/" + relative


def _service(parts: list[str]) -> str:
    return "/" + "/".join(parts)


def _join(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name


def file_not_found(path: str) -> ApiError:
    return ApiError(404, "file_not_found", f"no such file or directory: {path}")


@contextlib.contextmanager
def _top(record: dict):
    """A descriptor of the session's directory (the sandbox made it; commands cannot rename it: it is
    their ``/``)."""
    top = rooted.open_top(session_root(record))
    try:
        yield top
    finally:
        os.close(top)


@contextlib.contextmanager
def _walk(record: dict, raw, field: str = "path", *, parent_is_file: str | None = None):
    """A walk from the session's directory, its failures answered as the API's errors: a link out is
    400, a missing path 404, and a file on the way 404 (reads) or 400 with ``parent_is_file`` (writes:
    a format taking the file's path)."""
    try:
        with _top(record) as top, rooted.Walk(top, on_create=_own_at) as walk:
            yield walk
    except rooted.Outside:
        raise _outside(field) from None
    except rooted.NotADir as exc:
        if parent_is_file is None:
            raise file_not_found(raw) from None
        raise invalid(parent_is_file.format(exc.path), **{field: "a parent is a file"}) from None
    except FileNotFoundError:
        raise file_not_found(raw) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _outside(field) from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise ApiError(403, "permission_denied", f"permission denied: {raw}") from None
        if exc.errno == errno.EISDIR:
            raise invalid(f"{raw} is a directory", **{field: "is a directory"}) from None
        if exc.errno == errno.ENOTDIR:
            raise invalid(f"{raw} is not a directory", **{field: "must be a directory"}) from None
        raise conflict(f"{raw} changed while it was being used; try again", code="path_changed") from None


def _into_directory(walk: rooted.Walk, parts: list[str], raw, field: str = "path") -> None:
    """Walk into the directory the path names (400 when it is something else)."""
    name = walk.locate(parts)
    if name is None:
        return
    if not stat.S_ISDIR(walk.lstat(name).st_mode):
        raise invalid(f"{raw} is not a directory", **{field: "must be a directory"})
    walk.enter(name)


def _mode(raw, field: str = "mode", default: str | None = None) -> int | None:
    if raw is None or raw == "":
        if default is None:
            return None
        raw = default
    if not isinstance(raw, str) or not MODE.match(raw):
        raise invalid(f"{field} must be an octal string such as 644", **{field: "an octal string like 644"})
    return int(raw, 8)


def file_info(path: str, st: os.stat_result) -> dict:
    """FileInfo (notes §4): name, path, is_dir, size_bytes (0 for directories), mode, mod_time."""
    is_dir = stat.S_ISDIR(st.st_mode)
    return {
        "name": path.rsplit("/", 1)[-1] or "/",
        "path": path,
        "is_dir": is_dir,
        "size_bytes": 0 if is_dir else st.st_size,
        "mode": stat.filemode(st.st_mode),
        "mod_time": rfc3339(datetime.fromtimestamp(st.st_mtime, UTC)),
    }


def _require_path(request: Request, name: str = "path") -> str:
    raw = request.query_params.get(name)
    if not raw:
        raise invalid(f"{name} is required", **{name: "an absolute path is required"})
    return raw


# Reading -------------------------------------------------------------------------------------------


def _read_target(request: Request) -> tuple[dict, str, list[str]]:
    """What a read names: the session (reading is no activity), the ``path`` query and that path's parts."""
    record = sessions.of_path(request, activity=False)
    raw = _require_path(request)
    return record, raw, _parts(raw)


@endpoint
async def list_files(request: Request):
    record, raw, parts = _read_target(request)
    entries = []
    with _walk(record, raw) as walk:
        _into_directory(walk, parts, raw)
        for name in sorted(os.listdir(walk.fd)):
            with contextlib.suppress(OSError):
                entries.append(file_info(_join(_service(parts), name), walk.lstat(name)))
    return ok(entries)


@endpoint
async def get_file_info(request: Request):
    record, raw, parts = _read_target(request)
    with _walk(record, raw) as walk:
        st = walk.lstat(walk.locate(parts, follow_last=False))
    return ok(file_info(_service(parts), st))


@endpoint
async def read_file(request: Request):
    record, raw, parts = _read_target(request)
    with _walk(record, raw) as walk:
        name = walk.locate(parts)
        # O_NONBLOCK: a FIFO a command left there must not hold the request (or a thread) forever.
        fd = walk.open(name, os.O_RDONLY | os.O_NONBLOCK) if name is not None else os.dup(walk.fd)
    source = os.fdopen(fd, "rb", buffering=0)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise invalid(f"{raw} is a directory", path="is a directory; use list_files or download_dir_zip")
        if not stat.S_ISREG(st.st_mode):
            raise invalid(f"{raw} is not a regular file", path="only regular files can be read")
        os.set_blocking(fd, True)
    except BaseException:
        source.close()
        raise

    filename = parts[-1] if parts else "root"
    quoted = quote(filename)
    disposition = (
        f'attachment; filename="{filename}"'
        if quoted == filename
        else f"attachment; filename*=utf-8''{quoted}"
    )
    headers = {
        "Content-Disposition": disposition,
        "Last-Modified": formatdate(st.st_mtime, usegmt=True),
    }
    if st.st_size <= BUFFERED_READ:
        # Read whole, so the length sent is the length read even while a command rewrites the file.
        with source:
            data = await asyncio.to_thread(_read_at_most, source, BUFFERED_READ)
        return Response(data, media_type="application/octet-stream", headers=headers)

    async def body():
        with source:
            left = st.st_size  # as announced: a file growing meanwhile is cut there (one shrinking aborts)
            while left > 0:
                chunk = await asyncio.to_thread(source.read, min(CHUNK, left))
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk

    headers["Content-Length"] = str(st.st_size)
    return StreamingResponse(body(), media_type="application/octet-stream", headers=headers)


def _read_at_most(source, limit: int) -> bytes:
    data = bytearray()
    while len(data) < limit and (chunk := source.read(min(CHUNK, limit - len(data)))):
        data += chunk
    return bytes(data)


# Writing -------------------------------------------------------------------------------------------

PARENT_NOT_DIR = "{} is not a directory"


def _writable_name(walk: rooted.Walk, parts: list[str], raw, field: str, *, create: bool) -> str:
    """Walk to the directory of a file to write (creating missing ones with ``create``) and return the
    file's name there. A symlink as the last component is replaced, never followed."""
    name = walk.locate(parts, create=create, follow_last=False)
    if name is None:
        raise invalid(f"{field} cannot be /", **{field: "name a file, not the root directory"})
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(walk.lstat(name).st_mode):
            raise invalid(f"{raw} is a directory", **{field: "is a directory"})
    return name


def _check_writable(record: dict, raw, field: str) -> list[str]:
    """The parts of a path a file can be written at (checked before anything is written)."""
    parts = _parts(raw, field)
    with (
        _walk(record, raw, field, parent_is_file=PARENT_NOT_DIR) as walk,
        contextlib.suppress(FileNotFoundError),  # a missing directory on the way will be created
    ):
        _writable_name(walk, parts, raw, field, create=False)
    return parts


async def _spool(chunks, walk: rooted.Walk, name: str, field: str, *, mode: int | None, moment: float) -> int:
    """Write an async stream of bytes as ``name`` in the walk's directory (via a temp file beside it,
    given its mode, owner and time before it takes the name), bounded in size."""
    temp = f"{TEMP_PREFIX}{secrets.token_hex(8)}"
    fd = walk.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    written = 0
    try:
        with os.fdopen(fd, "wb") as out:
            async for chunk in chunks:
                written += len(chunk)
                if written > MAX_UPLOAD_BYTES:
                    raise _too_large(field)
                out.write(chunk)
            out.flush()
            if mode is not None:
                os.fchmod(fd, mode)
            _own_fd(fd)
            os.utime(fd, (moment, moment))
        os.replace(temp, name, src_dir_fd=walk.fd, dst_dir_fd=walk.fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=walk.fd)
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
    record = sessions.of_path(request)
    raw = _require_path(request)
    parts = _check_writable(record, raw, "path")
    mode = _mode(request.query_params.get("mode"), default="644")
    with _walk(record, raw, parent_is_file=PARENT_NOT_DIR) as walk:
        name = _writable_name(walk, parts, raw, "path", create=True)
        moment = request.state.tenant.now().timestamp()
        await _spool(request.stream(), walk, name, "path", mode=mode, moment=moment)
    return no_content()


async def save_download(record: dict, name: str, source: str, moment: float) -> None:
    """Copy a finished download (Playwright's file ``source``, outside the session) to the session's
    ``/home/kernel/Downloads/<name>`` through the rooted walk, as the files API writes: a link a command of
    the session left there (the file's name, ``Downloads`` itself) is replaced or refused, never followed,
    so a download cannot become a write of the sandbox's user on the host. Failures raise ``ApiError``."""
    raw = "/home/kernel/Downloads/" + name
    parts = _parts(raw)
    if len(parts) != 4:  # a name holding "/" or only dots is no name of a file in Downloads
        raise invalid("not a file name", path="a download's name")
    # Playwright's file is in the browser's downloads directory, which the browser's user writes: opened
    # from the directory above it, never through a link, and only as a regular file (a FIFO planted
    # there must not block the event loop on its open).
    where = Path(source)
    fd = rooted.open_regular(where.parent.parent, (where.parent.name, where.name))
    if fd is None:
        raise invalid("not a regular file", path="a download's file")
    with os.fdopen(fd, "rb") as data:

        async def chunks():
            while chunk := data.read(CHUNK):
                yield chunk

        with _walk(record, raw, parent_is_file=PARENT_NOT_DIR) as walk:
            target = _writable_name(walk, parts, raw, "path", create=True)
            await _spool(chunks(), walk, target, "path", mode=0o644, moment=moment)


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
    record = sessions.of_path(request)
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
        fields = [f"files[{i}].dest_path" for i in range(len(dests))]
        targets = [_check_writable(record, d, f) for d, f in zip(dests, fields, strict=True)]
        for index, (upload, dest, parts) in enumerate(zip(uploads, dests, targets, strict=True)):
            with _walk(record, dest, fields[index], parent_is_file=PARENT_NOT_DIR) as walk:
                name = _writable_name(walk, parts, dest, fields[index], create=True)
                moment = request.state.tenant.now().timestamp()
                await _spool(
                    _upload_chunks(upload), walk, name, f"files[{index}].file", mode=None, moment=moment
                )
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


def _at(top: int, parts: tuple[str, ...], action) -> None:
    """``action(directory fd, name)`` on ``top/parts``, never through a symlink."""
    with rooted.Walk(top, links=False) as walk:
        action(walk.fd, walk.locate(parts, follow_last=False))


def extract_zip(archive, dest: rooted.Walk, dest_parts: list[str], moment: float) -> None:
    """Check every entry, then extract into ``dest_parts`` (created if missing) of the walk's top
    (runs in a thread). Nothing is written through a symlink: one on the way refuses the archive."""
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
        dest.into(dest_parts, create=True)
        written: list[tuple[str, ...]] = []
        budget = [MAX_EXTRACT_BYTES]
        try:
            for info, parts in planned:
                if parts:
                    _extract_entry(bundle, info, parts, dest.fd, written, budget)
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
            _remove(dest.fd, written)
            raise BadZip(f"the archive could not be extracted: {exc}") from None
        except BadZip:
            _remove(dest.fd, written)
            raise
        for parts in written:
            with contextlib.suppress(OSError, rooted.Outside, rooted.NotADir):
                _at(
                    dest.fd,
                    parts,
                    lambda d, n: os.utime(n, (moment, moment), dir_fd=d, follow_symlinks=False),
                )


def _extract_entry(bundle, info, parts, top: int, written: list, budget: list[int]) -> None:
    """One entry under ``top``: its directories made (and noted in ``written``), then its file, never
    through a symlink; ``budget`` holds the bytes left to extract."""
    with rooted.Walk(top, links=False, on_create=_own_at) as entry:
        try:
            name = entry.locate(parts, create=True, follow_last=False)
            if info.is_dir():
                entry.mkdir(name)
                return
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISDIR(entry.lstat(name).st_mode):
                    raise BadZip(f"entry {info.filename!r} collides with a directory", info.filename)
            # O_NONBLOCK: a FIFO placed there fails (ENXIO) rather than wait for a reader.
            fd = entry.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK)
        except (rooted.Outside, rooted.NotADir):
            raise BadZip(f"entry {info.filename!r} would leave the target directory", info.filename) from None
        finally:
            written.extend(entry.created)
    with os.fdopen(fd, "wb") as out, bundle.open(info) as source:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadZip(f"entry {info.filename!r} collides with a special file", info.filename)
        written.append(tuple(parts))
        os.set_blocking(fd, True)
        while chunk := source.read(CHUNK):
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise BadZip("the archive extracts to more than 100 MiB (its headers understate it)")
            out.write(chunk)
        out.flush()
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.fchmod(fd, mode | 0o600)
        _own_fd(fd)


def _remove(top: int, written: list[tuple[str, ...]]) -> None:
    def remove(directory: int, name: str) -> None:
        if stat.S_ISDIR(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode):
            os.rmdir(name, dir_fd=directory)
        else:
            os.unlink(name, dir_fd=directory)

    for parts in reversed(written):
        with contextlib.suppress(OSError, rooted.Outside, rooted.NotADir):
            _at(top, parts, remove)


@endpoint
async def upload_zip(request: Request):
    record = sessions.of_path(request)
    form = await _form(request, max_files=1, field="zip_file")
    try:
        dest_raw = form.get("dest_path")
        if not isinstance(dest_raw, str) or not dest_raw:
            raise invalid("dest_path is required", dest_path="the directory to extract into")
        dest_parts = _parts(dest_raw, "dest_path")
        with _walk(record, dest_raw, "dest_path", parent_is_file=PARENT_NOT_DIR) as walk:
            try:
                name = walk.locate(dest_parts)
                if name is not None and not stat.S_ISDIR(walk.lstat(name).st_mode):
                    raise invalid(f"{dest_raw} is not a directory", dest_path="must be a directory")
            except FileNotFoundError:
                pass  # created with its missing parents
        upload = form.get("zip_file")
        if not isinstance(upload, UploadFile):
            raise invalid("zip_file is required", zip_file="upload the archive as 'zip_file'")
        if upload.size is not None and upload.size > MAX_UPLOAD_BYTES:
            raise _too_large("zip_file")
        try:
            await extract_into(record, dest_raw, upload.file, request.state.tenant.now().timestamp())
        except BadZip as exc:
            raise invalid(f"the zip archive was refused: {exc}", zip_file=str(exc)) from None
    finally:
        await form.close()
    return no_content()


async def extract_into(record: dict, dest_raw: str, archive, moment: float, field: str = "dest_path") -> None:
    """Extract ``archive`` into the session directory ``dest_raw`` (created if missing), never through a
    symlink (``extract_zip``); BadZip when an entry is refused."""
    dest_parts = _parts(dest_raw, field)
    with _walk(record, dest_raw, field, parent_is_file=PARENT_NOT_DIR) as walk:
        await asyncio.to_thread(extract_zip, archive, walk, dest_parts, moment)


def _zip_time(seconds: float) -> tuple[int, ...]:
    moment = tuple(time.localtime(seconds)[:6])
    return min(max(moment, (1980, 1, 1, 0, 0, 0)), (2107, 12, 31, 23, 59, 59))  # what a zip can hold


def _zip_directory(top: int) -> tempfile.SpooledTemporaryFile:
    """The tree under ``top`` as a zip; symlinks and special files are left out, never followed."""
    found = sorted(rooted.entries(top, recursive=True, limit=MAX_DIR_ZIP_ENTRIES + 1), key=lambda e: e[0])
    if len(found) > MAX_DIR_ZIP_ENTRIES:
        raise BadZip(f"the directory holds more than {MAX_DIR_ZIP_ENTRIES} entries")
    total = sum(st.st_size for _, st in found if stat.S_ISREG(st.st_mode))
    if total > MAX_UPLOAD_BYTES:
        raise BadZip(f"the directory holds {total} bytes; at most {MAX_UPLOAD_BYTES} can be zipped")
    buffer = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)  # noqa: SIM115 - returned open
    copied = 0
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for parts, st in found:
            is_dir = stat.S_ISDIR(st.st_mode)
            info = zipfile.ZipInfo("/".join(parts) + ("/" if is_dir else ""), _zip_time(st.st_mtime))
            info.external_attr = (st.st_mode & 0xFFFF) << 16 | (0x10 if is_dir else 0)
            if is_dir:
                info.compress_size = info.file_size = info.CRC = 0
                bundle.mkdir(info)
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            try:
                with rooted.Walk(top, links=False) as walk:
                    name = walk.locate(parts, follow_last=False)
                    fd = walk.open(name, os.O_RDONLY | os.O_NONBLOCK)
            except (OSError, rooted.Outside, rooted.NotADir):
                continue  # gone, or changed into something else, since the listing
            with os.fdopen(fd, "rb") as source:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                info.compress_type = zipfile.ZIP_DEFLATED
                with bundle.open(info, "w") as out:
                    while chunk := source.read(CHUNK):
                        copied += len(chunk)
                        if copied > MAX_UPLOAD_BYTES:
                            raise BadZip(f"the directory holds more than {MAX_UPLOAD_BYTES} bytes to zip")
                        out.write(chunk)
    buffer.seek(0)
    return buffer


@endpoint
async def download_dir_zip(request: Request):
    record, raw, parts = _read_target(request)
    with _walk(record, raw) as walk:
        _into_directory(walk, parts, raw)
        try:
            buffer = await asyncio.to_thread(_zip_directory, walk.fd)
        except BadZip as exc:
            raise invalid(str(exc), path="the directory is too large to download as a zip") from None

    async def body():
        try:
            while chunk := buffer.read(CHUNK):
                yield chunk
        finally:
            buffer.close()

    name = (parts[-1] if parts else "root") + ".zip"
    return StreamingResponse(
        body(),
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


async def _json_target(request: Request) -> tuple[dict, dict, str, list[str]]:
    """What a change sent as JSON names: the session (a change is activity), the body, its ``path`` and
    that path's parts."""
    record = sessions.of_path(request)
    body = await read_json(request)
    raw = body.get("path")
    return record, body, raw, _parts(raw)


@endpoint
async def create_directory(request: Request):
    record, body, raw, parts = await _json_target(request)
    mode = _mode(body.get("mode"), default="755")
    with _walk(record, raw, parent_is_file="{} is a file") as walk:
        name = walk.locate(parts, create=True)
        if name is None:
            if walk.names:  # a link to a directory; the session's own / keeps its mode
                os.fchmod(walk.fd, mode)
            return no_content()
        walk.mkdir(name)
        try:
            walk.enter(name)
        except rooted.NotADir:
            raise invalid(f"{raw} is a file", path="a file already has this name") from None
        os.fchmod(walk.fd, mode)
        _own_fd(walk.fd)
    return no_content()


@endpoint
async def delete_directory(request: Request):
    record, _, raw, parts = await _json_target(request)
    with _walk(record, raw) as walk:
        name = walk.locate(parts, follow_last=False)
        if name is None:
            raise invalid("/ cannot be deleted", path="the root directory cannot be deleted")
        if not stat.S_ISDIR(walk.lstat(name).st_mode):
            raise invalid(f"{raw} is not a directory", path="must be a directory")
        await asyncio.to_thread(rooted.remove_tree, walk.fd, name)
    return no_content()


@endpoint
async def delete_file(request: Request):
    record, _, raw, parts = await _json_target(request)
    with _walk(record, raw) as walk:
        name = walk.locate(parts, follow_last=False)
        if name is None or stat.S_ISDIR(walk.lstat(name).st_mode):
            raise invalid(f"{raw} is a directory", path="is a directory; use delete_directory")
        os.unlink(name, dir_fd=walk.fd)
    return no_content()


@endpoint
async def move(request: Request):
    record = sessions.of_path(request)
    body = await read_json(request)
    src_raw, dest_raw = body.get("src_path"), body.get("dest_path")
    src_parts = _parts(src_raw, "src_path")
    with _walk(record, src_raw, "src_path") as src:
        src_name = src.locate(src_parts, follow_last=False)
        src_st = src.lstat(src_name)
        dest_parts = _parts(dest_raw, "dest_path")
        if src_name is None or not dest_parts:
            raise invalid("/ cannot be moved", src_path="the root directory cannot be moved or replaced")
        if src_parts == dest_parts:
            return no_content()
        with _walk(record, dest_raw, "dest_path") as dest:
            try:
                dest_name = dest.locate(dest_parts, follow_last=False)
            except (FileNotFoundError, rooted.NotADir):
                raise file_not_found(_service(dest_parts[:-1])) from None
            src_is_dir = stat.S_ISDIR(src_st.st_mode)
            if src_is_dir and dest_parts[: len(src_parts)] == src_parts:
                raise invalid("a directory cannot move into itself", dest_path="is inside src_path")
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISDIR(dest.lstat(dest_name).st_mode) and not src_is_dir:
                    raise invalid(f"{dest_raw} is a directory", dest_path="a directory has this name")
            try:
                os.replace(src_name, dest_name, src_dir_fd=src.fd, dst_dir_fd=dest.fd)
            except OSError as exc:
                raise _refused_move(exc, dest_raw) from None
    return no_content()


def _refused_move(exc: OSError, dest_raw: str) -> Exception:
    """Why the kernel refused a rename the checks let through (a link on the way, a tree that changed)."""
    if exc.errno == errno.EINVAL:
        return invalid("a directory cannot move into itself", dest_path="is inside src_path")
    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
        return invalid(f"{dest_raw} is not empty", dest_path="a non-empty directory has this name")
    if exc.errno == errno.EISDIR:
        return invalid(f"{dest_raw} is a directory", dest_path="a directory has this name")
    if exc.errno == errno.ENOTDIR:
        return invalid(f"{dest_raw} is a file", dest_path="a file has this name")
    return exc


@endpoint
async def set_file_permissions(request: Request):
    record, body, raw, parts = await _json_target(request)
    with _walk(record, raw) as walk:
        name = walk.locate(parts)
        walk.lstat(name)  # 404 before the other checks
        mode = _mode(body.get("mode"))
        if mode is None:
            raise invalid("mode is required", mode="an octal string like 644")
        for key in ("owner", "group"):
            if body.get(key) is not None and not isinstance(body[key], str | int):
                raise invalid(f"{key} must be a name or an id", **{key: "a name or a numeric id"})
        if name is None:
            if not walk.names:
                raise invalid("/ keeps its permissions", path="the root directory's mode cannot be changed")
            os.fchmod(walk.fd, mode)
            return no_content()
        # O_PATH opens anything (a socket, a file its mode bars) without reading it; chmod through
        # /proc/self/fd changes exactly that inode, as fchmodat(AT_SYMLINK_NOFOLLOW) would.
        fd = walk.open(name, os.O_PATH)
        try:
            if stat.S_ISLNK(os.fstat(fd).st_mode):  # swapped in since it was followed
                raise rooted.Outside(walk.path(name))
            os.chmod(f"/proc/self/fd/{fd}", mode)
        finally:
            os.close(fd)
    return no_content()


# Watches -------------------------------------------------------------------------------------------

_END = object()


@dataclass(eq=False)
class WatchReader:
    """One open events stream of a watch, and how many events it has not taken yet."""

    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    pending: int = 0


@dataclass
class Watch:
    id: str
    path: str
    parts: list[str]
    recursive: bool
    snapshot: dict[str, tuple]
    held: deque = field(default_factory=lambda: deque(maxlen=WATCH_HELD))
    readers: set[WatchReader] = field(default_factory=set)
    taken: asyncio.Event = field(default_factory=asyncio.Event)  # a reader took an event, or left
    closed: bool = False
    task: asyncio.Task | None = None

    def publish(self, event) -> None:
        if self.readers:
            for reader in list(self.readers):
                reader.queue.put_nowait(event)
                reader.pending += 1
        elif event is not _END:
            self.held.append(event)

    async def room(self) -> None:
        """Wait until every reader has at most ``WATCH_HELD`` events to take: the poll waits meanwhile,
        and its next diff covers the wait (as an fsnotify queue that overflowed would), instead of the
        sandbox keeping every event for a reader that does not read."""
        while any(reader.pending > WATCH_HELD for reader in self.readers):
            self.taken.clear()
            await self.taken.wait()

    async def take(self, reader: WatchReader):
        event = await reader.queue.get()
        reader.pending -= 1
        self.taken.set()
        return event

    def leave(self, reader: WatchReader) -> None:
        self.readers.discard(reader)
        self.taken.set()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for reader in list(self.readers):
            reader.queue.put_nowait(_END)
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()


def watches_of(record: dict) -> dict[str, Watch]:
    return record.setdefault("_watches", {})


def after_restart(tenant: Tenant) -> None:
    """Watches do not outlive the sandbox (``store.after_load``): a client watches again."""
    for record in tenant.table("browsers").values():
        record.pop("_watches", None)


def snapshot(record: dict, parts: list[str], recursive: bool) -> dict[str, tuple]:
    """Service path → (is_dir, inode, size, mtime_ns) of everything under the directory ``parts``
    names (bounded; empty when it is gone), never through a symlink below it."""
    base = _service(parts)
    found: dict[str, tuple] = {}
    try:
        with _top(record) as top, rooted.Walk(top) as walk:
            walk.into(parts)
            for names, st in rooted.entries(walk.fd, recursive=recursive, limit=MAX_WATCH_ENTRIES):
                if names[-1].startswith(TEMP_PREFIX):
                    continue
                is_dir = stat.S_ISDIR(st.st_mode)
                found[_join(base, "/".join(names))] = (is_dir, st.st_ino, st.st_size, st.st_mtime_ns)
    except (OSError, rooted.Outside, rooted.NotADir):
        return {}
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
    try:
        while not watch.closed:
            await asyncio.sleep(WATCH_INTERVAL)
            await watch.room()
            if not sessions.is_active(tenant, record):
                watch.close()
                watches_of(record).pop(watch.id, None)
                return
            current = await asyncio.to_thread(snapshot, record, watch.parts, watch.recursive)
            for event in diff(watch.snapshot, current):
                watch.publish(event)
            watch.snapshot = current
    except asyncio.CancelledError:
        raise
    except Exception:  # a vanished tree mid-scan: end the watch rather than leave streams hanging
        watch.close()


@endpoint
async def create_watch(request: Request):
    record, body, raw, parts = await _json_target(request)
    with _walk(record, raw) as walk:
        _into_directory(walk, parts, raw)
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
        path=_service(parts),
        parts=parts,
        recursive=recursive,
        snapshot=snapshot(record, parts, recursive),
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
    record = sessions.get_session(request, request.path_params["id"])
    watch = _watch(request, record)
    reader = WatchReader()

    async def frames():
        try:
            # Registered when the stream starts, not before: a reader of a response that never ran would
            # hold the watch's polls back for good.
            if watch.closed:
                return
            while watch.held:
                reader.queue.put_nowait(watch.held.popleft())
                reader.pending += 1
            watch.readers.add(reader)
            while True:
                event = await watch.take(reader)
                if event is _END:
                    return
                yield None, event
        finally:
            watch.leave(reader)

    return sse_response(request, frames())


@endpoint
async def delete_watch(request: Request):
    record = sessions.of_path(request)
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
        for relative, (content, minutes_ago) in DEMO_FILES.items():
            moment = (now - timedelta(minutes=minutes_ago)).timestamp()
            with _top(record) as top, rooted.Walk(top, links=False, on_create=_own_at) as walk:
                name = walk.locate(relative.split("/"), create=True, follow_last=False)
                fd = walk.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK)
                with os.fdopen(fd, "wb") as out:
                    out.write(content)
                    out.flush()
                    _own_fd(fd)
                    os.utime(fd, (moment, moment))


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
