"""The sandbox's control interface under /_sandbox/ (never part of the service, never on the console).

Tests and operators use it to create isolated tenants, move a tenant's clock and inject faults. Every
route but tenant creation and health authenticates with the tenant's own key.
"""

from __future__ import annotations

import asyncio
import re

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from console.sandbox import engine
from console.sandbox.errors import ApiError, invalid
from console.sandbox.http import endpoint, last_event_id, no_content, ok, read_json, sse_response
from console.sandbox.state import Fault, new_api_key, parse_time, registry, rfc3339


async def health(request: Request):
    status = engine.get().status()
    return JSONResponse(
        {"ok": True, "tenants": len(registry.own()), "engine": status["engine"], "browsers": status}
    )


async def create_tenant(request: Request):
    try:
        body = await request.json() if (await request.body()).strip() else {}
    except ValueError:
        body = {}
    api_key = new_api_key()  # said once, here: the sandbox keeps only its digest
    tenant = registry.create(api_key, demo=bool(body.get("demo")))
    return JSONResponse({"api_key": api_key, "tenant_id": tenant.id}, status_code=201)


@endpoint
async def get_clock(request: Request):
    return ok({"now": rfc3339(request.state.tenant.now())})


@endpoint
async def set_clock(request: Request):
    tenant = request.state.tenant
    body = await read_json(request)
    if "set" in body:
        try:
            tenant.set_clock(parse_time(str(body["set"])))
        except ValueError:
            raise invalid("set must be an RFC 3339 timestamp", set="not an RFC 3339 timestamp") from None
    elif "advance_seconds" in body:
        try:
            tenant.advance(float(body["advance_seconds"]))
        except (TypeError, ValueError):
            raise invalid("advance_seconds must be a number", advance_seconds="not a number") from None
    else:
        raise invalid("give set or advance_seconds", set="required unless advance_seconds is given")
    tenant.topic("clock").publish(tenant.now())
    return ok({"now": rfc3339(tenant.now())})


@endpoint
async def add_fault(request: Request):
    body = await read_json(request)
    try:
        pattern = re.compile(str(body.get("path", ".*")))
    except re.error as exc:
        raise invalid("path is not a valid regular expression", path=str(exc)) from None
    fault = Fault(
        method=str(body.get("method", "*")).upper(),
        path=pattern,
        status=body.get("status"),
        code=body.get("code"),
        message=body.get("message"),
        body=body.get("body"),
        retry_after=body.get("retry_after"),
        latency_ms=int(body.get("latency_ms") or 0),
        drop_after_events=body.get("drop_after_events"),
        fields=body.get("fields") if isinstance(body.get("fields"), dict) else None,
        stall_seconds=float(body.get("stall_seconds") or 0),
        stall_after_chunks=int(body.get("stall_after_chunks") or 1),
        delay_response_ms=int(body.get("delay_response_ms") or 0),
        drop_response=bool(body.get("drop_response")),
        count=body.get("count", 1),
    )
    request.state.tenant.faults.append(fault)
    return ok({"faults": len(request.state.tenant.faults)}, status=201)


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
    body = await read_json(request)
    if "keepalive_seconds" in body:
        value = body["keepalive_seconds"]
        if not isinstance(value, int | float) or value <= 0:
            raise invalid("keepalive_seconds must be positive", keepalive_seconds="must be > 0")
        tenant.keepalive_seconds = float(value)
    tenant.settings.update({k: v for k, v in body.items() if k != "keepalive_seconds"})
    return ok({"keepalive_seconds": tenant.keepalive_seconds})


@endpoint
async def test_stream(request: Request):
    """A numbered SSE stream (ids 1..count, data {"n": i}) that ends cleanly: for client tests."""
    count = int(request.query_params.get("count", "10"))
    interval = float(request.query_params.get("interval", "0.01"))
    start = (last_event_id(request) or 0) + 1
    if count < 0:
        raise ApiError(400, "invalid_request", "count must be >= 0")

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
