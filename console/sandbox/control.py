"""The sandbox's control interface under /_sandbox/ (never part of the service, never on the console).

Tests and operators use it to create isolated tenants, move a tenant's clock and inject faults. Every
route but tenant creation and health authenticates with the tenant's own key.

Developers share one sandbox, so nothing here may let one tenant stall the event loop or grow the process
without bound (docs/security.md, section 8, "The control interface cannot stall or grow the sandbox"):

- Bodies: at most ``MAX_CONTROL_BODY`` bytes, counted as they are read (413 ``request_too_large``).
- Tenants: at most ``SANDBOX_MAX_TENANTS`` (default 1000), of which ``SANDBOX_MAX_DEMO_TENANTS`` (default
  20) with demo data; past either, creation answers 429 ``tenant_limit_reached`` or
  ``demo_tenant_limit_reached``.
- Faults: at most ``MAX_FAULTS`` per tenant (429 ``fault_limit_reached``); every field is checked and
  bounded (400 ``invalid_request`` with a detail per field). ``path`` is a regular expression of Python's
  syntax, at most ``MAX_PATTERN`` characters and ``MAX_PATTERN_WEIGHT`` expanded (counted repeats
  multiply their body: ``regex`` unrolls them when compiling); it is compiled and matched by ``regex``,
  whose search stops after ``state.MATCH_TIMEOUT`` (a pattern that slow on a request path does not match,
  and its fault is dropped) and all of whose searches on one request stop after ``state.MATCH_BUDGET``.
- The clock stays within ``state.MAX_CLOCK_OFFSET`` of the real one (400 past it).
- Settings: only the known knobs (``SETTINGS``), each checked and bounded.

Nor may a web page reach it (``LocalOnly``): any site a developer visits can send requests to
127.0.0.1, and a site whose name it re-points at 127.0.0.1 (DNS rebinding) can also read the answers.
The sandbox answers only to its own names (``Host``: 127.0.0.1, localhost or [::1] with its port, the
address the connection reached, ``SANDBOX_ALLOWED_HOSTS``), on every route; the control interface
takes no request a browser marks as coming from another origin (``Origin``, ``Sec-Fetch-Site``) and
no body that is not JSON, which no page can send cross-origin without asking first (CORS).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import warnings
from re import _constants as sre
from re import _parser as sre_parse

import regex
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from console.sandbox.chromium import engine
from console.sandbox.core.errors import ApiError, invalid
from console.sandbox.core.fields import Bad, Body, Context, Field
from console.sandbox.core.http import (
    endpoint,
    error_response,
    last_event_id,
    no_content,
    ok,
    read_json,
    sse_response,
)
from console.sandbox.core.state import Fault, new_api_key, new_id, parse_time, registry, rfc3339

DEFAULT_MAX_TENANTS = 1000
DEFAULT_MAX_DEMO_TENANTS = 20  # each takes about 7 MB and 0.2 s of the event loop to seed
MAX_FAULTS = 100
MAX_PATTERN = 1000  # characters of a fault's path pattern
MAX_PATTERN_WEIGHT = 10_000  # its size with every counted repeat unrolled (see _weight)
MAX_DELAY_MS = 120_000  # latency_ms, delay_response_ms
MAX_STALL_SECONDS = 120.0
MAX_CHUNKS = 1_000_000  # stall_after_chunks, drop_after_events
MAX_COUNT = 1_000_000
MAX_RETRY_AFTER = 86_400
MAX_CODE = 100  # characters
MAX_MESSAGE = 2_000
MAX_BODY = 64 * 1024  # characters of a fault's body
MAX_FIELDS = 16 * 1024  # characters of a fault's fields, as JSON
METHODS = ("*", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
FAULT_KEYS = frozenset(
    {
        "method",
        "path",
        "status",
        "code",
        "message",
        "body",
        "retry_after",
        "latency_ms",
        "drop_after_events",
        "fields",
        "stall_seconds",
        "stall_after_chunks",
        "delay_response_ms",
        "drop_response",
        "count",
    }
)
# Tenant settings (``POST /_sandbox/settings``) and their bounds.
MAX_KEEPALIVE_SECONDS = 3600.0
MAX_TELEMETRY_RATE = 1000.0
MAX_TELEMETRY_RETENTION = 1_000_000
# The body of a control request, in bytes: a fault's largest fields are far below it. Read in chunks and
# refused past it (413), so nobody (tenant creation needs no key) makes the sandbox hold and parse a
# body of any size on the event loop.
MAX_CONTROL_BODY = 1024 * 1024
# ``GET /_sandbox/test_stream``
MAX_TEST_STREAM_COUNT = 1_000_000
MAX_TEST_STREAM_INTERVAL = 60.0
# The names the sandbox answers to on its own port, beside ``SANDBOX_ALLOWED_HOSTS``.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
# What a browser says of a request it sends for a page of the sandbox's own origin, or for a URL typed.
SAME_ORIGIN_FETCH = frozenset({"same-origin", "none"})


def _limit(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name) or default))
    except ValueError:
        return default


def max_tenants() -> int:
    """``SANDBOX_MAX_TENANTS``: how many tenants this sandbox holds at most (the demo tenant included)."""
    return _limit("SANDBOX_MAX_TENANTS", DEFAULT_MAX_TENANTS)


def allowed_hosts() -> frozenset[str]:
    """``SANDBOX_ALLOWED_HOSTS``: more names the sandbox answers to, comma-separated, each ``name`` (any
    port) or ``name:port``; ``*`` for any (then DNS rebinding is the network's business)."""
    names = (os.environ.get("SANDBOX_ALLOWED_HOSTS") or "").split(",")
    return frozenset(name.strip().lower() for name in names if name.strip())


def max_demo_tenants() -> int:
    """``SANDBOX_MAX_DEMO_TENANTS``: how many of them may hold demo data (the demo key's included)."""
    return _limit("SANDBOX_MAX_DEMO_TENANTS", DEFAULT_MAX_DEMO_TENANTS)


async def read_control_json(request: Request) -> dict:
    """``read_json`` of a body of at most ``MAX_CONTROL_BODY`` bytes, else 413 before the rest is read."""
    return await read_json(request, MAX_CONTROL_BODY)


async def health(request: Request):
    status = engine.get().status()
    return JSONResponse(
        {"ok": True, "tenants": len(registry.own()), "engine": status["engine"], "browsers": status}
    )


async def create_tenant(request: Request):
    request_id = "req_" + new_id(length=16)
    try:
        body = await read_control_json(request)
        demo = body.get("demo", False)
        if not isinstance(demo, bool):
            raise invalid("demo must be true or false", demo="a boolean")
        limit = max_tenants()
        if len(registry.own()) >= limit:
            raise ApiError(
                429,
                "tenant_limit_reached",
                f"this sandbox holds its limit of {limit} tenants (SANDBOX_MAX_TENANTS)",
            )
        if demo and registry.demos() >= max_demo_tenants():
            raise ApiError(
                429,
                "demo_tenant_limit_reached",
                f"this sandbox holds its limit of {max_demo_tenants()} tenants with demo data"
                " (SANDBOX_MAX_DEMO_TENANTS); a tenant without demo data can still be created",
            )
    except ApiError as error:
        return error_response(error, request_id)
    api_key = new_api_key()  # said once, here: the sandbox keeps only its digest
    tenant = registry.create(api_key, demo=demo)
    return JSONResponse({"api_key": api_key, "tenant_id": tenant.id}, status_code=201)


@endpoint
async def get_clock(request: Request):
    return ok({"now": rfc3339(request.state.tenant.now())})


@endpoint
async def set_clock(request: Request):
    tenant = request.state.tenant
    body = await read_control_json(request)
    if "set" in body:
        try:
            moment = parse_time(str(body["set"]))
        except ValueError:
            raise invalid("set must be an RFC 3339 timestamp", set="not an RFC 3339 timestamp") from None
        try:
            tenant.set_clock(moment)
        except (ValueError, OverflowError):
            raise invalid("set is too far from now", set="at most 100 years from the real time") from None
    elif "advance_seconds" in body:
        step = body["advance_seconds"]
        if not _is_number(step):
            raise invalid("advance_seconds must be a number", advance_seconds="not a finite number")
        try:
            tenant.advance(float(step))
        except (ValueError, OverflowError):
            raise invalid(
                "advance_seconds takes the clock too far",
                advance_seconds="the clock may be at most 100 years from the real time",
            ) from None
    else:
        raise invalid("give set or advance_seconds", set="required unless advance_seconds is given")
    tenant.topic("clock").publish(tenant.now())
    return ok({"now": rfc3339(tenant.now())})


def _is_number(value) -> bool:
    """An int or a finite float, not a boolean (an int of 400 digits cannot be a float: no math.isfinite)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _weight(items) -> int:
    """The size of a parsed pattern with every counted repeat unrolled, as ``regex`` compiles it (it
    turns ``a{1000}`` into a 1000-character string): ``(?:(?:a{1000}){1000}){1000}`` would ask for
    gigabytes."""
    total = 0
    for op, av in items:
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, body = av
            times = max(low, 1) if high == sre.MAXREPEAT else max(high, 1)
            total += 1 + times * _weight(body)
        elif op is sre.SUBPATTERN:
            total += 1 + _weight(av[3])
        elif op is sre.BRANCH:
            total += 1 + sum(_weight(branch) for branch in av[1])
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            total += 1 + _weight(av[1])
        elif op is sre.ATOMIC_GROUP:
            total += 1 + _weight(av)
        elif op is sre.GROUPREF_EXISTS:
            total += 1 + _weight(av[1]) + (_weight(av[2]) if av[2] is not None else 0)
        else:
            total += 1
        if total > MAX_PATTERN_WEIGHT:
            return total
    return total


def compile_path(pattern) -> regex.Pattern:
    """A fault's ``path``: a regular expression of Python's ``re`` syntax, bounded in length and expanded
    size, compiled by ``regex`` (whose searches take a timeout), else 400."""
    if not isinstance(pattern, str):
        raise invalid("path must be a regular expression", path="a string")
    if len(pattern) > MAX_PATTERN:
        raise invalid("path is too long", path=f"at most {MAX_PATTERN} characters")
    try:
        with warnings.catch_warnings():  # "possible nested set" and such: the tenant's business
            warnings.simplefilter("ignore")
            parsed = sre_parse.parse(pattern)
        weight = _weight(parsed)
    except re.error as exc:
        raise invalid("path is not a valid regular expression", path=str(exc)) from None
    except RecursionError:
        raise invalid("path nests too deeply", path="groups nested too deeply") from None
    if weight > MAX_PATTERN_WEIGHT:
        raise invalid(
            "path is too large once its repeats are counted",
            path=f"counted repeats expand it past {MAX_PATTERN_WEIGHT} elements",
        )
    try:
        return regex.compile(pattern)
    except (regex.error, RecursionError, MemoryError) as exc:
        raise invalid("path is not a valid regular expression", path=str(exc)[:200]) from None


def _text(high: int):
    """A string of at most ``high`` characters, or null."""

    def check(value, context: Context) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise Bad("a string")
        if len(value) > high:
            raise Bad(f"at most {high} characters")
        return value

    return check


def _bounded(low: float, high: float, *, default=None, integer: bool = True):
    """A number (an integer when ``integer``) from ``low`` to ``high``; ``default`` when null."""
    kind = "an integer" if integer else "a number"

    def check(value, context: Context):
        if value is None:
            return default
        if not (_is_integer(value) if integer else _is_number(value)) or not low <= value <= high:
            raise Bad(f"{kind} from {low:g} to {high:g}")
        return value

    return check


def _method(value, context: Context) -> str:
    if not isinstance(value, str) or value.upper() not in METHODS:
        raise Bad(f"one of {', '.join(METHODS)}")
    return value.upper()


def _path(value, context: Context) -> regex.Pattern:
    try:
        return compile_path(value)
    except ApiError as error:
        raise Bad(error.details[0]["message"]) from None


def _fields(value, context: Context) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise Bad("an object")
    if len(json.dumps(value)) > MAX_FIELDS:
        raise Bad(f"at most {MAX_FIELDS} characters as JSON")
    return value


def _drop_response(value, context: Context) -> bool:
    if not isinstance(value, bool):
        raise Bad("a boolean")
    return value


def _count(value, context: Context) -> int | None:
    if value is not None and (not _is_integer(value) or not 1 <= value <= MAX_COUNT):
        raise Bad(f"an integer from 1 to {MAX_COUNT}, or null for every request until cleared")
    return value


# ``POST /_sandbox/faults``: every field checked and bounded (a ``Fault``'s fields, its ``body`` as text).
FAULT = Body(
    message="the fault has invalid fields",
    unknown="not a field of a fault",
    clip=100,
    complete=True,
    fields=(
        Field("method", _method, default="*"),
        Field("path", _path, default=compile_path(".*")),
        Field("status", _bounded(200, 599)),  # 1xx is no final answer
        Field("retry_after", _bounded(0, MAX_RETRY_AFTER, integer=False)),
        Field("code", _text(MAX_CODE)),
        Field("message", _text(MAX_MESSAGE)),
        Field("body", _text(MAX_BODY)),
        Field("fields", _fields),
        Field("drop_response", _drop_response, default=False),
        Field("count", _count, default=1),
        Field("latency_ms", _bounded(0, MAX_DELAY_MS, default=0)),
        Field("drop_after_events", _bounded(0, MAX_CHUNKS)),
        Field("stall_seconds", _bounded(0, MAX_STALL_SECONDS, default=0, integer=False)),
        Field("stall_after_chunks", _bounded(1, MAX_CHUNKS, default=1)),
        Field("delay_response_ms", _bounded(0, MAX_DELAY_MS, default=0)),
    ),
)


def parse_fault(body: dict) -> Fault:
    """A fault from its request body, every field checked (400 with a detail per bad field)."""
    return Fault(**FAULT.validate(body))


@endpoint
async def add_fault(request: Request):
    tenant = request.state.tenant
    fault = parse_fault(await read_control_json(request))
    if len(tenant.faults) >= MAX_FAULTS:
        raise ApiError(
            429,
            "fault_limit_reached",
            f"a tenant holds at most {MAX_FAULTS} faults: DELETE /_sandbox/faults clears them",
        )
    tenant.faults.append(fault)
    return ok({"faults": len(tenant.faults)}, status=201)


@endpoint
async def clear_faults(request: Request):
    request.state.tenant.faults.clear()
    return no_content()


@endpoint
async def list_requests(request: Request):
    """The tenant's recent requests (method, path, status): how tests see retries happen or not."""
    return ok([r for r in request.state.tenant.requests if not r["path"].startswith("/_sandbox/")])


@endpoint
async def list_streams(request: Request):
    """Event streams open right now, by path: ``{"/browsers/x/telemetry/stream": 1}``."""
    return ok(dict(request.state.tenant.open_streams))


@endpoint
async def update_settings(request: Request):
    """Per-tenant knobs, e.g. ``keepalive_seconds`` so tests need not wait 15 s for a keepalive."""
    tenant = request.state.tenant
    changes = SETTINGS.validate(await read_control_json(request))
    keepalive = changes.pop("keepalive_seconds", None)
    if keepalive is not None:
        tenant.keepalive_seconds = float(keepalive)
    tenant.settings.update(changes)
    return ok({"keepalive_seconds": tenant.keepalive_seconds})


def _setting(accepts, why: str):
    def check(value, context: Context):
        if not accepts(value):
            raise Bad(why)
        return value

    return check


# ``POST /_sandbox/settings``: the keepalive, and the tenant settings other code reads (``tenant.settings``),
# each with its check; nothing else may be set (the audit log and the org limits live there too, and a
# value there is saved with the state).
SETTINGS = Body(
    message="the settings have invalid values",
    unknown="not a setting: one of keepalive_seconds, telemetry_rate_per_second, telemetry_retention, "
    "exec_enabled",
    clip=100,
    fields=(
        Field(
            "keepalive_seconds",
            _setting(
                lambda v: _is_number(v) and 0 < v <= MAX_KEEPALIVE_SECONDS,
                f"a number above 0 and at most {MAX_KEEPALIVE_SECONDS:g}",
            ),
        ),
        Field(
            "telemetry_rate_per_second",
            _setting(
                lambda v: _is_number(v) and 0 <= v <= MAX_TELEMETRY_RATE,
                f"a number from 0 to {MAX_TELEMETRY_RATE:g}",
            ),
        ),
        Field(
            "telemetry_retention",
            _setting(
                lambda v: _is_integer(v) and 1 <= v <= MAX_TELEMETRY_RETENTION,
                f"an integer from 1 to {MAX_TELEMETRY_RETENTION}",
            ),
        ),
        Field("exec_enabled", _setting(lambda v: isinstance(v, bool), "a boolean")),
    ),
)


@endpoint
async def test_stream(request: Request):
    """A numbered SSE stream (ids 1..count, data {"n": i}) that ends cleanly: for client tests."""
    try:
        count = int(request.query_params.get("count", "10"))
        interval = float(request.query_params.get("interval", "0.01"))
    except ValueError:
        raise invalid("count and interval must be numbers", count="an integer", interval="seconds") from None
    if not 0 <= count <= MAX_TEST_STREAM_COUNT:
        raise invalid("count is out of range", count=f"an integer from 0 to {MAX_TEST_STREAM_COUNT}")
    if not 0 <= interval <= MAX_TEST_STREAM_INTERVAL:  # nan fails too
        raise invalid("interval is out of range", interval=f"seconds from 0 to {MAX_TEST_STREAM_INTERVAL:g}")
    start = (last_event_id(request) or 0) + 1

    async def frames():
        for n in range(start, count + 1):
            await asyncio.sleep(interval)
            yield n, {"n": n}

    return sse_response(request, frames())


routes = [
    Route("/_sandbox/health", health, methods=["GET"]),
    Route("/_sandbox/tenants", create_tenant, methods=["POST"]),
    Route("/_sandbox/clock", get_clock, methods=["GET"]),
    Route("/_sandbox/clock", set_clock, methods=["POST"]),
    Route("/_sandbox/faults", add_fault, methods=["POST"]),
    Route("/_sandbox/faults", clear_faults, methods=["DELETE"]),
    Route("/_sandbox/requests", list_requests, methods=["GET"]),
    Route("/_sandbox/settings", update_settings, methods=["POST"]),
    Route("/_sandbox/streams", list_streams, methods=["GET"]),
    Route("/_sandbox/test_stream", test_stream, methods=["GET"]),
]


# Who may send requests ---------------------------------------------------------------------------


def _name_and_port(authority: str, default_port: int | None) -> tuple[str, int | None] | None:
    """(name, port) of ``host[:port]`` (IPv6 in brackets), lowercase; None when it is not one."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        name, bracket, rest = authority.partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        name, port = name + "]", rest[1:] if rest else None
    else:
        name, colon, port = authority.partition(":")
        port = port if colon else None
    if not name or (port is not None and not (port.isdigit() and len(port) <= 5)):
        return None
    return name, int(port) if port is not None else default_port


class LocalOnly:
    """ASGI middleware: the sandbox answers only to its own names, and its control interface only to
    requests that no other origin's page sent.

    - Every route, HTTP and websocket: ``Host`` is 127.0.0.1, localhost or [::1] with the sandbox's port,
      the address the connection reached with that port (an IP literal: no name to re-point), or one of
      ``SANDBOX_ALLOWED_HOSTS``; else 400 ``host_not_allowed`` (a websocket: refused before it opens).
      A page whose name was re-pointed at 127.0.0.1 (DNS rebinding) sends its own name.
    - ``/_sandbox/…`` but the capability URLs a browser opens (``opened_by_browsers``: the live view, which
      the console frames, a replay's page, the CDP proxy; each guarded by its token): an ``Origin`` that is
      not the sandbox's own, or a ``Sec-Fetch-Site`` other than ``same-origin`` or ``none``, is 403
      ``cross_origin_refused``; a ``Content-Type`` other than JSON, or a body without one, is 415
      ``unsupported_media_type``. A cross-origin page can only send a JSON body after a CORS preflight,
      which the sandbox never grants.
    """

    def __init__(self, app, *, opened_by_browsers: tuple[str, ...] = ()):
        self.app = app
        self.opened_by_browsers = opened_by_browsers
        self.extra = allowed_hosts()

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = {}
        for name, value in scope.get("headers") or ():
            headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
        host = headers.get("host", "")
        error = None
        if not self._allowed_host(host, scope.get("server")):
            error = ApiError(
                400,
                "host_not_allowed",
                f"the sandbox answers to 127.0.0.1, localhost and [::1] on its port, and to "
                f"SANDBOX_ALLOWED_HOSTS; not to Host {host[:200]!r}",
            )
        elif scope["path"].startswith("/_sandbox/") and not scope["path"].startswith(self.opened_by_browsers):
            error = _cross_origin(headers, host) or _not_json(headers)
        if error is None:
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket" and "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": 1008})  # the server answers 403
            return
        await error_response(error, "req_" + new_id(length=16))(scope, receive, send)

    def _allowed_host(self, host: str, server) -> bool:
        port = server[1] if server else None
        parsed = _name_and_port(host, 80)
        if parsed is None:
            return False
        name, given_port = parsed
        if "*" in self.extra or name in self.extra or f"{name}:{given_port}" in self.extra:
            return True
        reached = f"[{server[0]}]" if server and ":" in str(server[0]) else (server[0] if server else None)
        return (name in LOOPBACK_NAMES or name == reached) and (port is None or given_port == port)


def _cross_origin(headers: dict[str, str], host: str) -> ApiError | None:
    """403 for a request a browser sent from a page of another origin (or of no origin: ``null``)."""
    origin = headers.get("origin")
    if origin is not None:
        scheme, _, authority = origin.partition("://")
        scheme = scheme.lower()
        mine = _name_and_port(host, 80)
        theirs = _name_and_port(authority, 443 if scheme == "https" else 80)
        if scheme not in ("http", "https") or theirs is None or theirs != mine:
            return ApiError(
                403,
                "cross_origin_refused",
                f"the control interface takes no request from a page of another origin ({origin[:200]!r})",
            )
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site.strip().lower() not in SAME_ORIGIN_FETCH:
        return ApiError(
            403,
            "cross_origin_refused",
            f"the control interface takes no request from a page of another site (Sec-Fetch-Site: "
            f"{fetch_site[:50]!r})",
        )
    return None


def _not_json(headers: dict[str, str]) -> ApiError | None:
    """415 for a body that is not JSON, or a content type other than JSON (a form, ``text/plain``)."""
    kind = headers.get("content-type")
    has_body = headers.get("content-length", "0").strip() not in ("", "0") or "transfer-encoding" in headers
    if kind is None and not has_body:
        return None
    if kind is not None and kind.split(";")[0].strip().lower() == "application/json":
        return None
    return ApiError(
        415,
        "unsupported_media_type",
        "the control interface takes JSON bodies only (Content-Type: application/json)",
    )
