"""What every sandbox endpoint shares: tenant lookup, faults, the error body, lists and streams."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from email.utils import format_datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from console.sandbox.core.errors import ApiError, invalid, not_found
from console.sandbox.core.hooks import Hook
from console.sandbox.core.state import Tenant, new_id, registry

log = logging.getLogger("console.sandbox")

Handler = Callable[[Request], Awaitable[Response]]

MAX_LIMIT = 100
REQUEST_TEXT = 2048
DEFAULT_LIMIT = 20
# A request the app routes as a tenant's without its API key (a session's VM route, ``browser_vm``, its jwt
# already checked): the tenant is in this scope entry, which no client can set.
TENANT_SCOPE = "sandbox.vm_tenant"

# Handed in by ``app.assemble``: whether a key the tenant created was deleted or has expired
# (``api_keys``), and what the service's own audit log records of every request (``audit_logs``).
key_refused = Hook("http.key_refused(tenant, api_key) -> bool")
request_logged = Hook("http.request_logged(tenant, request, status)")


def error_response(error: ApiError, request_id: str) -> JSONResponse:
    headers = {"X-Request-Id": request_id, **error.headers}
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


def tenant_of(request: Request) -> Tenant:
    routed = request.scope.get(TENANT_SCOPE)
    if routed is not None:  # a session's VM route, its jwt already checked
        return routed
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "unauthorized", "missing bearer token: send Authorization: Bearer <API key>")
    tenant = registry.get(token.strip())
    if tenant is None:
        raise ApiError(401, "unauthorized", "the API key is not valid or has been revoked")
    if key_refused(tenant, token.strip()):
        raise ApiError(401, "unauthorized", "the API key has expired or was deleted")
    return tenant


def endpoint(handler: Handler) -> Handler:
    """Wraps a handler: authenticates the tenant, applies injected faults, renders ApiError."""

    @functools.wraps(handler)
    async def wrapped(request: Request) -> Response:
        request_id = "req_" + new_id(length=16)
        request.state.request_id = request_id
        request.state.started = time.monotonic()
        request.state.drop_after_events = None
        request.state.stall = None
        tenant = None
        try:
            tenant = tenant_of(request)
            request.state.tenant = tenant
            request.state.project = _project_from_headers(request)
            fault = tenant.take_fault(request.method, request.url.path)
            if fault is not None:
                response = await _apply_fault(fault, request, request_id)
                if response is not None:
                    return _logged(tenant, request, response)
            response = await handler(request)
            if fault is not None and fault.fields:
                response = _with_fields(response, fault.fields)
            if fault is not None:
                response = await _after_fault(fault, response)
        except ApiError as error:
            response = error_response(error, request_id)
            if error.status >= 500:  # the sandbox's own failure: its operator reads why, by request id
                inner = error.inner_error or {}
                log.warning(
                    "%s %s answered %s %s: %s%s (%s)",
                    request.method,
                    request.url.path,
                    error.status,
                    error.code,
                    error.message,
                    f" [{inner.get('code')}: {inner.get('message')}]" if inner else "",
                    request_id,
                )
        response.headers.setdefault("X-Request-Id", request_id)
        return _logged(tenant, request, response)

    return wrapped


def _logged(tenant: Tenant | None, request: Request, response: Response) -> Response:
    if tenant is not None:
        request_logged(tenant, request, response.status_code)
        # The control interface's recent requests (``GET /_sandbox/requests``, 500 of them): a path and a
        # query are cut to REQUEST_TEXT characters, so a tenant's long URLs do not hold megabytes there.
        tenant.requests.append(
            {
                "method": request.method[:REQUEST_TEXT],
                "path": request.url.path[:REQUEST_TEXT],
                "query": request.url.query[:REQUEST_TEXT],
                "status": response.status_code,
            }
        )
    return response


async def _apply_fault(fault, request: Request, request_id: str) -> Response | None:
    if fault.latency_ms:
        await asyncio.sleep(fault.latency_ms / 1000)
    if fault.drop_after_events is not None:
        request.state.drop_after_events = fault.drop_after_events
    if fault.stall_seconds:
        request.state.stall = (fault.stall_after_chunks, fault.stall_seconds)
    if fault.status is None:
        return None
    headers = {"X-Request-Id": request_id}
    if fault.retry_after is not None:
        headers["Retry-After"] = f"{fault.retry_after:g}"
    if fault.body is not None:
        return Response(fault.body, status_code=fault.status, headers=headers, media_type="text/plain")
    error = ApiError(
        fault.status,
        fault.code or "injected_fault",
        fault.message or f"fault injected by the sandbox control interface (status {fault.status})",
    )
    return JSONResponse(error.body(), status_code=fault.status, headers=headers)


def _with_fields(response: Response, fields: dict) -> Response:
    """A successful JSON answer with ``fields`` planted in the object, or in each item of a list (the fault
    that makes the service send odd values)."""
    if not isinstance(response, JSONResponse) or not 200 <= response.status_code < 300:
        return response
    body = json.loads(response.body)
    items = body.get("items") if isinstance(body, dict) else body
    for item in items if isinstance(items, list) else [body]:
        if isinstance(item, dict):
            item.update(fields)
    dropped = ("content-length", "content-type")
    headers = {k: v for k, v in response.headers.items() if k.lower() not in dropped}
    return JSONResponse(body, status_code=response.status_code, headers=headers)


async def _after_fault(fault, response: Response) -> Response:
    """Faults that strike once the request has taken effect: a late answer, or one cut short."""
    if fault.delay_response_ms:
        await asyncio.sleep(fault.delay_response_ms / 1000)
    if not fault.drop_response:
        return response
    body = getattr(response, "body", b"") or b"{}"

    async def cut():
        yield body[: len(body) // 2]
        raise StreamDropped("response dropped mid-body (injected fault)")

    # A declared length longer than what is sent: the client sees the connection close early.
    headers = {"Content-Length": str(len(body)), "Content-Type": "application/json"}
    return StreamingResponse(cut(), status_code=200, headers=headers)


# The largest JSON body read (a session's ``chrome_policy`` may be 5 MiB). The body was read whole, and
# kept where a field has no bound of its own (a tag's value): 64 MiB of tag was kept, listed and saved.
MAX_JSON_BYTES = 16 * 1024 * 1024


def _too_large(limit: int) -> ApiError:
    size = f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"
    return ApiError(413, "request_too_large", f"the request body is larger than {size}")


async def bounded_body(request: Request, limit: int = MAX_JSON_BYTES) -> bytes:
    """The body, read no further than ``limit`` bytes, else 413 (a declared length past it is refused
    unread, a body sent in chunks as soon as it passes it)."""
    declared = request.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    cached = getattr(request, "_body", None)  # Starlette's own cache of a body already read
    if cached is not None:
        if len(cached) > limit:
            raise _too_large(limit)
        return cached
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    request._body = b"".join(chunks)
    return request._body


async def read_json(request: Request, limit: int = MAX_JSON_BYTES) -> dict:
    """The request body (at most ``limit`` bytes) as a JSON object; an empty body is an empty object."""
    raw = await bounded_body(request, limit)
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"the request body is not valid JSON: {exc}") from exc
    except RecursionError:
        raise ApiError(
            400, "invalid_json", f"the request body nests deeper than {MAX_DEPTH} levels"
        ) from None
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_json", "the request body must be a JSON object")
    if too_deep(body):
        raise ApiError(400, "invalid_json", f"the request body nests deeper than {MAX_DEPTH} levels")
    return body


# How deep a request's JSON may nest. What a tenant sends may be kept in the state file, whose encoder
# recurses: a list 500 deep made every save that included the tenant fail (RecursionError), the periodic
# saves of every tenant and the last one at shutdown among them.
MAX_DEPTH = 100


def too_deep(value) -> bool:
    """Whether ``value`` (parsed JSON) nests deeper than ``MAX_DEPTH``, found without recursion."""
    todo = [(value, 0)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list):
            if level >= MAX_DEPTH:
                return True
            todo.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def ok(body, status: int = 200, headers: dict | None = None) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers)


def no_content() -> Response:
    return Response(status_code=204)


def public(record: dict) -> dict:
    """A record without the sandbox's private keys (those starting with an underscore)."""
    return {key: value for key, value in record.items() if not key.startswith("_")}


# Multipart arrays of objects ---------------------------------------------------------------------


def multipart_array(form, array: str, fields: tuple[str, ...]) -> list[dict]:
    """The objects of a multipart array field, in either encoding (docs/service-changes.md §0).

    SDK 0.93 sent ``files[][dest_path]`` + ``files[][file]`` and paired them by order; SDK 0.131 sends
    ``files[0][dest_path]`` + ``files[0][file]``, ``files[1][…]``. Every part of the array must be one of
    ``fields``, and every object must carry all of them: otherwise 400 naming the part, so a request is
    never answered as done while a part of it was dropped.
    """
    indexed: dict[int, dict] = {}
    ordered: dict[str, list] = {name: [] for name in fields}
    pattern = re.compile(rf"^{re.escape(array)}\[(\d*)\]\[([^\]]+)\]$")
    for key, value in form.multi_items():
        match = pattern.match(key)
        if not match:
            if key.startswith(array):
                raise invalid(f"{key} is not understood", **{array: f"unknown part {key!r}"})
            continue
        index, name = match.groups()
        if name not in fields:
            raise invalid(f"{key} is not a field of {array}", **{key: f"not one of {', '.join(fields)}"})
        if index == "":
            ordered[name].append(value)
        elif name in indexed.setdefault(int(index), {}):
            raise invalid(f"{key} is given twice", **{key: "given twice"})
        else:
            indexed[int(index)][name] = value
    items = [indexed[i] for i in sorted(indexed)]
    counts = {len(values) for values in ordered.values()}
    if len(counts) > 1:
        raise invalid(
            f"each {array} entry needs {' and '.join(fields)}",
            **{array: ", ".join(f"{len(v)} {n} part(s)" for n, v in ordered.items())},
        )
    items += [dict(zip(fields, values, strict=True)) for values in zip(*ordered.values(), strict=True)]
    for position, item in enumerate(items):
        missing = [name for name in fields if name not in item]
        if missing:
            raise invalid(
                f"{array}[{position}] lacks {', '.join(missing)}",
                **{f"{array}[{position}].{name}": "required" for name in missing},
            )
    return items


# Project scoping ---------------------------------------------------------------------------------


def project_of(request: Request) -> str:
    """The project the request is scoped to: the project headers, else the tenant's default project."""
    return request.state.project


def _project_from_headers(request: Request) -> str:
    tenant: Tenant = request.state.tenant
    wanted = request.headers.get("x-kernel-project-id") or request.headers.get("x-kernel-project")
    if not wanted:
        return tenant.default_project_id
    projects = tenant.table("projects")
    record = projects.get(wanted) or next(
        (p for p in projects.values() if p["name"].casefold() == wanted.casefold()), None
    )
    if record is None or record.get("_deleted"):
        raise ApiError(
            404, "project_not_found", f"project {wanted!r} named in the project header was not found"
        )
    return record["id"]


def scoped(request: Request, table: str) -> list[dict]:
    """Live records of a collection in the request's project, oldest first."""
    project = project_of(request)
    records = request.state.tenant.table(table).values()
    return [r for r in records if r.get("_project") == project and not r.get("_deleted")]


def find(request: Request, table: str, id_or_name: str, kind: str) -> dict:
    """A live record of the request's project by id, or by its (unique) name."""
    for record in scoped(request, table):
        if record.get("id") == id_or_name:
            return record
    for record in scoped(request, table):
        if record.get("name") and record["name"] == id_or_name:
            return record
    raise not_found(kind, id_or_name)


def record_of(
    tenant: Tenant, table: str, key: str, kind: str, *, gone: Callable[[dict], bool] | None = None
) -> dict:
    """The tenant's record ``key`` of ``table``: a 404 naming ``kind`` when there is none, or when
    ``gone(record)`` says it no longer counts (deleted, expired, another project's)."""
    record = tenant.table(table).get(key)
    if record is None or (gone is not None and gone(record)):
        raise not_found(kind, key)
    return record


# Lists -------------------------------------------------------------------------------------------


def int_param(request: Request, name: str, default: int, *, low: int, high: int | None = None) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise invalid(f"{name} must be an integer", **{name: f"{raw!r} is not an integer"}) from None
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise invalid(f"{name} must be {bound}", **{name: f"must be {bound}, got {value}"})
    return value


def paginate(request: Request, items: list, render=public) -> JSONResponse:
    """One offset page with the service's headers: X-Has-More, and X-Next-Offset (absolute) if more."""
    limit = int_param(request, "limit", DEFAULT_LIMIT, low=1, high=MAX_LIMIT)
    offset = int_param(request, "offset", 0, low=0)
    page = items[offset : offset + limit]
    more = offset + limit < len(items)
    headers = {"X-Has-More": "true" if more else "false"}
    if more:
        headers["X-Next-Offset"] = str(offset + limit)
    return ok([render(item) for item in page], headers=headers)


def text_filter(items: list[dict], request: Request, *fields: str) -> list[dict]:
    """The ``name`` (exact, case-insensitive) and ``query`` (substring; ids exact) list filters."""
    name = request.query_params.get("name")
    if name:
        items = [i for i in items if (i.get("name") or "").casefold() == name.casefold()]
    query = (request.query_params.get("query") or "").casefold()
    if query:
        items = [
            i
            for i in items
            if i.get("id") == query or any(query in str(i.get(f) or "").casefold() for f in fields)
        ]
    return items


# Streams -----------------------------------------------------------------------------------------


class StreamDropped(Exception):
    """Raised inside a stream body to cut the connection abruptly (the client sees an incomplete read)."""


class EventStreamResponse(StreamingResponse):
    """A stream that notices a client leaving even while it has nothing to send.

    Starlette skips listening for ``http.disconnect`` under ASGI 2.4 and learns of a departure only when a
    write fails: an idle telemetry stream would hold its state until its next keepalive. The real service
    closes at once; so does this.
    """

    async def __call__(self, scope, receive, send):
        scope = {**scope, "asgi": {**scope.get("asgi", {}), "spec_version": "2.3"}}
        await super().__call__(scope, receive, send)


def sse_frame(data, event_id: int | str | None = None) -> bytes:
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    lines.extend(f"data: {line}" for line in payload.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


def sse_response(
    request: Request, frames: AsyncIterator[tuple[int | str | None, object]]
) -> StreamingResponse:
    """An SSE response from an async iterator of (id, data).

    Sends a keepalive comment whenever nothing was sent for the tenant's keepalive period, honours the
    ``drop_after_events`` fault by cutting the connection after that many frames (a drop, unlike the
    normal end of a stream, leaves the chunked body incomplete), and ends cleanly when ``frames`` ends.
    """
    tenant: Tenant = request.state.tenant
    drop_after = request.state.drop_after_events

    async def body():
        queue: asyncio.Queue = asyncio.Queue(maxsize=256)
        done = object()

        async def produce():
            try:
                async for item in frames:
                    await queue.put(item)
            finally:
                await queue.put(done)

        producer = asyncio.create_task(produce())
        sent = 0
        try:
            yield b": connected\n\n"
            while True:
                try:
                    # asyncio.timeout: wait_for on 3.11 can swallow the cancellation of a departed client.
                    async with asyncio.timeout(tenant.keepalive_seconds):
                        item = await queue.get()
                except TimeoutError:
                    yield b": keepalive\n\n"
                    continue
                if item is done:
                    if producer.done() and producer.exception():
                        raise producer.exception()
                    return
                event_id, data = item
                yield sse_frame(data, event_id)
                sent += 1
                if drop_after is not None and sent >= drop_after:
                    raise StreamDropped(f"stream dropped after {sent} events (injected fault)")
        finally:
            producer.cancel()

    headers = {
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
        "X-Request-Id": request.state.request_id,
    }
    return EventStreamResponse(counted(request, body()), media_type="text/event-stream", headers=headers)


async def counted(request: Request, body: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """A stream body that counts itself in ``tenant.open_streams`` while it is open.

    Honours the ``stall_seconds`` fault: after ``stall_after_chunks`` chunks the stream freezes (no frames,
    no keepalives) for that long, then goes on, as a service stuck behind a hung proxy would.
    """
    tenant: Tenant = request.state.tenant
    path = request.url.path
    stall = getattr(request.state, "stall", None)
    tenant.open_streams[path] = tenant.open_streams.get(path, 0) + 1
    try:
        sent = 0
        async for chunk in body:
            yield chunk
            sent += 1
            if stall is not None and sent == stall[0]:
                await asyncio.sleep(stall[1])
    finally:
        tenant.open_streams[path] -= 1
        if not tenant.open_streams[path]:
            del tenant.open_streams[path]


def last_event_id(request: Request) -> int | None:
    raw = request.headers.get("last-event-id")
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, "invalid_last_event_id", "Last-Event-ID must be an integer sequence") from None


def http_date(moment) -> str:
    return format_datetime(moment, usegmt=True)
