"""Extensions (notes §12): multipart upload of a zipped unpacked extension, metadata, download, delete.

Choices where the notes leave room:

- The multipart fields are ``file`` (required) and ``name`` (optional; unique among the project's live
  extensions, else 409 ``extension_name_taken``).
- The archive must be a zip (400, detail ``file``) with ``manifest.json`` at its root or inside a single
  top-level folder, holding a JSON object; entries with absolute paths, drive letters or ``..``
  components are refused (path traversal), and so is an empty archive. Over ``MAX_UPLOAD_BYTES`` → 413.
- A tenant keeps at most ``SANDBOX_MAX_EXTENSIONS`` extensions and ``SANDBOX_MAX_EXTENSION_BYTES`` of
  archives (``quotas.py``; 403 ``insufficient_plan`` past either, nothing stored).
- ``size_bytes`` is the archive's size and ``checksum`` the sha256 hex of its bytes.
- ``last_used_at`` stays null until a browser or pool loads the extension (``mark_used``).
- DELETE removes the extension from lists and lookups (its name can be reused); pools that still list
  its id keep it, like sessions keep a deleted proxy's id.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from datetime import timedelta
from urllib.parse import urlsplit

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from console.sandbox.core import quotas
from console.sandbox.core.errors import ApiError, conflict, invalid
from console.sandbox.core.http import (
    endpoint,
    find,
    no_content,
    ok,
    paginate,
    project_of,
    scoped,
    text_filter,
)
from console.sandbox.core.state import Tenant, new_id, rfc3339

TABLE = "extensions"
MAX_UPLOAD_BYTES = 100 * 1024 * 1024
# What an archive may unpack to: the sandbox unpacks it itself onto its own disk when a session with the
# extension starts, so these are checked at upload (and again before unpacking), by the entries' declared
# sizes (zipfile never reads an entry past its declared size). The bounds of the files API's upload_zip.
MAX_EXTRACT_BYTES = 100 * 1024 * 1024
MAX_ENTRIES = 10_000
NAME_MAX = 255
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._ -]*$")
_DRIVE = re.compile(r"^[A-Za-z]:")


class BadArchive(ValueError):
    """Why an uploaded file is not a usable extension archive (the message is shown to operators)."""


def validate_archive(content: bytes) -> dict:
    """Check a zip of an unpacked extension; return its parsed manifest.json or raise BadArchive."""
    if not content:
        raise BadArchive("the file is empty")
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except (zipfile.BadZipFile, ValueError):
        raise BadArchive("the file is not a zip archive") from None
    with archive:
        infos = archive.infolist()
        names = [info.filename for info in infos]
        if not names:
            raise BadArchive("the zip archive is empty")
        if len(infos) > MAX_ENTRIES:
            raise BadArchive(f"the archive has {len(infos)} entries; at most {MAX_ENTRIES}")
        declared = sum(info.file_size for info in infos)
        if declared > MAX_EXTRACT_BYTES:
            raise BadArchive(
                f"the archive would extract to {declared} bytes; at most {MAX_EXTRACT_BYTES} (100 MiB)"
            )
        for name in names:
            path = name.replace("\\", "/")
            if path.startswith("/") or _DRIVE.match(path) or ".." in path.split("/"):
                raise BadArchive(f"the archive has an unsafe entry {name!r} (absolute path or '..')")
        manifest = _manifest_path(names)
        if manifest is None:
            raise BadArchive(
                "manifest.json was not found at the root of the archive or in its single top folder"
            )
        try:
            data = json.loads(archive.read(manifest).decode("utf-8-sig"))
        except (ValueError, UnicodeDecodeError, zipfile.BadZipFile):
            raise BadArchive("manifest.json is not valid JSON") from None
    if not isinstance(data, dict):
        raise BadArchive("manifest.json must hold a JSON object")
    return data


def _manifest_path(names: list[str]) -> str | None:
    if "manifest.json" in names:
        return "manifest.json"
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) == 1 and all("/" in name for name in names):
        candidate = f"{tops.pop()}/manifest.json"
        if candidate in names:
            return candidate
    return None


def _valid_name(value: str) -> str:
    name = value.strip()
    if not name:
        raise invalid("name must not be blank", name="leave it out or give a name")
    if len(name) > NAME_MAX:
        raise invalid("name is too long", name=f"at most {NAME_MAX} characters")
    if not _NAME.match(name):
        raise invalid(
            "name has forbidden characters",
            name="letters, digits, spaces, dots, dashes and underscores, starting with a letter or digit",
        )
    return name


def store(tenant: Tenant, project: str, content: bytes, name: str | None) -> dict:
    record = {
        "id": new_id("ext"),
        "name": name,
        "created_at": rfc3339(tenant.now()),
        "size_bytes": len(content),
        "checksum": hashlib.sha256(content).hexdigest(),
        "last_used_at": None,
        "_content": content,
        "_project": project,
    }
    tenant.table(TABLE)[record["id"]] = record
    return record


def archive_of(tenant: Tenant, extension_id: str) -> bytes | None:
    """The uploaded zip of an extension of the tenant (the engine unpacks it for a session), if any."""
    record = tenant.table(TABLE).get(extension_id)
    return record["_content"] if record is not None else None


def mark_used(tenant: Tenant, extension_id: str) -> None:
    """Called by resources that load an extension into a browser."""
    record = tenant.table(TABLE).get(extension_id)
    if record is not None:
        record["last_used_at"] = rfc3339(tenant.now())


def render(record: dict) -> dict:
    return {key: value for key, value in record.items() if not key.startswith("_")}


def _unique(request: Request, name: str) -> None:
    if any(r.get("name") == name for r in scoped(request, TABLE)):
        raise conflict(f"an extension named {name!r} already exists", code="extension_name_taken")


@endpoint
async def list_extensions(request: Request):
    return paginate(request, text_filter(scoped(request, TABLE), request, "name"), render=render)


@endpoint
async def upload_extension(request: Request):
    tenant = request.state.tenant
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise invalid("send multipart/form-data", file="upload the zip as the multipart field 'file'")
    try:
        form = await request.form(max_files=1, max_fields=10)
    except (HTTPException, MultiPartException) as exc:  # Starlette's ways of saying "malformed body"
        why = str(getattr(exc, "detail", None) or getattr(exc, "message", None) or exc)[:200]
        raise invalid(
            "the multipart body could not be read", file=why or "malformed multipart body"
        ) from None
    try:
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise invalid("file is required", file="upload the zip of an unpacked extension as 'file'")
        raw_name = form.get("name")
        name = _valid_name(raw_name) if isinstance(raw_name, str) and raw_name != "" else None
        if name is not None:
            _unique(request, name)
        quotas.check_count(tenant, TABLE)
        if upload.size is not None and upload.size > MAX_UPLOAD_BYTES:
            raise _too_large()
        if upload.size is not None:
            quotas.check_extension_bytes(tenant, upload.size)
        content = await upload.read()
    finally:
        await form.close()
    if len(content) > MAX_UPLOAD_BYTES:
        raise _too_large()
    # Again after the read (an await): uploads running side by side all passed the first checks.
    quotas.check_count(tenant, TABLE)
    quotas.check_extension_bytes(tenant, len(content))
    try:
        validate_archive(content)
    except BadArchive as exc:
        raise invalid(f"not a usable extension archive: {exc}", file=str(exc)) from None
    record = store(tenant, project_of(request), content, name)
    return ok(render(record), status=201)


def _too_large() -> ApiError:
    limit = MAX_UPLOAD_BYTES // (1024 * 1024)
    return ApiError(
        413,
        "file_too_large",
        f"the archive exceeds the {limit} MiB upload limit",
        details=[{"code": "file", "message": f"at most {limit} MiB"}],
    )


@endpoint
async def get_metadata(request: Request):
    return ok(render(find(request, TABLE, request.path_params["id_or_name"], "extension")))


@endpoint
async def download_extension(request: Request):
    record = find(request, TABLE, request.path_params["id_or_name"], "extension")
    filename = re.sub(r"[^A-Za-z0-9._-]+", "-", record.get("name") or record["id"]) + ".zip"
    return Response(
        record["_content"],
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@endpoint
async def delete_extension(request: Request):
    record = find(request, TABLE, request.path_params["id_or_name"], "extension")
    record["_deleted"] = True
    record["_content"] = b""
    return no_content()


# Demo data ----------------------------------------------------------------------------------------


def demo_zip(manifest: dict, files: dict[str, str], folder: str | None = None) -> bytes:
    """A small real extension archive (also used by tests)."""
    buffer = io.BytesIO()
    prefix = f"{folder}/" if folder else ""
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(prefix + "manifest.json", json.dumps(manifest, indent=2))
        for path, text in files.items():
            archive.writestr(prefix + path, text)
    return buffer.getvalue()


DEMO_EXTENSIONS = [
    (
        "cookie-banner-dismisser",
        {
            "manifest_version": 3,
            "name": "Cookie Banner Dismisser",
            "version": "1.4.2",
            "description": "Accepts or rejects cookie consent banners so automations see the page.",
            "content_scripts": [{"matches": ["<all_urls>"], "js": ["content.js"], "run_at": "document_idle"}],
        },
        {
            "content.js": "for (const b of document.querySelectorAll('[id*=cookie] button')) {\n"
            "  if (/reject|decline/i.test(b.textContent)) { b.click(); break; }\n}\n"
        },
        None,
        True,
    ),
    (
        "request-header-injector",
        {
            "manifest_version": 3,
            "name": "Request Header Injector",
            "version": "0.9.0",
            "permissions": ["declarativeNetRequest"],
            "host_permissions": ["https://*.example.com/*"],
            "background": {"service_worker": "background.js"},
        },
        {
            "background.js": "chrome.declarativeNetRequest.updateDynamicRules({addRules: [{id: 1, "
            "priority: 1, action: {type: 'modifyHeaders', requestHeaders: [{header: 'X-Automation', "
            "operation: 'set', value: 'console'}]}, condition: {urlFilter: '|https://'}}]});\n"
        },
        "request-header-injector",
        True,
    ),
    (
        None,
        {
            "manifest_version": 3,
            "name": "Timezone Pin",
            "version": "2.0.1",
            "content_scripts": [{"matches": ["<all_urls>"], "js": ["tz.js"], "run_at": "document_start"}],
        },
        {
            "tz.js": "Intl.DateTimeFormat.prototype.resolvedOptions = ((f) => function () {\n"
            "  return {...f.call(this), timeZone: 'America/New_York'};\n})(Intl.DateTimeFormat.prototype"
            ".resolvedOptions);\n"
        },
        None,
        False,
    ),
]


def seed(tenant: Tenant) -> None:
    now = tenant.now()
    for age_days, (name, manifest, files, folder, used) in zip((41, 12, 3), DEMO_EXTENSIONS, strict=True):
        record = store(tenant, tenant.default_project_id, demo_zip(manifest, files, folder), name)
        record["created_at"] = rfc3339(now - timedelta(days=age_days, hours=age_days % 7))
        if used:
            record["last_used_at"] = rfc3339(now - timedelta(hours=age_days * 2, minutes=17))


CHROME_STORE_HOSTS = ("chromewebstore.google.com", "chrome.google.com")
CHROME_STORE_OS = ("win", "mac", "linux")


@endpoint
async def from_chrome_store(request: Request):
    """``GET /extensions/from_chrome_store``: its own route (it was read as an extension named
    "from_chrome_store"). The query is checked like the service does; the sandbox has no internet, so a
    valid request answers 503 ``chrome_store_unreachable`` instead of the zip."""
    params = request.query_params
    url = (params.get("url") or "").strip()
    errors = {}
    parts = urlsplit(url)
    if not url:
        errors["url"] = "required: the extension's Chrome Web Store URL"
    elif parts.scheme != "https" or (parts.hostname or "") not in CHROME_STORE_HOSTS:
        errors["url"] = "must be a https://chromewebstore.google.com/detail/... URL"
    if params.get("os") and params["os"] not in CHROME_STORE_OS:
        errors["os"] = "must be win, mac or linux"
    if errors:
        raise invalid("the Chrome Web Store request is not valid", **errors)
    raise ApiError(
        503,
        "chrome_store_unreachable",
        "the sandbox cannot reach the Chrome Web Store (it has no internet access): download the extension "
        "elsewhere and upload its zip with POST /extensions",
    )


routes = [
    Route("/extensions", list_extensions, methods=["GET"]),
    Route("/extensions", upload_extension, methods=["POST"]),
    Route("/extensions/from_chrome_store", from_chrome_store, methods=["GET"]),
    Route("/extensions/{id_or_name}/metadata", get_metadata, methods=["GET"]),
    Route("/extensions/{id_or_name}", download_extension, methods=["GET"]),
    Route("/extensions/{id_or_name}", delete_extension, methods=["DELETE"]),
]
