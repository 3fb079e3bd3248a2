"""The sandbox: a local, faithful implementation of the service's HTTP interface (its own ASGI app).

This module assembles the wings (docs/architecture.md, "The sandbox in wings"): the resources' routes,
the control interface, the CDP proxy and live view, and ``assemble``, which hands the resources' functions
to the wings below them (core and chromium never import a resource).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from console import localenv
from console.sandbox import control, demo
from console.sandbox.chromium import confine, engine, page_events
from console.sandbox.core import http, state, store
from console.sandbox.core.state import Tenant, key_digest, registry
from console.sandbox.resources import (
    RESOURCES,
    api_keys,
    audit_logs,
    browser_computer,
    browser_files,
    browser_playwright,
    browser_processes,
    browser_replays,
    browser_webmcp,
    cdp_proxy,
    extensions,
    live_view,
    pools,
    profiles,
    projects,
    sessions,
    telemetry,
)

# The demo tenant's key is per install (the local .env, which the console reads too); without one, the
# sandbox has no demo tenant: tenants are created through the control interface.
DEMO_KEY = os.environ.get("SANDBOX_DEMO_KEY") or localenv.read().get("SANDBOX_DEMO_KEY") or None


def assemble() -> None:
    """Hand the resources' functions to the wings below them, which name what they need as hooks
    (``core.hooks``). Runs again harmlessly; ``build_app`` runs it first, and so must anything that uses
    the sandbox's objects in-process (a test, a benchmark)."""
    state.tenant_setup.hand_in(_set_up_tenant)
    http.key_refused.hand_in(api_keys.is_refused)
    http.request_logged.hand_in(audit_logs.record)
    store.register(*browser_computer.STORED, *browser_processes.STORED, *telemetry.STORED)
    store.before_save.hand_in(lambda: engine.get().remember())
    store.after_load.hand_in(
        browser_processes.after_restart,
        browser_replays.after_restart,
        browser_files.after_restart,
        telemetry.after_restart,
    )
    store.new_audit_log.hand_in(audit_logs.new_log)
    engine.on_download.hand_in(browser_files.save_download)
    engine.on_profile_saved.hand_in(profiles.mark_updated)
    engine.extension_archive.hand_in(extensions.archive_of)
    engine.check_extension.hand_in(extensions.validate_archive)
    engine.on_extension_used.hand_in(extensions.mark_used)
    page_events.captured.hand_in(telemetry.captured)
    page_events.recorded.hand_in(telemetry.from_page)
    sessions.ended.hand_in(
        telemetry.finish, browser_replays.stop_all, browser_playwright.stop_all, browser_webmcp.stop_all
    )
    profiles.updated.hand_in(pools.profile_updated)


def _set_up_tenant(tenant: Tenant, with_demo: bool) -> None:
    """A new tenant's default project, and its demo data when asked."""
    projects.create_default(tenant)
    if with_demo:
        demo.seed(tenant)


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


log = logging.getLogger("console.sandbox")


def _save(only=None) -> None:
    """Write the state (``SANDBOX_STATE``) if there is a file; a failure is logged, never an answer's."""
    if store.current is None:
        return
    try:
        store.current.save(registry, only)
    except Exception:
        log.exception("could not save the sandbox state to %s", store.current.path)


async def _save_periodically() -> None:
    tick = 0
    while True:
        await asyncio.sleep(store.SAVE_INTERVAL)
        tick += 1
        if tick % store.FULL_SAVE_EVERY == 0:
            store.current.touched.clear()
            _save()
        elif store.current.touched:
            touched, store.current.touched = store.current.touched, set()
            _save(touched)


def _key_of(scope) -> str | None:
    """The digest of the request's API key: a request changes its own tenant only (tenant creation has
    none; a session's VM route acts as the session's tenant)."""
    routed = scope.get(http.TENANT_SCOPE)
    if routed is not None:
        return routed.key_sha256
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return key_digest(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
    return None


class SaveAfterChanges:
    """With a state file, every request that may change state is saved before its answer starts."""

    READS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or store.current is None:
            return await self.app(scope, receive, send)
        key = _key_of(scope)
        if key:
            store.current.touched.add(key)
        if scope["method"] in self.READS:
            return await self.app(scope, receive, send)

        async def send_after_saving(message):
            if message["type"] == "http.response.start":
                _save([key] if key else store.current.unsaved(registry))
            await send(message)

        return await self.app(scope, receive, send_after_saving)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette):
    saver = asyncio.get_running_loop().create_task(_save_periodically()) if store.current else None
    # Replays past their retention go (video and record) even when nobody reads them again.
    sweeper = asyncio.get_running_loop().create_task(browser_replays.sweep_periodically())
    yield
    sweeper.cancel()
    if saver is not None:
        saver.cancel()
        # Running browsers go to standby first, so their URL and storage are what the next start wakes.
        browsers = engine.get()
        for live in list(browsers.lives.values()):
            with contextlib.suppress(Exception):
                await browsers.standby(live)
        _save()
    try:
        # Stopping the sandbox stops every browser it started.
        await engine.get().shutdown()
        if store.current is not None:
            _save()  # profiles that kept a session's storage on the way out
            store.current.close()
    finally:
        # No temporary directory outlives the sandbox (uvicorn re-raises SIGTERM after this shutdown, so
        # the process ends without running atexit).
        browser_files.remove_temporary()
        confine.remove_temporary()


def build_app(*, demo_key: str | None = DEMO_KEY) -> Starlette:
    assemble()
    # With SANDBOX_STATE, what the last run saved comes back first: the demo tenant is seeded only once.
    store.open_configured(registry)
    if demo_key and registry.get(demo_key) is None:
        registry.create(demo_key, demo=True)
        _save()
    routes = [Route("/", index, methods=["GET"]), *control.routes, *cdp_proxy.routes, *live_view.routes]
    for module in RESOURCES:
        routes.extend(module.routes)
    # Capability URLs a browser opens (the live view the console frames, a replay's page, a CDP client):
    # their token guards them, and a page of another origin may open them.
    opened_by_browsers = tuple(
        sorted(
            {
                route.path.partition("{")[0]
                for route in (*cdp_proxy.routes, *live_view.routes, *browser_replays.routes)
                if route.path.startswith("/_sandbox/")
            }
        )
    )
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(control.LocalOnly, opened_by_browsers=opened_by_browsers),
            Middleware(SaveAfterChanges),
        ],
        exception_handlers={HTTPException: http_error, Exception: server_error},
        lifespan=lifespan,
    )
