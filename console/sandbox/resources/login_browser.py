"""A managed-auth login's real browser: under the Chromium engine each login flow runs in its own session.

- When a flow starts (``auth_connections.start_flow``) the sandbox creates a browser session for it (the
  flow's ``browser_session_id``, in the tenant's browsers table, tagged ``auth_connection=<id>``, headful as
  the service's login browsers are, so it has a live view) opened on the connection's login site
  (``demo_sites.login_site``: the connection's domain when it is one of the scripted sites, else the scripted
  site that stands for it). Its telemetry captures the operational categories, ``page`` and ``console``;
  never ``network`` (a login's form posts carry its values) nor ``interaction``.
- The flow's state machine stays the source of truth (sync and time-driven). One driver task per flow
  (``Driver``) mirrors it into the page: every submit the flow accepts (a human's or a stored credential's)
  is typed into the real form of the step it answered and submitted (the site's own rules then show the
  next step, or its error such as "That code didn't work"); a push approval moves the site past its push
  page; when the page is not on the flow's step (the browser was woken from standby, or started late), the
  driver puts it there. The values live only in the driver's memory, never on a record or in a log.
- The driver settles its flow as time passes (as the events stream does), so the flow moves on in real time
  even when nobody reads it. Browser work never runs on a request: each step has ``STEP_TIMEOUT``, and a
  browser failure never breaks the flow (it goes on; the failure is a ``monitor_init_failed`` telemetry event
  of the session, naming the step, never a value).
- With ``record_session`` the session is recorded from the flow's start to its finish by the replays'
  recorder (``browser_replays.begin``); the flow's timeline entry names the replay from the moment the
  recording starts. A recorded flow that ended before its browser was up (a stored credential logs in
  within a second) is still played into the page and recorded, a moment later; a flow that started in
  the past (demo data, a health check caught up after a clock move) is not recorded after the fact. The
  session ends with the flow (``deleted_at`` is the flow's end), a moment after the last page showed.
- The flow's ``live_view_url`` is the session's read-only live view (``live_view``); the hosted page shows
  it too.
- Under the simulated engine no login runs a browser: no session, no live view, no replay.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from console.sandbox.chromium import engine
from console.sandbox.core.state import Tenant, rfc3339
from console.sandbox.resources import browser_computer, browser_replays, browsers, sessions
from console.sandbox.sites import auth_sites, demo_sites

log = logging.getLogger("console.sandbox.login_browser")

VIEWPORT = {"width": 1280, "height": 800, "refresh_rate": 25}
TELEMETRY = {"control", "connection", "system", "captcha", "page", "console"}
FRAMERATE = 10
MAX_RECORDING = 3600
POLL_SECONDS = 0.25
STEP_TIMEOUT = 10.0  # seconds one mirrored step may take
SETTLE_TIMEOUT = 5.0  # seconds for the page to land after a submit (redirects are their own navigations)
HOLD_SECONDS = 1.0  # the page after the last step stays this long in the recording
PAST_SECONDS = 5.0  # a flow that started longer ago than this (on the tenant clock) is history

_drivers: dict[str, Driver] = {}
_tasks: set[asyncio.Task] = set()


def login_url(connection: dict) -> str:
    """Where a login browser opens: the connection's login URL or domain on a scripted login site."""

    def served(host: str) -> bool:
        return demo_sites.handler_for(host) is demo_sites.login_site

    url = connection.get("login_url")
    if url and served(urlsplit(url).hostname or ""):
        return url
    domain = connection["domain"]
    host = domain if served(domain) else auth_sites.site_for(domain).domain
    return f"https://{host}/login"


def open_for_flow(
    tenant: Tenant,
    connection: dict,
    at: datetime,
    ttl: float,
    record_session: bool,
    settle: Callable[[Tenant, dict], None],
):
    """The flow's browser session (real engine), its driver started; None under the simulated engine.
    ``settle(tenant, connection)`` brings the flow up to the tenant clock (``auth_connections``: the driver
    calls it as time passes)."""
    if not engine.get().real:
        return None
    session = browsers.new_browser_record(
        tenant,
        connection["_project"],
        headless=False,
        timeout_seconds=min(int(ttl) + 60, browsers.MAX_TIMEOUT),
        viewport=VIEWPORT,
        tags={"auth_connection": connection["id"]},
        start_url=login_url(connection),
        telemetry=set(TELEMETRY),
    )
    # A flow started in the past (demo data, a health check caught up after a clock move) is not recorded
    # after the fact; its browser only shows where the flow is, if it is still running.
    past = tenant.now() - at > timedelta(seconds=PAST_SECONDS)
    if at < tenant.now():
        session.update(created_at=rfc3339(at), _last_activity=at)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return session
    driver = Driver(tenant, connection["id"], session, record_session and not past, settle)
    _drivers[session["session_id"]] = driver
    task = loop.create_task(driver.run())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return session


def live_view_path(session: dict) -> str:
    """The session's read-only live view (a path; the API makes it absolute)."""
    return f"/_sandbox/live/{session['session_id']}?jwt={session['_live_view_token']}&readOnly=true"


def submitted(connection: dict, page: str | None, action: tuple) -> None:
    """The flow accepted ``action`` (``("fields", {id: value})``, ``("choice", id)`` or ``("approve",
    None)``) on its page ``page``: the driver plays it into the browser."""
    driver = _drivers.get(connection.get("browser_session_id") or "")
    if driver is not None and page is not None:
        driver.actions.append((page, action))
        driver.wake.set()


def flow_ended(tenant: Tenant, session_id: str | None, at: datetime) -> dict:
    """The flow ended at ``at``: its session ends (after the driver's last step); the timeline's additions."""
    driver = _drivers.get(session_id or "")
    if driver is not None:
        driver.end(at)
        return {}
    session = tenant.table(sessions.TABLE).get(session_id or "")
    if session is not None:
        sessions.end(tenant, session, "login_finished", at=at)
    return {}


class Driver:
    """Mirrors one flow into its browser session, records it, and ends the session with the flow."""

    def __init__(
        self,
        tenant: Tenant,
        connection_id: str,
        session: dict,
        record_session: bool,
        settle: Callable[[Tenant, dict], None],
    ):
        self.tenant = tenant
        self.settle = settle
        self.connection_id = connection_id
        self.session = session
        self.record_session = record_session
        self.actions: list[tuple[str, tuple]] = []  # (page, action): values in memory only
        self.wake = asyncio.Event()
        self.ended_at: datetime | None = None
        self.replay: dict | None = None
        self.shown: str | None = None  # the site step the page is known to show
        origin = urlsplit(session["start_url"])
        self.origin = f"{origin.scheme}://{origin.netloc}"

    def end(self, at: datetime) -> None:
        if self.ended_at is None:
            self.ended_at = at
        self.wake.set()

    async def run(self) -> None:
        tenant, session = self.tenant, self.session
        try:
            # Over before its browser was up, and nothing to record: no browser at all. A recorded flow
            # that ended before its browser was up is still played and recorded.
            if self.ended_at is None or self.record_session:
                await self._drive()
        except asyncio.CancelledError:  # the sandbox is stopping: ending the session stops the recording
            _drivers.pop(session["session_id"], None)
            sessions.end(tenant, session, "login_finished", at=self.ended_at or tenant.now())
            raise
        except Exception as exc:  # never let a browser failure escape into the flow
            self._failed("driving the login", exc)
        _drivers.pop(session["session_id"], None)
        if self.replay is not None:
            with contextlib.suppress(Exception):
                await browser_replays.finish(tenant, session, self.replay)
        sessions.end(tenant, session, "login_finished", at=self.ended_at or tenant.now())

    async def _drive(self) -> None:
        await self._start()
        while True:
            self._settle()
            if self.actions and self._usable():
                page, action = self.actions.pop(0)
                await self._step(f"mirroring a submit on {page}", self._mirror(page, action))
                continue
            if self.ended_at is not None or not self._usable():
                break
            wanted = self._flow_page()
            if wanted is not None and wanted != self.shown:
                await self._step(f"opening {wanted}", self._show(wanted))
            await self._idle()
        if self.ended_at is None:  # the session ended under the flow: the flow goes on without it
            while self.ended_at is None and self.tenant.table("auth_connections").get(self.connection_id):
                self._settle()
                await self._idle()
        elif self.replay is not None:
            await asyncio.sleep(HOLD_SECONDS)

    async def _start(self) -> None:
        try:
            live = await engine.get().live(self.tenant, self.session)
        except Exception as exc:
            self._failed("opening the login page", exc)
            return
        if self.record_session and browser_replays.available(self.session):
            try:
                self.replay = await browser_replays.begin(
                    self.tenant, self.session, live, FRAMERATE, MAX_RECORDING
                )
            except Exception as exc:
                self._failed("starting the recording", exc)
            else:
                self._note_replay()
        await self._step("reading the login page", self._read_step(live.page))

    def _note_replay(self) -> None:
        """The flow's timeline entry names its replay from the moment the recording starts."""
        record = self.tenant.table("auth_connections").get(self.connection_id) or {}
        for entry in reversed(record.get("_timeline") or []):
            if entry.get("browser_session_id") == self.session["session_id"]:
                entry["replay_id"] = self.replay["replay_id"]
                break

    def _usable(self) -> bool:
        return sessions.is_active(self.tenant, self.session)

    def _connection(self) -> dict | None:
        connection = self.tenant.table("auth_connections").get(self.connection_id)
        if connection is None or connection.get("browser_session_id") != self.session["session_id"]:
            return None
        return connection

    def _settle(self) -> None:
        connection = self._connection()
        if connection is None:
            if self.ended_at is None and self.connection_id not in self.tenant.table("auth_connections"):
                self.end(self.tenant.now())
            return
        self.settle(self.tenant, connection)

    def _flow_page(self) -> str | None:
        connection = self._connection()
        waiting = ("AWAITING_INPUT", "AWAITING_EXTERNAL_ACTION")
        if connection is None or connection.get("flow_step") not in waiting:
            return None
        return (connection.get("_flow") or {}).get("page")

    async def _idle(self) -> None:
        self.wake.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(POLL_SECONDS):
                await self.wake.wait()

    async def _step(self, what: str, work) -> None:
        try:
            async with asyncio.timeout(STEP_TIMEOUT):
                await work
        except Exception as exc:
            self.shown = None
            self._failed(what, exc)

    def _failed(self, what: str, exc: BaseException) -> None:
        """A browser failure is the session's telemetry event; the flow is not touched. No values."""
        log.info("login browser %s: %s failed (%s)", self.session["session_id"], what, type(exc).__name__)
        if sessions.is_active(self.tenant, self.session):
            step = f"login browser: {what} failed ({type(exc).__name__})"
            browser_computer.emit(self.tenant, self.session, [("monitor_init_failed", {"step": step})])

    # The page -------------------------------------------------------------------------------------

    async def _page(self):
        live = await engine.get().live(self.tenant, self.session)
        return live

    async def _read_step(self, page) -> None:
        self.shown = await page.evaluate(
            "() => { const s = document.querySelector('form input[name=step]'); return s ? s.value : null; }"
        )

    async def _landed(self, page) -> None:
        """Wait until the page shows a document of the site (a redirect is a page that moves on)."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                ready = await page.evaluate(
                    "() => document.readyState !== 'loading' && "
                    "!document.querySelector(\"meta[http-equiv='refresh']\")"
                )
                if ready:
                    break
            await asyncio.sleep(0.1)
        await self._read_step(page)

    async def _show(self, step: str) -> None:
        """Put the page on the site's step ``step`` (the site keeps its step in a cookie)."""
        live = await self._page()
        await live.context.add_cookies(
            [{"name": demo_sites.STEP_COOKIE, "value": f"{step}:{time.time():.0f}", "url": self.origin + "/"}]
        )
        await live.page.goto(self.origin + "/login", wait_until="domcontentloaded")
        await self._landed(live.page)

    async def _mirror(self, step: str, action: tuple) -> None:
        kind, payload = action
        live = await self._page()
        page = live.page
        if kind == "approve":
            # The phone approved: the site's push page moves on when its step is old enough.
            await live.context.add_cookies(
                [{"name": demo_sites.STEP_COOKIE, "value": f"{step}:0", "url": self.origin + "/"}]
            )
            await page.goto(self.origin + "/login", wait_until="domcontentloaded")
            await self._landed(page)
            return
        await self._read_step(page)
        if self.shown != step:
            await self._show(step)
        if kind == "fields":
            for field_id, value in payload.items():
                await page.locator(f"form [name='{field_id}']").fill(value)
            button = page.locator("form button[name=action]")
        else:
            button = page.locator(f"form button[name=choice][value='{payload}']")
        async with page.expect_navigation(wait_until="domcontentloaded"):
            await button.click()
        await self._landed(page)
