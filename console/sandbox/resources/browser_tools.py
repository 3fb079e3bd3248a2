"""Operator tools of a running session: requests through the browser, extensions loaded live, log streams
(notes §2, §6.5; docs/service-changes.md §2, §4).

Choices where the notes leave room:

- ``POST /browsers/{id}/curl`` (``url`` http(s) required; ``method``, ``headers``, ``body``,
  ``response_encoding`` utf8|base64, ``timeout_ms`` 1..300000). The sandbox has no internet: hosts under
  ``example.com``, ``example.net`` and ``example.org`` answer 200 with a small page echoing the request
  (``/status/<code>`` answers that code), a ``.invalid`` host is 502 ``upstream_unreachable``, and any other
  host 502 ``upstream_unreachable`` saying the sandbox reaches only those example hosts. Each call is a line
  of the ``kernel-images-api`` supervisor log.
- ``POST /browsers/{id}/extensions`` (multipart ``extensions[i][name]`` + ``extensions[i][zip_file]``, or
  the ``extensions[][…]`` pairs): each zip must be an unpacked extension (the upload rules of
  ``/extensions``); names are ``[A-Za-z0-9._-]``. All are checked before any is written to
  ``/home/kernel/extensions/<name>``; then Chromium "restarts" (a ``chromium`` supervisor log line). 204.
- ``GET /browsers/{id}/logs/stream``: ``source=supervisor`` needs ``supervisor_process`` (one of
  ``SUPERVISOR_PROCESSES``) and streams that process's log; ``source=path`` needs an absolute ``path`` in the
  session's filesystem and streams the file's lines. Without ``follow`` the stream ends after what exists;
  with it, new lines follow until the session ends. Frames are ``{event: "log", message, timestamp}``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import os
import re
import time
from urllib.parse import urlsplit

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from console.sandbox.core.errors import ApiError, invalid
from console.sandbox.core.http import endpoint, multipart_array, no_content, ok, read_json, sse_response
from console.sandbox.core.state import Tenant, rfc3339
from console.sandbox.resources import browser_files, extensions, sessions

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
ANSWERING = ("example.com", "example.net", "example.org")
SUPERVISOR_PROCESSES = ("chromium", "kernel-images-api", "neko", "xvfb")
EXTENSION_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
POLL_SECONDS = 0.2
# The most of a log file read at once: a file of any size (a sparse one of 100 GiB) is streamed in parts.
READ_LIMIT = 1024 * 1024
MAX_LOG_LINES = 2000


def log(tenant: Tenant, record: dict, process: str, message: str) -> None:
    """Append a line to a supervisor process's log of the session and wake its followers."""
    lines = record.setdefault("_supervisor_logs", [])
    if not lines:
        created = record["created_at"]
        lines.append((created, "chromium", "chromium started (pid 41) with remote debugging on :9222"))
        lines.append((created, "kernel-images-api", "listening on :10001"))
    lines.append((rfc3339(tenant.now()), process, message))
    del lines[:-MAX_LOG_LINES]
    tenant.topic(f"logs:{record['session_id']}").publish(None)


def _lines(record: dict, process: str) -> list[tuple[str, str]]:
    if not record.get("_supervisor_logs"):
        record["_supervisor_logs"] = [
            (record["created_at"], "chromium", "chromium started (pid 41) with remote debugging on :9222"),
            (record["created_at"], "kernel-images-api", "listening on :10001"),
        ]
    return [(at, message) for at, name, message in record["_supervisor_logs"] if name == process]


# curl ----------------------------------------------------------------------------------------------


def _curl_body(body: dict) -> dict:
    errors: dict[str, str] = {}
    for key in sorted(set(body) - {"url", "method", "headers", "body", "response_encoding", "timeout_ms"}):
        errors[key] = "not a curl field"
    url = body.get("url")
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        errors["url"] = "an http or https URL"
    method = (body.get("method") or "GET").upper() if isinstance(body.get("method") or "GET", str) else None
    if method not in METHODS:
        errors["method"] = f"one of {', '.join(METHODS)}"
    headers = body.get("headers") or {}
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        errors["headers"] = "an object of header names to string values"
    if body.get("body") is not None and not isinstance(body["body"], str):
        errors["body"] = "a string"
    encoding = body.get("response_encoding") or "utf8"
    if encoding not in ("utf8", "base64"):
        errors["response_encoding"] = "utf8 or base64"
    timeout = body.get("timeout_ms")
    if timeout is not None and (
        not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= 300_000
    ):
        errors["timeout_ms"] = "an integer from 1 to 300000"
    if errors:
        raise invalid("the curl request is not valid", **errors)
    return {
        "url": url,
        "parts": parts,
        "method": method,
        "headers": headers,
        "body": body.get("body"),
        "encoding": encoding,
    }


def _answer(tenant: Tenant, record: dict, spec: dict) -> tuple[int, bytes, dict[str, str]]:
    """What an example host answers a request through the session's browser: (status, body, headers);
    502 ``upstream_unreachable`` for any other host."""
    host = spec["parts"].hostname.lower()
    log(tenant, record, "kernel-images-api", f"curl {spec['method']} {spec['url']}")
    if not any(host == h or host.endswith("." + h) for h in ANSWERING):
        why = (
            "does not resolve"
            if host.endswith(".invalid")
            else "is out of reach: the sandbox has no internet"
        )
        raise ApiError(
            502,
            "upstream_unreachable",
            f"{host} {why} (the sandbox answers only for {', '.join(ANSWERING)} and their subdomains)",
        )
    status = 200
    match = re.match(r"^/status/(\d{3})$", spec["parts"].path)
    if match and 100 <= int(match.group(1)) <= 599:
        status = int(match.group(1))
    page = (
        f"<!doctype html><title>{host}</title><h1>{host}</h1>"
        f"<p>{spec['method']} {spec['parts'].path or '/'} through the session's browser</p>"
    )
    content = b"" if spec["method"] == "HEAD" else page.encode()
    headers = {
        "content-type": "text/html; charset=utf-8",
        "server": "sandbox",
        "x-echo-request-headers": json.dumps(sorted(spec["headers"])),
    }
    return status, content, headers


@endpoint
async def curl(request: Request):
    tenant = request.state.tenant
    record = sessions.of_path(request)
    spec = _curl_body(await read_json(request))
    started = time.monotonic()
    status, content, answered = _answer(tenant, record, spec)
    text = base64.b64encode(content).decode() if spec["encoding"] == "base64" else content.decode()
    headers = {name: [value] for name, value in answered.items()}
    headers["content-length"] = [str(len(content))]
    duration = int((time.monotonic() - started) * 1000) + 12
    return ok({"status": status, "headers": headers, "body": text, "duration_ms": duration})


# The raw form the SDK's ``browsers.request`` and ``browsers.stream`` use: ``{base_url}/curl/raw?url=…``,
# the request's own method, headers and body; the answer is the upstream's, as it came.
RAW_SKIPPED = ("host", "content-length", "authorization", "connection", "accept-encoding")


@endpoint
async def curl_raw(request: Request):
    tenant = request.state.tenant
    record = sessions.of_path(request)
    headers = {k: v for k, v in request.headers.items() if k.lower() not in RAW_SKIPPED}
    spec = _curl_body({"url": request.query_params.get("url"), "method": request.method, "headers": headers})
    status, content, answered = _answer(tenant, record, spec)
    return Response(content, status_code=status, headers=answered)


# Extensions loaded into the running browser -------------------------------------------------------


@endpoint
async def load_extensions(request: Request):
    tenant = request.state.tenant
    record = sessions.of_path(request)
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise invalid(
            "send multipart/form-data", extensions="extensions[0][name] and extensions[0][zip_file]"
        )
    form = await request.form(max_files=20, max_fields=60, max_part_size=1024 * 1024)
    try:
        entries = multipart_array(form, "extensions", ("name", "zip_file"))
        if not entries:
            raise invalid(
                "no extensions were sent", extensions="extensions[0][name] and extensions[0][zip_file]"
            )
        loaded = []
        for index, entry in enumerate(entries):
            name, upload = entry["name"], entry["zip_file"]
            if not isinstance(name, str) or not EXTENSION_NAME.match(name):
                raise invalid(
                    "an extension name is not valid",
                    **{f"extensions[{index}].name": "letters, digits, . _ -"},
                )
            if not isinstance(upload, UploadFile):
                raise invalid(
                    "a zip_file part carries no file", **{f"extensions[{index}].zip_file": "a file part"}
                )
            content = await upload.read(extensions.MAX_UPLOAD_BYTES + 1)
            if len(content) > extensions.MAX_UPLOAD_BYTES:
                raise invalid(
                    "an extension is too large", **{f"extensions[{index}].zip_file": "at most 100 MiB"}
                )
            try:
                extensions.validate_archive(content)
            except extensions.BadArchive as exc:
                raise invalid(
                    "an extension is not valid", **{f"extensions[{index}].zip_file": str(exc)}
                ) from None
            loaded.append((name, content))
    finally:
        await form.close()
    for name, content in loaded:
        dest, moment = f"/home/kernel/extensions/{name}", tenant.now().timestamp()
        try:
            await browser_files.extract_into(record, dest, io.BytesIO(content), moment, "extensions")
        except browser_files.BadZip as exc:
            raise invalid(f"extension {name} was refused: {exc}", extensions=str(exc)) from None
        record.setdefault("_loaded_extensions", []).append(name)
    names = ", ".join(name for name, _ in loaded)
    log(tenant, record, "chromium", f"chromium restarted with extension(s) {names}")
    return no_content()


# Log streams ----------------------------------------------------------------------------------------


@endpoint
async def logs_stream(request: Request):
    tenant: Tenant = request.state.tenant
    record = sessions.of_path(request, activity=False)
    params = request.query_params
    source = params.get("source")
    follow = (params.get("follow") or "").lower() == "true"
    if source == "supervisor":
        process = params.get("supervisor_process") or ""
        if process not in SUPERVISOR_PROCESSES:
            raise invalid(
                "supervisor_process is required",
                supervisor_process=f"one of {', '.join(SUPERVISOR_PROCESSES)}",
            )
        path = None
    elif source == "path":
        # Opened as the files API reads (never through a symlink out, never waiting on a FIFO), here and
        # at every poll: a command of the session may swap the file at any moment.
        path = params.get("path")
        os.close(browser_files.open_regular(record, path, "path"))
        process = None
    else:
        raise invalid("source is required", source="path or supervisor")

    def frame(at: str, message: str) -> tuple[None, dict]:
        return None, {"event": "log", "message": message, "timestamp": at}

    async def frames():
        queue = tenant.topic(f"logs:{record['session_id']}").subscribe()
        sent = 0
        offset = 0
        try:
            while True:
                if process is not None:
                    lines = _lines(record, process)
                    for at, message in lines[sent:]:
                        yield frame(at, message)
                    sent = len(lines)
                else:
                    try:
                        fd = browser_files.open_regular(record, path, "path")
                    except ApiError:
                        return  # the file went, or is no longer a regular file of the session
                    with os.fdopen(fd, "rb") as handle:
                        handle.seek(offset)
                        chunk = handle.read(READ_LIMIT)
                    full = len(chunk) == READ_LIMIT
                    # Complete lines only, but the last line at the end of a file not followed; a line
                    # longer than the limit goes in parts.
                    end = chunk.rfind(b"\n") + 1 if full or follow else len(chunk)
                    data = chunk[: end or (len(chunk) if full else 0)]
                    offset += len(data)
                    for line in data.decode("utf-8", "replace").splitlines():
                        yield frame(rfc3339(tenant.now()), line)
                    if full:
                        continue
                if not follow or not sessions.is_active(tenant, record):
                    return
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(POLL_SECONDS):
                        await queue.get()
        finally:
            tenant.topic(f"logs:{record['session_id']}").unsubscribe(queue)

    return sse_response(request, frames())


def seed(tenant: Tenant) -> None:
    """Nothing to seed: logs start with a session, the rest happens on request."""


routes = [
    Route("/browsers/{id}/curl", curl, methods=["POST"]),
    Route("/browsers/{id}/curl/raw", curl_raw, methods=list(METHODS)),
    Route("/browsers/{id}/extensions", load_extensions, methods=["POST"]),
    Route("/browsers/{id}/logs/stream", logs_stream, methods=["GET"]),
]
