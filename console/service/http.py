"""The one place that talks HTTP to the service (STYLE habit 2).

``_send`` is the only function that sends anything with httpx: it builds the URL, adds the bearer
and project headers, applies the timeouts, retries what is safe and turns every failure into an
exception of ``console.service.errors``. ``request`` (JSON and small bodies), ``stream_bytes``
(downloads) and ``sse`` (event streams) are thin shapes around it.

Retries: idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE) — or any method called with
``retry=True`` — are retried at most ``MAX_RETRIES`` times on connect errors / connect timeouts and
on 429, 502, 503, 504; never on 409 or any other status. POST and PATCH are never retried unless the
caller says so. Delay: a ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP-date) hint within
(0, ``MAX_RETRY_AFTER``] s is honoured exactly; a longer hint means "give up": the error is raised at
once with ``.retry_after`` set. Without a hint: ``0.2 · 2ⁿ`` s capped at 2 s, jitter x[0.75, 1].

The shared ``httpx.AsyncClient`` is one per running event loop (a client's connections belong to the
loop that opened them). The API key is never a default header of that client, never logged, never in
an error message, and never sent to an address ``targets`` refuses: the base URL is checked before each
request, and the address each new connection reached is checked before anything is written to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json as jsonlib
import logging
import random
import re
import select
import ssl
import time
import urllib.parse
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import aclosing, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache, cached_property
from typing import Any, Literal, NamedTuple

import httpcore
import httpx

from console.service import errors, targets

log = logging.getLogger("console.service")

USER_AGENT = "operator-console/0.1"
CONNECT_TIMEOUT = 3.0
# A change (POST, PATCH, PUT, DELETE) may take the service a while; a read waits settings.SERVICE_READ_TIMEOUT
# (5 s by default) so a page gives up on a hung service soon enough for an operator to retry.
READ_TIMEOUT = 15.0
DEFAULT_SERVICE_READ_TIMEOUT = 5.0
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
WRITE_TIMEOUT = 30.0
POOL_TIMEOUT = 5.0
TIMEOUT = httpx.Timeout(connect=CONNECT_TIMEOUT, read=READ_TIMEOUT, write=WRITE_TIMEOUT, pool=POOL_TIMEOUT)
# Streams stay quiet for long stretches; the service sends keepalive comments every 15 s instead.
STREAM_TIMEOUT = httpx.Timeout(connect=CONNECT_TIMEOUT, read=None, write=WRITE_TIMEOUT, pool=POOL_TIMEOUT)
# No cap on connections: every live stream holds one, and the 101st must not wait for the pool.
LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=20, keepalive_expiry=30.0)

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_RETRIES = 2
BACKOFF_BASE = 0.2
BACKOFF_CAP = 2.0
MAX_RETRY_AFTER = 10.0
ERROR_BODY_PREVIEW = 200
# The largest answer ``request`` reads into memory (a screenshot, an audit export chunk); more is a
# BadResponse, not a console process filled by a hostile or broken service. Downloads stream.
MAX_BODY = 64 * 1024 * 1024
# JSON costs far more than its size once parsed (about 25 times for ``[{},{},…]``: 63 MiB of it took a console
# from 146 to 1,724 MiB and held the event loop for seconds), so JSON answers have bounds of their own, read
# per call from settings (docs/security.md, section 5):
# - a list page (SERVICE_LIST_MAX_BYTES, 4 MiB): at most 100 records, which the service sends in far less (a
#   session of the sandbox with tags and telemetry is 1.5 KiB: 150 KiB a page; 100 telemetry events whose
#   bodies the service cuts at 8 KB: about 1 MiB); a page over it is refused, never read on;
# - any other JSON answer, one record (SERVICE_JSON_MAX_BYTES, 8 MiB): a session or pool may carry a
#   ``chrome_policy`` of up to 5 MiB by the contract.
DEFAULT_LIST_MAX_BYTES = 4 * 1024 * 1024
DEFAULT_JSON_MAX_BYTES = 8 * 1024 * 1024
# The most items of a list page when the call did not say (the contract's largest page: GET /browsers, 100).
LIST_MAX_ITEMS = 100
# Whatever its size, an answer of more JSON objects than this is refused as it is parsed (100 records of a
# few dozen objects each are a few thousand), and one nested deeper than this (the console's own JSON forms
# allow as much) is refused after: code that walks it (redaction, templates, json.dumps) recurses.
JSON_MAX_OBJECTS = 200_000
JSON_MAX_DEPTH = 64
# A body larger than this is parsed in a worker thread, item by item for a list, so the event loop serves
# others meanwhile (one json.loads call holds the GIL from start to end; between items it is let go).
INLINE_PARSE_BYTES = 64 * 1024
# The largest event an event stream may send (bytes between two blank lines): the SSE parser keeps an
# event's lines until its blank line, so an event that never ends would otherwise grow without end.
MAX_EVENT = 16 * 1024 * 1024
# The most of an error answer (non-2xx) the console reads: its JSON code, message and details, or the start
# of a text shown as ERROR_BODY_PREVIEW. A longer body is cut there (its JSON then unread), never read whole.
MAX_ERROR_BODY = 64 * 1024
# The longest a whole answer may take to arrive (its headers, then for ``request`` its body) once the request
# is sent: the read timeout is per read, so a service sending a byte every few seconds held a page (and the
# task serving it) for as long as it liked. Not for a request whose body is a stream (an upload, which
# takes what it takes to send) nor for an event stream's body (it never ends).
MAX_ANSWER_SECONDS = 60.0

# The request id of the latest call made in this context (a view's task): the audit log records it.
last_request_id: ContextVar[str] = ContextVar("last_request_id", default="")
# Whether the request being sent in this context may reach loopback and private addresses (see _send).
_allow_private: ContextVar[bool] = ContextVar("allow_private", default=False)
# How a refused connection names the URL it was for (the alerts' webhooks are not the service).
_target_name: ContextVar[str] = ContextVar("target_name", default=targets.BASE_URL)

Expect = Literal["json", "none", "bytes", "response"]


@dataclass(frozen=True)
class Service:
    """Where and as whom to call the service. ``repr`` never shows the key."""

    base_url: str
    api_key: str = field(repr=False)
    project: str | None = None  # id or name; sent as X-Kernel-Project (accepts either)
    # Loopback and private addresses are refused unless allowed (the local sandbox in development).
    allow_private: bool = False

    def with_project(self, project: str | None) -> Service:
        return replace(self, project=project)

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + "/" + path.lstrip("/")


@dataclass(frozen=True)
class Reply:
    """A successful answer: ``data`` is the parsed JSON body (None when empty or not asked for)."""

    status: int
    headers: Mapping[str, str]
    content: bytes = b""
    request_id: str | None = None

    @cached_property
    def data(self) -> Any:
        # ``request(expect="json")`` fills this in as it reads (decode_json, bounded); only a body asked for
        # as bytes is parsed here.
        if not self.content:
            return None
        return decode_json(self.content)


class TooMuchJSON(ValueError):
    """A JSON body past one of the bounds above (its message says which)."""


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_scan = jsonlib.JSONDecoder().scan_once


def decode_json(body: bytes | str, max_items: int | None = None) -> Any:
    """Parse a JSON body within ``JSON_MAX_OBJECTS`` and ``JSON_MAX_DEPTH``; a top-level list item by item,
    stopping as soon as it holds more than ``max_items`` (``TooMuchJSON``). Anything that is not JSON raises
    ``ValueError`` or ``RecursionError``. In a worker thread when the body is large (``parse_json``)."""
    text = body if isinstance(body, str) else body.decode(jsonlib.detect_encoding(body))
    small = max_items is None and len(text) <= INLINE_PARSE_BYTES
    if small and text.count("{") + text.count("[") <= JSON_MAX_DEPTH:
        # A small body with no more brackets than the depth bound cannot pass either bound (every object
        # opens with one): the C parser alone, without a Python call per object (an event of a live stream).
        # Its scanner first, without json.loads' calls around it, for a body that is one value from its
        # first character to its last (as an event's data is); anything else (white space around it, a byte
        # order mark, not JSON) goes through json.loads, which says what is wrong.
        try:
            value, end = _scan(text, 0)
        except (StopIteration, ValueError):
            return jsonlib.loads(text)
        return value if end == len(text) else jsonlib.loads(text)
    objects = 0

    def counted(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        # Python code for every object: the thread lets the GIL go here, and a bound is kept as it goes.
        nonlocal objects
        objects += 1
        if objects > JSON_MAX_OBJECTS:
            raise TooMuchJSON(f"more than {JSON_MAX_OBJECTS} JSON objects")
        return dict(pairs)

    decoder = jsonlib.JSONDecoder(object_pairs_hook=counted)
    start = _WHITESPACE.match(text).end()
    if max_items is None or text[start : start + 1] != "[":
        value = decoder.decode(text)
    else:
        value, at = [], _WHITESPACE.match(text, start + 1).end()
        closed = text[at : at + 1] == "]"
        at += closed
        while not closed:
            item, at = decoder.raw_decode(text, at)
            value.append(item)
            if len(value) > max_items:
                raise TooMuchJSON(f"a list of more than {max_items} items")
            at = _WHITESPACE.match(text, at).end()
            separator = text[at : at + 1]
            if separator == ",":
                at = _WHITESPACE.match(text, at + 1).end()
            elif separator == "]":
                at, closed = at + 1, True
            else:
                raise ValueError(f"expected ',' or ']' at {at}")
        if _WHITESPACE.match(text, at).end() != len(text):
            raise ValueError(f"extra data at {at}")
    if _deeper_than(value, JSON_MAX_DEPTH):
        raise TooMuchJSON(f"JSON nested deeper than {JSON_MAX_DEPTH} levels")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` deep (without recursing itself)."""
    level = [value]
    for _ in range(limit):
        level = [
            child
            for container in level
            if isinstance(container, dict | list)
            for child in (container.values() if isinstance(container, dict) else container)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True


async def parse_json(body: bytes | str, max_items: int | None = None) -> Any:
    """``decode_json``, in a worker thread when the body is larger than ``INLINE_PARSE_BYTES``."""
    if len(body) <= INLINE_PARSE_BYTES:
        return decode_json(body, max_items)
    return await asyncio.to_thread(decode_json, body, max_items)


def _setting(name: str, default: int) -> int:
    from django.conf import settings

    return int(getattr(settings, name, default)) if settings.configured else default


def list_max_bytes() -> int:
    """``settings.SERVICE_LIST_MAX_BYTES``: the most of one list answer the console reads."""
    return _setting("SERVICE_LIST_MAX_BYTES", DEFAULT_LIST_MAX_BYTES)


def json_max_bytes() -> int:
    """``settings.SERVICE_JSON_MAX_BYTES``: the most of any other JSON answer the console reads."""
    return _setting("SERVICE_JSON_MAX_BYTES", DEFAULT_JSON_MAX_BYTES)


def path_segment(value: object) -> str:
    """Quote one path segment (an id or a name, which may hold spaces or unicode).

    A segment of dots only is quoted too: httpx removes ``.`` and ``..`` segments from a path, so an id
    ``..`` (a URL typed by hand, an id from the service) would have sent ``/browsers/bs_1/replays/../stop``
    to ``/browsers/bs_1/stop``."""
    quoted = urllib.parse.quote(str(value), safe="")
    return quoted.replace(".", "%2E") if quoted.strip(".") == "" else quoted


# --- the shared client, one per event loop -----------------------------------------------------

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


class _CheckedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, refusing a connection whose peer ``targets`` forbids.

    The check runs on the address actually connected to, before TLS and before the request is
    written, so a name that resolved to a public address for ``targets.acheck_url`` and to a private
    one a moment later (DNS rebinding) still gets nothing.
    """

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        stream = await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        peer = stream.get_extra_info("server_addr")
        reason = targets.refusal(str(peer[0]), allow_private=_allow_private.get()) if peer else None
        if reason:
            await stream.aclose()
            raise targets.ForbiddenTarget(f"{_target_name.get()}'s host {host} connected to {reason}")
        return _Stream(stream)

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise targets.ForbiddenTarget("the service is reached over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _readable(sock) -> bool:
    """Whether the service sent something (or closed) on an idle pooled connection: a poll of its socket
    that never waits; a socket that is gone counts as readable, so the pool drops it."""
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class _Stream(httpcore.AsyncNetworkStream):
    """A pooled connection's stream, answering "is it readable?" from the socket it keeps.

    On every request and every response's end the pool asks each idle connection whether the service closed
    it (``is_readable``); httpcore's anyio stream answers by building all its attributes, a ``getpeername``
    call included, then polling the socket. With a dozen idle connections (a busy console) that was a
    measurable part of a proxied page. The answer is the same: a poll of the same socket.
    """

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable" and self._socket is not None:
            return _readable(self._socket)
        return self._inner.get_extra_info(info)


@cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's CA bundle, hostname checked, ``SSL_CERT_FILE`` honoured), made
    once per process: building one loads the whole bundle, about 25 ms of a core, and each event loop's
    client (every alert round, usage sample and webhook delivery of the worker runs in a loop of its own)
    and each ``post_outside`` made its own. The context holds configuration (the CA certificates, the
    checks), never an answer: connections stay each client's own, and a client context caches no TLS
    sessions (OpenSSL's default)."""
    return httpx.create_ssl_context()


def _transport() -> httpx.AsyncHTTPTransport:
    transport = httpx.AsyncHTTPTransport(limits=LIMITS, verify=_tls())
    # httpx does not take a network backend; its pool does (the attribute httpcore reads on connect).
    pool = transport._pool
    pool._network_backend = _CheckedBackend(pool._network_backend)
    return transport


def _client() -> httpx.AsyncClient:
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(
            transport=_transport(),
            timeout=TIMEOUT,
            headers={"User-Agent": USER_AGENT},
            follow_redirects=False,
        )
        _clients[loop] = client
    return client


async def aclose_clients() -> None:
    """Close the shared client of the running loop (at shutdown); others are forgotten."""
    loop = asyncio.get_running_loop()
    client = _clients.pop(loop, None)
    _clients.clear()
    if client is not None:
        await client.aclose()


# --- the one function that sends --------------------------------------------------------------


def service_read_timeout() -> float:
    """``settings.SERVICE_READ_TIMEOUT`` (seconds), read per call so tests and settings changes apply."""
    from django.conf import settings

    if not settings.configured:
        return DEFAULT_SERVICE_READ_TIMEOUT
    return float(getattr(settings, "SERVICE_READ_TIMEOUT", DEFAULT_SERVICE_READ_TIMEOUT))


def _timeout(timeout: float | None, stream: bool, method: str = "POST") -> httpx.Timeout:
    """Streams never time out reading (keepalives may be 15 s apart); reads wait the read timeout; changes
    wait ``READ_TIMEOUT``; a caller's own ``timeout`` (uploads, a long-polling acquire) wins."""
    if timeout is None:
        if stream:
            return STREAM_TIMEOUT
        if method in READ_METHODS:
            return httpx.Timeout(
                connect=CONNECT_TIMEOUT, read=service_read_timeout(), write=WRITE_TIMEOUT, pool=POOL_TIMEOUT
            )
        return TIMEOUT
    return httpx.Timeout(
        connect=min(CONNECT_TIMEOUT, timeout), read=timeout, write=WRITE_TIMEOUT, pool=POOL_TIMEOUT
    )


async def _send(
    svc: Service,
    method: str,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    json: Any = None,
    data: Mapping[str, Any] | None = None,
    files: Any = None,
    content: Any = None,
    headers: Mapping[str, str] | None = None,
    retry: bool | None = None,
    timeout: float | None = None,
    stream: bool = False,
) -> httpx.Response:
    """Send one request (with safe retries); return a 2xx response or raise a ServiceError.

    With ``stream=True`` the body is left unread and the caller must close the response.
    """
    method = method.upper()
    await targets.acheck_url(svc.base_url, allow_private=svc.allow_private)
    _allow_private.set(svc.allow_private)
    url = svc.url(path)
    send_headers = {"Accept": "application/json"}
    if svc.api_key:
        send_headers["Authorization"] = f"Bearer {svc.api_key}"
    if svc.project:
        send_headers["X-Kernel-Project"] = svc.project
    send_headers.update(headers or {})
    may_retry = method in IDEMPOTENT_METHODS if retry is None else retry
    # A body we cannot replay (an async iterator) must not be sent twice.
    if content is not None and not isinstance(content, bytes | str):
        may_retry = False
    httpx_timeout = _timeout(timeout, stream, method)
    client = _client()
    # Uploads (files, an async body) take what they take to send; everything else has a deadline.
    deadline = (
        None
        if files is not None or not (content is None or isinstance(content, bytes | str))
        else (max(MAX_ANSWER_SECONDS, timeout or 0))
    )

    attempt = 0
    while True:
        started = time.monotonic()
        try:
            req = client.build_request(
                method,
                url,
                params=_clean_params(params),
                json=json,
                data=data,
                files=files,
                content=content,
                headers=send_headers,
                timeout=httpx_timeout,
            )
            async with asyncio.timeout(deadline):
                response = await client.send(req, stream=True)
        except httpx.InvalidURL as exc:
            # Nothing was sent: a value in the path or query that no URL may hold (100 000 characters).
            raise errors.Invalid(
                f"the console cannot send this request: {str(exc)[:ERROR_BODY_PREVIEW]}", code="invalid_url"
            ) from None
        except TimeoutError:
            raise _too_slow(svc, deadline) from None
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            error = _transport_error(svc, exc, httpx_timeout)
            if may_retry and attempt < MAX_RETRIES:
                log.debug("%s %s: %s; retrying", method, path, error.message)
                await asyncio.sleep(_backoff(attempt))
                attempt += 1
                continue
            raise error from None
        except httpx.RemoteProtocolError as exc:
            # A kept-alive connection the server closed as the request went out ("disconnected without
            # sending a response"): an idempotent request is safe to send again on a new connection.
            if may_retry and attempt < MAX_RETRIES:
                log.debug("%s %s: %s; retrying", method, path, type(exc).__name__)
                await asyncio.sleep(_backoff(attempt))
                attempt += 1
                continue
            raise _transport_error(svc, exc, httpx_timeout) from None
        except httpx.TransportError as exc:
            raise _transport_error(svc, exc, httpx_timeout) from None

        request_id = response.headers.get("x-request-id")
        last_request_id.set(request_id or "")
        log.debug(
            "%s %s -> %s in %.0f ms (request id %s)",
            method,
            path,
            response.status_code,
            (time.monotonic() - started) * 1000,
            request_id,
        )
        if response.is_success:
            return response

        body = b""
        try:
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) >= MAX_ERROR_BODY:
                    body = body[:MAX_ERROR_BODY]
                    break
        except httpx.TransportError:
            pass
        finally:
            await response.aclose()
        hint = _retry_after(response.headers)
        if may_retry and attempt < MAX_RETRIES and response.status_code in RETRY_STATUSES:
            if hint is None or hint <= 0:
                await asyncio.sleep(_backoff(attempt))
                attempt += 1
                continue
            if hint <= MAX_RETRY_AFTER:
                await asyncio.sleep(hint)
                attempt += 1
                continue
        raise_for_status(svc, response, body)


def _too_slow(svc: Service, seconds: float | None, **kw: Any) -> errors.NoAnswer:
    return errors.NoAnswer(_redact(svc, f"the service took more than {_secs(seconds)} to answer"), **kw)


def _clean_params(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Drop None values; booleans as true/false; lists comma-joined (notes §0)."""
    if not params:
        return None
    cleaned: dict[str, Any] = {}
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, list | tuple | set | frozenset):
            value = ",".join(str(v) for v in value)
        cleaned[key] = value
    return cleaned


def _backoff(attempt: int) -> float:
    return min(BACKOFF_BASE * 2**attempt, BACKOFF_CAP) * random.uniform(0.75, 1.0)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP-date), else None."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def _transport_error(svc: Service, exc: httpx.TransportError, timeout: httpx.Timeout) -> errors.Unavailable:
    if isinstance(exc, httpx.ConnectTimeout):
        message = f"could not connect to {svc.base_url} within {_secs(timeout.connect)}"
    elif isinstance(exc, httpx.ReadTimeout):
        message = f"the service did not answer within {_secs(timeout.read)}"
    elif isinstance(exc, httpx.WriteTimeout):
        message = f"could not send the request to the service within {_secs(timeout.write)}"
    elif isinstance(exc, httpx.PoolTimeout):
        message = f"no free connection to the service within {_secs(timeout.pool)}"
    elif isinstance(exc, httpx.ConnectError):
        reason = str(exc) or type(exc).__name__
        if "refused" in reason.lower() or "all connection attempts failed" in reason.lower():
            reason = "connection refused"
        message = f"could not connect to {svc.base_url}: {reason}"
    else:
        message = f"the connection to {svc.base_url} broke: {str(exc) or type(exc).__name__}"
    # Only a failure before the request left (no connection, a request we could not even write) proves
    # nothing was sent; anything later may have reached the service.
    unsent = (
        httpx.ConnectError,
        httpx.ConnectTimeout,
        httpx.PoolTimeout,
        httpx.LocalProtocolError,
        httpx.UnsupportedProtocol,
        httpx.ProxyError,
    )
    sent = not isinstance(exc, unsent)
    cls = errors.NoAnswer if sent else errors.Unavailable
    return cls(_redact(svc, message))


def _secs(value: float | None) -> str:
    return "no time" if value is None else f"{value:g} s"


def _redact(svc: Service, text: str) -> str:
    return text.replace(svc.api_key, "***") if svc.api_key else text


def raise_for_status(svc: Service, response: httpx.Response, content: bytes | None = None) -> None:
    """Raise the ServiceError that matches a non-2xx response: ``content`` is what was read of its body
    (at most ``MAX_ERROR_BODY``), else the response's body must have been read."""
    if response.is_success:
        return
    status = response.status_code
    request_id = response.headers.get("x-request-id")
    if content is None:
        content = response.content
    body: Any = None
    try:
        body = jsonlib.loads(content)
    except (ValueError, RecursionError):
        body = None
    code = message = inner_error = None
    details: list[dict[str, Any]] = []
    if isinstance(body, dict):
        code = body.get("code") if isinstance(body.get("code"), str) else None
        message = body.get("message") if isinstance(body.get("message"), str) else None
        details = [d for d in body.get("details") or [] if isinstance(d, dict)]
        inner_error = body.get("inner_error") if isinstance(body.get("inner_error"), dict) else None
    if not message:
        text = content[: ERROR_BODY_PREVIEW * 4].decode(response.encoding or "utf-8", "replace").strip()
        if text:
            message = f"HTTP {status} from the service: {text[:ERROR_BODY_PREVIEW]}"
        else:
            message = f"HTTP {status} from the service ({response.reason_phrase or 'no body'})"
    cls = errors.error_class_for(status, code)
    kwargs: dict[str, Any] = dict(
        status=status,
        code=code,
        details=details,
        inner_error=inner_error,
        request_id=request_id,
    )
    if issubclass(cls, errors.TryLater):
        kwargs["retry_after"] = _retry_after(response.headers)
    raise cls(_redact(svc, message), **kwargs)


# --- shapes around _send ------------------------------------------------------------------------


async def request(
    svc: Service,
    method: str,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    json: Any = None,
    data: Mapping[str, Any] | None = None,
    files: Any = None,
    content: Any = None,
    headers: Mapping[str, str] | None = None,
    expect: Expect = "json",
    retry: bool | None = None,
    timeout: float | None = None,
    max_bytes: int | None = None,
    max_items: int | None = None,
) -> Reply:
    """Call the service and return a ``Reply``.

    expect: ``"json"`` parses the body into ``reply.data`` (an unparseable body → Unavailable);
    ``"none"`` discards the body; ``"bytes"``/``"response"`` keep it in ``reply.content``.
    ``files`` streams open file objects in 64 KiB chunks (httpx multipart), see ``uploads``.
    ``max_bytes``: the most of the body read (default: ``json_max_bytes()`` for JSON, else ``MAX_BODY``);
    ``max_items``: a JSON list answer of more items is refused as it is parsed (a list page: the limit asked).
    """
    if max_bytes is None:
        max_bytes = json_max_bytes() if expect == "json" else MAX_BODY
    response = await _send(
        svc,
        method,
        path,
        params=params,
        json=json,
        data=data,
        files=files,
        content=content,
        headers=headers,
        retry=retry,
        timeout=timeout,
    )
    request_id = response.headers.get("x-request-id")
    try:
        # Read even a body we discard: an answer cut short must not pass for a success.
        async with asyncio.timeout(max(MAX_ANSWER_SECONDS, timeout or 0)):
            body = await _read_bounded(response, request_id, max_bytes, keep=expect != "none")
    except TimeoutError:
        raise _too_slow(
            svc, max(MAX_ANSWER_SECONDS, timeout or 0), status=response.status_code, request_id=request_id
        ) from None
    except httpx.TransportError as exc:
        error = _transport_error(svc, exc, _timeout(timeout, False, method.upper()))
        error.status, error.request_id = response.status_code, request_id
        raise error from None
    finally:
        await response.aclose()
    reply = Reply(status=response.status_code, headers=response.headers, content=body, request_id=request_id)
    if expect == "json" and body:
        # Parsed now, within its bounds, so a bad body fails here and not in a template.
        try:
            reply.__dict__["data"] = await parse_json(body, max_items)
        except TooMuchJSON as exc:
            raise errors.BadResponse(
                f"the service sent more than the console reads in one answer: {exc}",
                status=response.status_code,
                request_id=request_id,
            ) from None
        except (ValueError, RecursionError):
            preview = body[:ERROR_BODY_PREVIEW].decode("utf-8", "replace")
            raise errors.BadResponse(
                f"the service sent a body that is not JSON: {preview}",
                status=response.status_code,
                request_id=request_id,
            ) from None
    return reply


async def _read_bounded(
    response: httpx.Response, request_id: str | None, limit: int = MAX_BODY, *, keep: bool = True
) -> bytes:
    """The body, refused (``BadResponse``) once past ``limit`` bytes: on its declared length before a byte
    is read, else as soon as the bytes read pass it. ``keep=False`` reads it to its end and keeps nothing."""

    def too_large() -> errors.BadResponse:
        size = f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"
        return errors.BadResponse(
            f"the service sent an answer larger than the console reads for it ({size})",
            status=response.status_code,
            request_id=request_id,
        )

    declared = response.headers.get("content-length", "").strip()
    if declared.isascii() and declared.isdigit() and int(declared[:20]) > limit:
        raise too_large()
    body, read = bytearray(), 0
    async for chunk in response.aiter_bytes():
        read += len(chunk)
        if read > limit:
            raise too_large()
        if keep:
            body += chunk
    return bytes(body)


@asynccontextmanager
async def stream_bytes(
    svc: Service,
    method: str,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> AsyncIterator[tuple[Reply, AsyncIterator[bytes]]]:
    """``async with stream_bytes(svc, "GET", path) as (reply, chunks):`` for downloads.

    The console relays these to browsers with the answer's ``Content-Length``: they are asked for
    uncompressed, since httpx decodes a compressed body and the length would then describe other bytes
    (a gzip answer went out declaring 4 KiB ahead of 4 MiB). A length that is not plain digits, or comes
    with a body compressed anyway, is left out of ``reply.headers``; ``chunks`` never yields more than
    the length it keeps."""
    asked = {"Accept-Encoding": "identity", **(headers or {})}
    response = await _send(svc, method, path, params=params, headers=asked, timeout=timeout, stream=True)
    kept = response.headers.copy()
    encoding = kept.get("content-encoding", "identity").strip().lower()
    declared = kept.get("content-length", "").strip()
    limit = None
    if encoding in ("", "identity") and declared.isdigit() and len(declared) <= 15:
        limit = int(declared)
        kept["content-length"] = str(limit)
    elif "content-length" in kept:
        del kept["content-length"]
    reply = Reply(status=response.status_code, headers=kept, request_id=response.headers.get("x-request-id"))

    async def chunks() -> AsyncIterator[bytes]:
        left = limit
        try:
            async for chunk in response.aiter_bytes():
                if left is not None:
                    chunk = chunk[:left]
                    left -= len(chunk)
                if chunk:
                    yield chunk
                if left == 0:
                    return
        except httpx.TransportError as exc:
            raise errors.StreamDropped(_transport_error(svc, exc, STREAM_TIMEOUT).message) from None

    try:
        yield reply, chunks()
    finally:
        await response.aclose()


@asynccontextmanager
async def sse(
    svc: Service,
    path: str,
    *,
    params: Mapping[str, Any] | None = None,
    last_event_id: str | None = None,
    on_bytes: Callable[[], None] | None = None,
    batches: bool = False,
) -> AsyncIterator[AsyncIterator[Any]]:
    """Open an event stream; yield an async iterator of its ``SSEFrame``s (``batches=True``: of ``Read``s,
    every event one read from the network completed, for a reader that handles many at once).

    Errors at open (non-2xx, wrong content type, no connection) raise ServiceErrors; a stream that
    breaks mid-way raises ``StreamDropped``; a stream the server ends cleanly just stops. ``on_bytes`` is
    called whenever bytes arrive, keepalive comments included (they never become frames): how the
    relay tells a quiet stream from a frozen one.
    """
    # Uncompressed: the event bound (EventParser) counts the bytes on the wire, which gzip would multiply.
    headers = {"Accept": "text/event-stream", "Accept-Encoding": "identity", "Cache-Control": "no-store"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    response = await _send(svc, "GET", path, params=params, headers=headers, stream=True)
    try:
        content_type = response.headers.get("content-type", "")
        if "text/event-stream" not in content_type:
            raise errors.Unavailable(
                f"expected an event stream from {path}, got {content_type or 'no content type'}",
                status=response.status_code,
                request_id=response.headers.get("x-request-id"),
            )
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise errors.Unavailable(
                f"expected an uncompressed event stream from {path}, got one compressed with "
                f"{encoding[:40]!r}",
                status=response.status_code,
                request_id=response.headers.get("x-request-id"),
            )

        network = response.extensions.get("network_stream")

        def waiting() -> bool:
            """Whether more bytes of the stream already wait on the connection (a burst being read)."""
            return network is not None and bool(network.get_extra_info("is_readable"))

        async def frames() -> AsyncIterator[Any]:
            parser = EventParser()
            chunks = response.aiter_raw()
            try:
                async for chunk in chunks:
                    if on_bytes is not None:
                        on_bytes()
                    found = parser.feed(chunk)
                    if batches:
                        more = waiting()
                        if found or not more:  # (an empty batch says the read ended: a reader may flush)
                            yield Read(found, more=more)
                    else:
                        for frame in found:
                            yield frame
            except httpx.TransportError as exc:
                raise errors.StreamDropped(
                    _transport_error(svc, exc, STREAM_TIMEOUT).message,
                    status=response.status_code,
                    request_id=response.headers.get("x-request-id"),
                ) from None
            finally:
                await chunks.aclose()

        async with aclosing(frames()) as stream:
            yield stream
    finally:
        await response.aclose()


class Read(list):
    """The events (``SSEFrame``s) one read from the network completed (none when the read completed no event
    and nothing more was waiting), and whether more bytes were already waiting on the connection after that
    read (``more``: the service sends faster than it is read, as in a burst; a reader may then wait for the
    next read before passing the events on, and should pass them on at once when ``more`` is false)."""

    def __init__(self, items: Any = (), *, more: bool = False) -> None:
        super().__init__(items)
        self.more = more


class SSEFrame(NamedTuple):
    """One event of a stream as sent: its type (``""`` for the default, ``message``), its data lines joined,
    the stream's last event id so far (``""`` before any), and its ``retry`` hint in ms."""

    event: str
    data: str
    id: str
    retry: int | None = None


class EventParser:
    """The events in the bytes of an event stream, read as the WHATWG specification reads them (lines end
    with CR LF, LF or CR; fields ``event``, ``data``, ``id`` (kept for the events that follow, unless it
    holds a NUL) and ``retry``; comments and other fields ignored). Only events with data are returned:
    an event without any is nothing to deliver. Text is UTF-8, a malformed sequence shown as U+FFFD.

    Bytes are decoded and split once per read, not line by line: an event's lines are held (as bytes) only
    until its blank line arrives, and an event still without one after ``MAX_EVENT`` bytes ends the stream
    (``StreamDropped``), so a service that never ends one cannot grow the console without end."""

    def __init__(self):
        self.held: list[bytes] = []  # the bytes since the last complete event (CR LF and CR made LF)
        self.held_size = 0
        self.cr = False  # the last read ended with CR: an LF starting the next is part of that line's end
        self.last_id = ""

    def feed(self, chunk: bytes) -> list[SSEFrame]:
        """The events this read completes."""
        if self.cr and chunk[:1] == b"\n":
            chunk = chunk[1:]  # the second half of the CR LF the last read ended with
        self.cr = chunk[-1:] == b"\r"
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = chunk.rfind(b"\n\n")  # the last blank line of this read, if any
        if end < 0 and chunk[:1] == b"\n" and self.held and self.held[-1].endswith(b"\n"):
            end = -1  # the blank line began with the held bytes' last LF
        elif end < 0:
            if chunk:
                self.held.append(chunk)
                self.held_size += len(chunk)
            self._bound()
            return []
        complete = b"".join([*self.held, chunk[: max(end, 0)]])
        rest = chunk[end + 2 :]
        self.held, self.held_size = ([rest], len(rest)) if rest else ([], 0)
        self._bound()
        return self._frames(complete)

    def _bound(self) -> None:
        if self.held_size > MAX_EVENT:
            raise errors.StreamDropped(
                f"the service sent an event larger than the console reads ({MAX_EVENT} bytes)"
            )

    def _frames(self, complete: bytes) -> list[SSEFrame]:
        frames = []
        for block in complete.decode("utf-8", "replace").split("\n\n"):
            if block[:4] == "id: ":
                # The usual event (the service's telemetry): an id line and one data line, read at once.
                id_line, newline, data_line = block.partition("\n")
                if (
                    newline
                    and data_line[:6] == "data: "
                    and "\n" not in data_line
                    and "\0" not in id_line
                    and len(data_line) > 6
                ):
                    self.last_id = id_line[4:]
                    frames.append(SSEFrame("", data_line[6:], self.last_id))
                    continue
            event, data, retry = "", [], None
            for line in block.split("\n"):
                if not line or line[0] == ":":
                    continue
                name, _, value = line.partition(":")
                if value[:1] == " ":
                    value = value[1:]
                if name == "data":
                    data.append(value)
                elif name == "event":
                    event = value
                elif name == "id":
                    if "\0" not in value:
                        self.last_id = value
                elif name == "retry":
                    with contextlib.suppress(ValueError):
                        retry = int(value)
            if data and (len(data) > 1 or data[0]):
                frames.append(SSEFrame(event, "\n".join(data), self.last_id, retry))
        return frames


# --- outside the service: the alerts' webhooks ------------------------------------------------------

# Of a webhook receiver's answer, the console reads this much (its start is kept in the delivery log).
OUTSIDE_READ = 4096
OUTSIDE_PREVIEW = 200


@dataclass(frozen=True)
class Posted:
    status: int
    preview: str  # the start of the answer's body, as text


async def post_outside(
    url: str, *, content: bytes, headers: Mapping[str, str], allow_private: bool, timeout: float, what: str
) -> Posted:
    """POST ``content`` to a URL that is not the service (an alert webhook), under the base URL's address
    rules: ``targets`` checks the URL before, and the peer of the connection before anything is written
    (DNS rebinding). No redirect is followed, nothing is retried here (the caller keeps a delivery log and
    retries), the whole answer has ``timeout`` seconds, and at most ``OUTSIDE_READ`` bytes of it are read.

    Raises ``targets.ForbiddenTarget`` (nothing sent), ``errors.Unavailable`` (no connection: nothing sent)
    or ``errors.NoAnswer`` (sent, no answer). A client of its own per call: deliveries are few, and a
    worker's calls come from event loops that do not last."""
    await targets.acheck_url(url, allow_private=allow_private, what=what)
    _allow_private.set(allow_private)
    _target_name.set(what)
    client = httpx.AsyncClient(
        transport=_transport(),
        timeout=httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout)),
        headers={"User-Agent": USER_AGENT},
        follow_redirects=False,
    )
    try:
        async with asyncio.timeout(timeout):
            response = await client.send(
                client.build_request("POST", url, content=content, headers=headers), stream=True
            )
            body = b""
            try:
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) >= OUTSIDE_READ:
                        break
            finally:
                await response.aclose()
    except TimeoutError:
        raise errors.NoAnswer(f"{what} did not answer within {_secs(timeout)}") from None
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise errors.Unavailable(f"could not connect to {what}: {str(exc) or type(exc).__name__}") from None
    except httpx.TransportError as exc:
        raise errors.NoAnswer(f"the connection to {what} broke: {str(exc) or type(exc).__name__}") from None
    finally:
        await client.aclose()
    preview = body[:OUTSIDE_PREVIEW].decode(response.encoding or "utf-8", "replace").strip()
    return Posted(status=response.status_code, preview=preview)
