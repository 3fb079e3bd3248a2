"""The sandbox: a local, faithful implementation of the service's HTTP interface (its own ASGI app)."""

from __future__ import annotations

import contextlib
import os

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from console import localenv
from console.sandbox import cdp_proxy, control, engine, forward_proxy, live_view
from console.sandbox.resources import RESOURCES
from console.sandbox.state import registry

# The demo tenant's key is per install (the local .env, which the console reads too); without one, the
# sandbox has no demo tenant: tenants are created through the control interface.
DEMO_KEY = os.environ.get("SANDBOX_DEMO_KEY") or localenv.read().get("SANDBOX_DEMO_KEY") or None


async def http_error(request: Request, exc: HTTPException):
    codes = {404: "not_found", 405: "method_not_allowed"}
    code = codes.get(exc.status_code, "error")
    message = (
        f"no route {request.method} {request.url.path}" if exc.status_code in (404, 405) else str(exc.detail)
    )
    return JSONResponse({"code": code, "message": message, "details": []}, status_code=exc.status_code)


async def server_error(request: Request, exc: Exception):
    return JSONResponse(
        {
            "code": "internal_error",
            "message": "the sandbox failed to handle this request",
            "details": [],
            "inner_error": {"code": type(exc).__name__, "message": str(exc)[:200]},
        },
        status_code=500,
    )


async def index(request: Request):
    """What this sandbox is and which browser engine its sessions run (``engine.choose``)."""
    status = engine.get().status()
    return JSONResponse(
        {
            "name": "Browser Automation Service sandbox",
            "docs": "docs/sandbox.md",
            "engine": status["engine"],
            "engine_reason": status["reason"],
            "browsers": {k: v for k, v in status.items() if k not in ("engine", "reason")},
        }
    )


@contextlib.asynccontextmanager
async def lifespan(app: Starlette):
    yield
    # Stopping the sandbox stops every browser it started.
    await engine.get().shutdown()


def build_app(*, demo_key: str | None = DEMO_KEY) -> Starlette:
    if demo_key and registry.get(demo_key) is None:
        registry.create(demo_key, demo=True)
    routes = [Route("/", index, methods=["GET"]), *control.routes, *cdp_proxy.routes, *live_view.routes]
    routes += forward_proxy.routes
    for module in RESOURCES:
        routes.extend(module.routes)
    return Starlette(
        routes=routes,
        exception_handlers={HTTPException: http_error, Exception: server_error},
        lifespan=lifespan,
    )
