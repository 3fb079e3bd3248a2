"""The files pane of a session (notes §4): browse directories, file details with a preview, download a
file or a directory (as a zip), create and delete directories, move or rename, delete a file, upload
files, upload a zip extracted into a directory (with a progress bar, static/js/files.js), and watch a
directory live.

A watch is created on the service (``POST fs/watch``) and relayed through ``console.live`` (one upstream
per watch, frames numbered by the hub); "Stop watching" deletes it on the service, which ends the stream.
Downloads stream from the service through the console: the browser never calls the service.
"""

from __future__ import annotations

import posixpath
import re

from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods
from django_htmx.http import trigger_client_event

from console.accounts.audit import audited
from console.browsers.panes import common
from console.browsers.panes.forms import (
    DirectoryForm,
    MoveForm,
    UploadForm,
    WatchForm,
    ZipUploadForm,
    check_path,
    max_upload_bytes,
)
from console.live import Channel, Frame, relay_response, service_stream
from console.service import Conflict, Invalid, NotFound, ServiceError, browser_files
from console.service.sse import ServerEvent
from console.web import downloads
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.render import render

HOME = "/home/kernel"
PREVIEW_BYTES = 64 * 1024


def _path(request, name: str = "path", default: str = HOME) -> str:
    """A path from the query string, or ``default``; an unusable one is a 404 (it names nothing)."""
    raw = request.GET.get(name) or default
    try:
        return check_path(raw)
    except Exception:
        raise Http404("Not a path of the session") from None


def _with_path(url: str, path: str) -> str:
    return f"{url}?{urlencode({'path': path})}"


def crumbs(request, session_id: str, path: str) -> list[dict]:
    base = common.url(request, "files", session_id)
    items = [{"name": "/", "url": _with_path(base, "/")}]
    current = ""
    for part in [p for p in path.split("/") if p]:
        current += "/" + part
        items.append({"name": part, "url": _with_path(base, current)})
    return items


def _rows(request, session_id: str, entries: list[browser_files.FileInfo]) -> list[dict]:
    sid = session_id
    rows = []
    for entry in sorted(entries, key=lambda e: (not e.is_dir, (e.name or "").lower())):
        path = entry.path or ""
        rows.append(
            {
                "entry": entry,
                "open_url": _with_path(common.url(request, "files" if entry.is_dir else "file", sid), path),
                "download_url": _with_path(
                    common.url(request, "dir-zip" if entry.is_dir else "download", sid), path
                ),
                "move_url": _with_path(common.url(request, "move", sid), path),
                "delete_url": _with_path(common.url(request, "delete", sid), path),
            }
        )
    return rows


async def _listing(request, session, path: str, **forms) -> dict:
    sid = session.session_id
    error = None
    entries: list[browser_files.FileInfo] = []
    try:
        entries = await browser_files.list_files(request.service, sid, path)
    except NotFound:
        error = f"{path} does not exist."
    except Invalid as exc:
        error = exc.message
    parent = posixpath.dirname(path.rstrip("/")) or "/"
    return {
        "session": session,
        "path": path,
        "error": error,
        "rows": _rows(request, sid, entries),
        "crumbs": crumbs(request, sid, path),
        "parent_url": _with_path(common.url(request, "files", sid), parent) if path != "/" else None,
        "files_url": common.url(request, "files", sid),
        "mkdir_url": common.url(request, "mkdir", sid),
        "upload_url": common.url(request, "upload", sid),
        "upload_zip_url": common.url(request, "upload-zip", sid),
        "watch_url": common.url(request, "watch", sid),
        "zip_url": _with_path(common.url(request, "dir-zip", sid), path),
        "mkdir_form": forms.get("mkdir_form")
        or DirectoryForm(initial={"path": path.rstrip("/") + "/new-folder"}),
        "upload_form": forms.get("upload_form") or UploadForm(initial={"directory": path}),
        "zip_form": forms.get("zip_form") or ZipUploadForm(initial={"dest_path": path}),
        "watch_form": forms.get("watch_form") or WatchForm(initial={"path": path, "recursive": True}),
        "max_bytes": max_upload_bytes(),
        "live": not session.ended,
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def file_list(request, session_id: str):
    session = await common.get_session(request, session_id)
    context = await _listing(request, session, _path(request))
    return render(request, "browsers/panes/files.html", context, partial="files-pane")


def _refused(form, exc: ServiceError, field: str, field_map: dict | None = None) -> None:
    if isinstance(exc, Invalid):
        apply_service_errors(form, exc, field_map)
    elif isinstance(exc, NotFound):
        form.add_error(field, f"Not found: {exc.message}")
    else:
        form.add_error(field, exc.message)


def _upload_refused(form, exc: ServiceError, field: str, what: str, field_map: dict | None = None) -> bool:
    """Put an upload's refusal on the form (as ``_refused``, and a 413 as too large); False: not one."""
    if isinstance(exc, Invalid | NotFound | Conflict):
        _refused(form, exc, field, field_map)
    elif exc.status == 413:
        form.add_error(field, f"The service refused {what} as too large: {exc.message}")
    else:
        return False
    return True


@require_http_methods(["POST"])
@org_view("operator")
async def make_directory(request, session_id: str):
    session = await common.get_session(request, session_id)
    form = DirectoryForm(request.POST)
    ok = False
    if form.is_valid():
        path = form.cleaned_data["path"]
        try:
            async with audited(request, "browser.fs.mkdir", target_id=session_id, detail=path):
                await browser_files.create_directory(request.service, session_id, path)
        except (Invalid, NotFound, Conflict) as exc:
            _refused(form, exc, "path")
        else:
            ok = True
            messages.success(request, f"Created {path}.")
    where = _parent(request)
    return await _after(request, session, where, ok, mkdir_form=None if ok else form)


def _parent(request) -> str:
    try:
        return check_path(request.POST.get("current") or HOME)
    except Exception:
        return HOME


async def _after(request, session, where: str, ok: bool, **forms):
    if ok and not request.htmx:
        return HttpResponseRedirect(_with_path(common.url(request, "files", session.session_id), where))
    context = await _listing(request, session, where, **forms)
    return render(request, "browsers/panes/files.html", context, partial="files-pane")


@require_http_methods(["POST"])
@org_view("operator")
async def upload(request, session_id: str):
    session = await common.get_session(request, session_id)
    form = UploadForm(request.POST, request.FILES)
    ok = False
    if form.is_valid():
        items = form.destinations()
        names = ", ".join(name for _, name, _ in items)
        detail = f"{form.cleaned_data['directory']}: {names}"
        try:
            async with audited(request, "browser.fs.upload", target_id=session_id, detail=detail):
                await browser_files.upload(request.service, session_id, items)
        except ServiceError as exc:
            if not _upload_refused(form, exc, "files", "the upload", {"files": "files"}):
                raise
        else:
            ok = True
            messages.success(request, f"Uploaded {len(items)} file{'s' if len(items) != 1 else ''}.")
    where = form.cleaned_data.get("directory") if ok else _parent(request)
    return await _after(request, session, where, ok, upload_form=None if ok else form)


@require_http_methods(["POST"])
@org_view("operator")
async def upload_zip(request, session_id: str):
    """The zip is read by Django's upload handlers (a temp file once large), checked, then streamed on."""
    session = await common.get_session(request, session_id)
    form = ZipUploadForm(request.POST, request.FILES)
    ok = False
    if form.is_valid():
        upload_file = form.cleaned_data["zip_file"]
        dest = form.cleaned_data["dest_path"]
        detail = f"{upload_file.name} -> {dest} ({upload_file.size} bytes)"
        try:
            async with audited(request, "browser.fs.upload_zip", target_id=session_id, detail=detail):
                await browser_files.upload_zip(
                    request.service, session_id, upload_file.file, dest_path=dest, filename=upload_file.name
                )
        except ServiceError as exc:
            if not _upload_refused(form, exc, "zip_file", "the archive"):
                raise
        else:
            ok = True
            messages.success(request, f"Extracted {upload_file.name} into {dest}.")
    where = form.cleaned_data.get("dest_path") if ok else _parent(request)
    response = await _after(request, session, where, ok, zip_form=None if ok else form)
    if ok and request.htmx:
        trigger_client_event(response, "files-changed")
    return response


@require_http_methods(["GET", "POST"])
@org_view("operator")
async def move(request, session_id: str):
    session = await common.get_session(request, session_id)
    src = request.GET.get("path") or request.POST.get("src_path") or ""
    try:
        src = check_path(src)
    except Exception:
        raise Http404("Not a path of the session") from None
    form = MoveForm(request.POST or None, initial={"src_path": src, "dest_path": src})
    if request.method == "POST" and form.is_valid():
        src, dest = form.cleaned_data["src_path"], form.cleaned_data["dest_path"]
        try:
            async with audited(request, "browser.fs.move", target_id=session_id, detail=f"{src} -> {dest}"):
                await browser_files.move(request.service, session_id, src, dest)
        except (Invalid, NotFound, Conflict) as exc:
            _refused(form, exc, "dest_path")
        else:
            messages.success(request, f"Moved {src} to {dest}.")
            target = _with_path(common.url(request, "files", session_id), posixpath.dirname(dest) or "/")
            return common.redirect(request, target)
    context = {
        "session": session,
        "form": form,
        "src": form["src_path"].value() or src,
        "move_url": common.url(request, "move", session_id),
        "back_url": _with_path(common.url(request, "files", session_id), posixpath.dirname(src) or "/"),
    }
    return render(request, "browsers/panes/file_move.html", context, partial="file-move")


@require_http_methods(["GET", "POST"])
@org_view("operator")
async def delete(request, session_id: str):
    """Confirm, then delete the file (or the directory with everything in it)."""
    session = await common.get_session(request, session_id)
    path = _path(request, default="")
    if path == "/":
        raise Http404("The root directory cannot be deleted")
    try:
        info = await browser_files.file_info(request.service, session_id, path)
    except (NotFound, Invalid):
        raise Http404("No such file") from None
    back = _with_path(common.url(request, "files", session_id), posixpath.dirname(path) or "/")
    if request.method == "POST":
        action = "browser.fs.rmdir" if info.is_dir else "browser.fs.delete"
        try:
            async with audited(request, action, target_id=session_id, detail=path):
                if info.is_dir:
                    await browser_files.delete_directory(request.service, session_id, path)
                else:
                    await browser_files.delete_file(request.service, session_id, path)
        except (Invalid, NotFound, Conflict) as exc:
            messages.error(request, f"{path} could not be deleted: {exc.message}")
        else:
            messages.success(request, f"Deleted {path}.")
        return common.redirect(request, back)
    context = {
        "session": session,
        "info": info,
        "delete_url": _with_path(common.url(request, "delete", session_id), path),
        "back_url": back,
    }
    return render(request, "browsers/panes/file_delete.html", context)


# Reading -------------------------------------------------------------------------------------------


def _looks_textual(data: bytes) -> bool:
    if b"\x00" in data[:4096]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(data) - 4  # a character cut at the end of the preview
    return True


@require_http_methods(["GET"])
@org_view("viewer")
async def file_detail(request, session_id: str):
    """A file's details and, for text, a preview of its start."""
    session = await common.get_session(request, session_id)
    path = _path(request, default="")
    try:
        info = await browser_files.file_info(request.service, session_id, path)
    except (NotFound, Invalid):
        raise Http404("No such file") from None
    if info.is_dir:
        return HttpResponseRedirect(_with_path(common.url(request, "files", session_id), path))
    preview = None
    if not session.ended:
        async with browser_files.read_file(request.service, session_id, path) as (_, chunks):
            head = bytearray()
            async for chunk in chunks:
                head += chunk
                if len(head) >= PREVIEW_BYTES:
                    break
        head = bytes(head[:PREVIEW_BYTES])
        if _looks_textual(head):
            preview = {"text": head.decode("utf-8", "replace"), "cut": (info.size_bytes or 0) > PREVIEW_BYTES}
    context = {
        "session": session,
        "info": info,
        "preview": preview,
        "crumbs": crumbs(request, session_id, posixpath.dirname(path) or "/"),
        "download_url": _with_path(common.url(request, "download", session_id), path),
        "move_url": _with_path(common.url(request, "move", session_id), path),
        "delete_url": _with_path(common.url(request, "delete", session_id), path),
        "back_url": _with_path(common.url(request, "files", session_id), posixpath.dirname(path) or "/"),
    }
    return render(request, "browsers/panes/file.html", context)


def _filename(path: str, suffix: str = "") -> str:
    name = posixpath.basename(path.rstrip("/")) or "root"
    return (re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "download") + suffix


async def _stream(opener, filename: str, content_type: str):
    (reply, chunks), stack = await downloads.opened(opener, "file or directory", missing=(NotFound, Invalid))
    length = reply.headers.get("content-length")
    return downloads.attachment(chunks, stack, filename=filename, content_type=content_type, length=length)


@require_http_methods(["GET"])
@org_view("viewer")
async def download(request, session_id: str):
    path = _path(request, default="")
    opener = browser_files.read_file(request.service, session_id, path)
    return await _stream(opener, _filename(path), "application/octet-stream")


@require_http_methods(["GET"])
@org_view("viewer")
async def download_zip(request, session_id: str):
    path = _path(request, default="")
    opener = browser_files.download_dir_zip(request.service, session_id, path)
    return await _stream(opener, _filename(path, ".zip"), "application/zip")


# Watches -------------------------------------------------------------------------------------------


@require_http_methods(["POST"])
@org_view("operator")
async def watch_start(request, session_id: str):
    session = await common.get_session(request, session_id)
    form = WatchForm(request.POST)
    if form.is_valid():
        path, recursive = form.cleaned_data["path"], form.cleaned_data["recursive"]
        try:
            async with audited(request, "browser.fs.watch", target_id=session_id, detail=path) as entry:
                watch_id = await browser_files.watch(request.service, session_id, path, recursive=recursive)
                if watch_id:
                    entry.target_id, entry.detail = watch_id, f"session={session_id} {path}"
        except (Invalid, NotFound, Conflict) as exc:
            _refused(form, exc, "path")
        else:
            if watch_id:
                target = (
                    common.url(request, "watch-view", session_id, watch_id=watch_id)
                    + "?"
                    + urlencode({"path": path, "recursive": "1" if recursive else ""})
                )
                return common.redirect(request, target)
            form.add_error(None, "The service started no watch (it returned no watch id).")
    context = await _listing(request, session, _parent(request), watch_form=form)
    return render(request, "browsers/panes/files.html", context, partial="files-pane")


@require_http_methods(["GET"])
@org_view("viewer")
async def watch_view(request, session_id: str, watch_id: str):
    session = await common.get_session(request, session_id)
    context = {
        "session": session,
        "watch_id": watch_id,
        "path": request.GET.get("path", ""),
        "recursive": bool(request.GET.get("recursive")),
        "stream_url": common.url(request, "watch-stream", session_id, watch_id=watch_id),
        "stop_url": common.url(request, "watch-stop", session_id, watch_id=watch_id),
        "files_url": common.url(request, "files", session_id),
        "live": not session.ended,
    }
    return render(request, "browsers/panes/watch.html", context)


def watch_renderer(org_slug: str, session_id: str):
    def render_event(event) -> Frame | None:
        if not isinstance(event, ServerEvent):
            return None
        item = browser_files.watch_event_from_event(event)
        if item is None or not item.type:
            return None
        context = {"event": item, "at": timezone.now()}  # the stream carries no time: when it arrived
        html = render_to_string("browsers/panes/watch.html#watch-row", context)
        return Frame(html=html, event="fs")

    return render_event


@require_http_methods(["GET"])
@org_view("viewer")
async def watch_stream(request, session_id: str, watch_id: str):
    svc = common.plain_service(request)
    channel = Channel(
        key=("fswatch", request.org.pk, svc.project, session_id, watch_id),
        open=service_stream(svc, browser_files.watch_events_path(session_id, watch_id)),
        render=watch_renderer(request.org.slug, session_id),
        replay_to_new_viewers=True,
        ended_message="The watch has stopped.",
    )
    return relay_response(request, channel)


@require_http_methods(["POST"])
@org_view("operator")
async def watch_stop(request, session_id: str, watch_id: str):
    try:
        async with audited(request, "browser.fs.unwatch", target_id=watch_id, detail=f"session={session_id}"):
            await browser_files.stop_watch(request.service, session_id, watch_id)
    except NotFound:
        messages.info(request, "The watch had already stopped.")
    else:
        messages.success(request, "Stopped watching.")
    path = request.POST.get("path") or HOME
    try:
        path = check_path(path)
    except Exception:
        path = HOME
    return common.redirect(request, _with_path(common.url(request, "files", session_id), path))
