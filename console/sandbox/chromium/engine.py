"""The sandbox's browser engine: real Chromium for every session, or the simulated engine without it.

Selection (``SANDBOX_ENGINE``): ``chromium`` drives Debian's Chromium (``SANDBOX_CHROMIUM``, default
``/usr/bin/chromium``) through Playwright for Python's async API; ``simulated`` keeps today's drawn
screenshots and generated telemetry; ``auto`` (the default) picks Chromium when it and Playwright are
installed and falls back to the simulated engine, saying why (``GET /``, ``GET /_sandbox/health`` and the
session record's ``sandbox`` field). A session records the engine it was created under.

How a real session lives:

- One Chromium process is shared by the headless sessions, and one per viewport size by the headful ones
  (a real window each, on that process's Xvfb display, whose page area is the viewport: the window is the
  viewport plus the browser's UI, ``_fit_window``); each session is its own
  ``BrowserContext`` (cookies, storage, cache and permissions isolated) with the session's viewport and
  user agent, and one page on its start URL. A Playwright ``CDPSession`` on that page carries what
  Playwright does not expose (telemetry domains). A session someone connects to over CDP moves to a
  browser process of its own (see ``cdp_proxy``): a browser-level CDP client could otherwise reach every
  other session's targets.
- Nothing reaches the internet: every request of a session's context is routed to the sandbox's own demo
  sites (``demo_sites``) or aborted, and the browser's proxy is a dead loopback port (loopback included), so a
  request that escapes the routes (a context a CDP client creates) fails instead of leaving the machine.
  A session with a proxy record has no routes: its context's proxy (Chromium's proxy settings) is a
  loopback listener of the sandbox's forward proxy (``forward_proxy``), which serves the demo sites as
  seen from the proxy's exit and nothing else; an unavailable proxy is a closed port.
- At most ``SANDBOX_MAX_BROWSERS`` sessions run at once (default 4, sized for 2 cores); waking one more
  puts the least recently used into standby: its URL and storage (cookies and local storage, Playwright's
  ``storage_state``) are kept and its context closed. A session idle for ``SANDBOX_BROWSER_IDLE_SECONDS``
  (default 300) goes to standby too. The next call that needs the page wakes it (a new context with the
  kept state, on the kept URL). Sessions created at start-up (demo data) and pool browsers start in
  standby. A session held by a CDP client, a live view or a recording (``Live.attached``) is not put
  in standby to make room, but for another tenant's session when its tenant holds at least two running
  browsers more than that one (``_fair_share``: no tenant can hold every browser while others ask).
  Wakes are admitted one at a time, so concurrent ones cannot pass the bound; a wake waits for its turn
  up to ``SANDBOX_ADMISSION_TIMEOUT_SECONDS`` (default 120, not counted against its own launch), then
  gets a busy 503 with a Retry-After and leaves the session as it was.
- A crashed page is the session's state (``crashed``) and a ``service_crashed`` telemetry event; the next
  call that needs the page opens a new one on the last URL. Every browser operation runs under a timeout,
  so a request never hangs on a browser.
- Deleting a session closes its context (and its own process) and removes its temporary directory; a
  shared process (and its display) closes ``SANDBOX_BROWSER_LINGER_SECONDS`` (default 60) after its last
  session; stopping the sandbox closes every browser (and ``app.lifespan`` removes the temporary
  directories of the jail and the sessions' files).
- A session's profile is its starting storage (cookies and local storage kept in the profile record as
  Playwright's ``storage_state``); with ``save_changes`` the session's storage is written back when it
  ends. A session with extensions runs in a browser process of its own, started with them unpacked from
  their uploaded zips.
- A session with ``chrome_policy`` runs in a process of its own whose jail shows the policy at
  ``/etc/chromium/policies/managed`` (Chromium's managed policies). A kiosk session (``--kiosk`` is a
  process flag) runs in a process of its own on an Xvfb display of its own (``Display``). Without Xvfb a
  headful session runs headless and its record says so (``applied``).
- Every browser process is jailed (``browser_jail``, ``confine.browser_jail``): bubblewrap, as
  ``SANDBOX_EXEC_USER`` when the sandbox is root, with its own directories and the system only, and with
  Chromium's own sandbox on. Without bubblewrap it runs as the sandbox does, with ``--no-sandbox``
  (``status()["confinement"]`` says why). Its processes carry ``SANDBOX_BROWSER_OWNER`` in their
  environment, so tests can count them.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from console.sandbox.chromium import confine, forward_proxy, page_events, rooted
from console.sandbox.chromium.displays import UI_ALLOWANCE, Display
from console.sandbox.core import store
from console.sandbox.core.errors import ApiError
from console.sandbox.core.hooks import Hook
from console.sandbox.core.state import Tenant, new_id
from console.sandbox.sites import demo_sites

log = logging.getLogger("console.sandbox.engine")

ENGINES = ("auto", "chromium", "simulated")
# Chromium keeps only the last ``--disable-features`` it is given, and Playwright gives its own first: ours
# must name Playwright's as well (its chromiumSwitches, playwright==1.65.2), or they are on again. Among
# them HttpsUpgrades: with it on, a page sent to http://lab.example.com/ landed on https://. Ours adds
# Translate (no translate bar over a foreign page in the live view) and the WebUI omnibox popups: every
# window (a context is one) loaded two chrome:// pages for its address bar's popups in a renderer of their
# own, about 0.7 s of a core a window, shown to nobody (a headful window's address bar then uses the
# native popup). tests/sandbox/test_chromium_flags.py compares this list with the pinned Playwright's.
PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
)
DISABLED_FEATURES = (*PLAYWRIGHT_DISABLED_FEATURES, "Translate", "WebUIOmniboxPopup", "WebUIOmniboxAimPopup")
FLAGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-features=" + ",".join(DISABLED_FEATURES),
    # Every request that escapes the context's routes meets a closed port (loopback included).
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
]
# Stealth where a context allows it (the browser's own flags are shared): no navigator.webdriver.
STEALTH_JS = "Object.defineProperty(Navigator.prototype, 'webdriver', {get: () => false});"
# Seconds a browser operation may take before the request gets an error instead of waiting.
LAUNCH_TIMEOUT = 30.0
# How long a wake may wait for its turn (the wakes ahead of it) before the request is told the sandbox is
# busy (``SANDBOX_ADMISSION_TIMEOUT_SECONDS``), and the Retry-After of that answer.
ADMISSION_TIMEOUT = 120.0
BUSY_RETRY_AFTER = 5
OPERATION_TIMEOUT = 15.0
NAVIGATION_TIMEOUT = 10_000  # ms, Playwright's unit
# The folder of the engine's root that is Playwright's driver's TMPDIR (``Engine._driver``).
PLAYWRIGHT_SCRATCH = "playwright"
# The browser's ``DevToolsActivePort`` (its profile, which the browser's user writes): read as no more
# than this, and used only when it is the port and path Chromium writes, nothing else of it kept or shown.
DEVTOOLS_PORT_LIMIT = 256
DEVTOOLS_PORT = re.compile(rb"\A([0-9]{1,5})\n(/devtools/browser/[A-Za-z0-9-]{1,64})\n?\Z")


# What the engine needs from the resources above it, handed in by ``app.assemble``: a finished download
# goes into the session's files (``browser_files``), a profile a session saved into is bumped
# (``profiles``), and a session's extensions are read from their records (``extensions``).
on_download = Hook("engine.on_download(record, name, source_path, moment) (a coroutine)")
on_profile_saved = Hook("engine.on_profile_saved(tenant, profile)")
extension_archive = Hook("engine.extension_archive(tenant, extension_id) -> bytes | None")
check_extension = Hook("engine.check_extension(archive), raising ValueError when it cannot be unpacked")
on_extension_used = Hook("engine.on_extension_used(tenant, extension_id)")


def _number(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def choose() -> tuple[str, str]:
    """The engine this process runs and why, from ``SANDBOX_ENGINE`` and what is installed."""
    wanted = (os.environ.get("SANDBOX_ENGINE") or "auto").strip().lower()
    if wanted not in ENGINES:
        log.warning("SANDBOX_ENGINE=%s is not one of %s; using auto", wanted, ", ".join(ENGINES))
        wanted = "auto"
    if wanted == "simulated":
        return "simulated", "SANDBOX_ENGINE=simulated"
    executable = chromium_path()
    if not os.access(executable, os.X_OK):
        problem = f"no Chromium at {executable} (make run installs Debian's chromium)"
    elif importlib.util.find_spec("playwright") is None:
        problem = "Playwright for Python is not installed (make install)"
    else:
        return "chromium", f"Chromium at {executable}"
    if wanted == "chromium":
        log.warning("SANDBOX_ENGINE=chromium but %s: sessions are simulated", problem)
    return "simulated", problem


def chromium_path() -> str:
    return os.environ.get("SANDBOX_CHROMIUM") or "/usr/bin/chromium"


@dataclass(eq=False)
class Live:
    """A session's browser: running (a context and its page), in standby (state kept), or crashed."""

    session_id: str
    tenant: Tenant
    record: dict
    state: str = "standby"  # standby | running | crashed | closed
    context: object | None = None
    page: object | None = None
    cdp: object | None = None
    events: object | None = None  # page_events.PageEvents
    storage: dict | None = None  # storage_state kept in standby
    url: str | None = None
    own_browser: bool = False  # a browser process of its own (CDP clients, extensions, policy, headful)
    display: object | None = None  # the Xvfb of a headful session's process (``Display``)
    egress: object | None = None  # the session's proxy (``forward_proxy.Listener``), while running
    network: object | None = None  # its own process's network namespace (``confine.Network``), if any
    cdp_endpoint: str | None = None  # that process's browser-level websocket
    attached: int = 0
    recording: int = 0  # of ``attached``, the recordings (never taken for another tenant: see _make_room)
    last_used: float = field(default_factory=time.monotonic)
    crashed_at: float | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    directory: Path | None = None
    # The context's other pages in the order they came to front (the front one last): a tab a page opened
    # (Chromium brings it to front), or one a CDP client brought to front (``bring_to_front``). Closed ones
    # drop out; with none left the front is ``page``.
    fronts: list = field(default_factory=list)
    # What a higher wing keeps on the session while it needs its page (a recording's screencast): each is
    # called with the Live after every wake (a move to a browser of its own when a CDP client came, a wake
    # from standby or after a crash), as a task of its own, to attach to the new page.
    woken: list = field(default_factory=list)

    @property
    def front(self):
        """The tab in front: where the computer actions go and what their screenshot shows, as on the
        service's display (a window shows its front tab)."""
        for page in reversed(self.fronts):
            if not page.is_closed():
                return page
        return self.page


class Engine:
    def __init__(self, name: str, reason: str):
        self.name = name
        self.reason = reason
        self.max_browsers = max(1, int(_number("SANDBOX_MAX_BROWSERS", 4)))
        self.idle_seconds = _number("SANDBOX_BROWSER_IDLE_SECONDS", 300)
        self.linger_seconds = _number("SANDBOX_BROWSER_LINGER_SECONDS", 60)
        self.admission_timeout = max(0.0, _number("SANDBOX_ADMISSION_TIMEOUT_SECONDS", ADMISSION_TIMEOUT))
        self.owner = os.environ.get("SANDBOX_BROWSER_OWNER") or new_id("sandbox", 12)
        self.lives: dict[str, Live] = {}
        self._playwright = None
        self._shared: dict[tuple, object] = {}  # shared browser processes, by ``_shared_key``
        self._displays: dict[tuple, Display] = {}  # their Xvfb displays (headful ones)
        self._launch_lock: asyncio.Lock | None = None
        self._reaper: asyncio.Task | None = None
        self._linger: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._cleanups: set[asyncio.Task] = set()  # closings run to their end (``_to_the_end``)
        self._root: Path | None = None
        self._root_kept = False
        self._waking = 0
        self._admission = asyncio.Lock()
        self._dedicating: dict[str, asyncio.Lock] = {}  # a session's move to a browser of its own
        # The browser UI around a headful window's page (width, height), measured on the first window.
        self._window_ui: tuple[int, int] | None = None

    @property
    def real(self) -> bool:
        return self.name == "chromium"

    def status(self) -> dict:
        states = [live.state for live in self.lives.values()]
        return {
            "engine": self.name,
            "reason": self.reason,
            "max_browsers": self.max_browsers,
            "running": states.count("running"),
            "standby": states.count("standby"),
            "crashed": states.count("crashed"),
            # Commands are confined whatever the engine; a real engine's browsers with them.
            "confinement": f"none: {problem}"
            if (problem := confine.unavailable())
            else "bubblewrap, as an unprivileged user",
            "display": f"none: {Display.unavailable()}" if Display.unavailable() else "Xvfb",
            # Who the programs a browser feeds run as (Xvfb, the replays' ffmpeg): docs/security.md.
            "helpers": confine.helper_user(),
            "cdp_port": self.cdp_port(),
        }

    def cdp_port(self) -> str:
        """Where the raw debugging port of a browser process of a session's own listens (docs/security.md)."""
        if not self.real:
            return "none: simulated sessions have no browser"
        if self.confinement() is None and confine.Network.available():
            return "a network namespace of its own"
        return f"127.0.0.1 of the host: {self.confinement() or confine.network_unavailable()}"

    def confinement(self) -> str | None:
        """None when browsers run jailed (``browser_jail``); otherwise why they run as the sandbox does."""
        if not self.real:
            return None
        problem = confine.unavailable()
        return f"none: {problem}" if problem else None

    def session_state(self, record: dict) -> str:
        """``running``, ``standby`` or ``crashed`` for a real session; ``simulated`` otherwise."""
        if record.get("_engine") != "chromium":
            return "simulated"
        live = self.lives.get(record["session_id"])
        return live.state if live is not None else "standby"

    # Waking and sleeping ----------------------------------------------------------------------------

    async def live(self, tenant: Tenant, record: dict) -> Live:
        """The session's running browser, woken from standby (or after a crash) if needed."""
        if record.get("_ended_at") is not None:
            raise ApiError(404, "not_found", f"browser session {record['session_id']!r} has ended")
        live = self.lives.get(record["session_id"])
        if live is None:
            live = Live(session_id=record["session_id"], tenant=tenant, record=record)
            # After a restart (console/sandbox/core/store.py): the URL and storage kept at the last save.
            live.url = record.get("_kept_url") or record.get("start_url")
            live.storage = record.get("_kept_storage") or _profile_state(tenant, record)
            # Extensions are loaded when a browser starts: such a session needs a process of its own.
            # So are a policy (Chromium reads it from its /etc) and a kiosk window (a process flag).
            kiosk = self.headful(record) and bool(record.get("kiosk_mode"))
            live.own_browser = bool(record.get("extensions") or record.get("chrome_policy") or kiosk)
            self.lives[live.session_id] = live
        live.last_used = time.monotonic()
        if live.state == "running" and live.page is not None and live.page.is_closed():
            # A CDP client closed the session's page: keep the state and open a new page below.
            await self.standby(live)
        if live.state == "running" and live.page is not None:
            return live
        # Not running, or being put in standby (its page already gone): woken after the lock.
        # One wake at a time: each sees the others' browsers, so the bound holds. Waiting for its turn
        # (behind another request waking this session, then behind the wakes of other sessions: a burst of
        # sessions starting at once) is not this browser failing, and it does not count against its launch:
        # past the admission timeout the request is told the sandbox is busy, and the session stays as it
        # was (standby, or crashed).
        turn = asyncio.get_running_loop().time() + self.admission_timeout
        await self._wait_turn(live.lock, turn)
        try:
            if live.state == "closed":
                raise ApiError(404, "not_found", f"browser session {live.session_id!r} has ended")
            if live.state != "running" or live.page is None:
                self._waking += 1
                try:
                    await self._wait_turn(self._admission, turn)
                    try:
                        async with asyncio.timeout(LAUNCH_TIMEOUT):
                            await self._wake(live)
                    finally:
                        self._admission.release()
                    for callback in list(live.woken):
                        self._spawn(callback(live))
                except ApiError:
                    raise
                except Exception as exc:
                    reason = str(exc)
                    if not reason and isinstance(exc, TimeoutError):
                        reason = f"not started within {LAUNCH_TIMEOUT:g} s"
                    log.warning(
                        "session %s could not start its browser: %s: %s",
                        live.session_id,
                        type(exc).__name__,
                        reason,
                    )
                    await self._close_context(live)
                    live.state = "crashed"
                    raise ApiError(
                        503,
                        "browser_unavailable",
                        "the session's browser could not be started; try again",
                        inner_error={"code": type(exc).__name__, "message": reason[:200]},
                    ) from None
                finally:
                    self._waking -= 1
        finally:
            live.lock.release()
        self._start_reaper()
        return live

    async def _wait_turn(self, lock: asyncio.Lock, turn: float) -> None:
        """Acquire ``lock`` by the loop time ``turn``, else 503 ``browser_unavailable`` (busy) with a
        Retry-After: the caller holds nothing then."""
        try:
            async with asyncio.timeout_at(turn):
                await lock.acquire()
        except TimeoutError:
            raise ApiError(
                503,
                "browser_unavailable",
                "the sandbox is busy starting other browsers; try again",
                inner_error={
                    "code": "admission_timeout",
                    "message": f"waited {self.admission_timeout:g} s for the browsers starting ahead of it",
                },
                headers={"Retry-After": str(BUSY_RETRY_AFTER)},
            ) from None

    async def _wake(self, live: Live) -> None:
        await self._make_room(live)
        record = live.record
        if live.own_browser and self.confinement() is None and confine.Network.available():
            # A process of its own has a CDP port: in a network namespace of its own, the sandbox's alone.
            live.network = confine.Network.create()
        live.egress = await self._egress(live)
        if live.own_browser:
            context = await self._launch_own(live)
        else:
            browser = await self._shared_browser(self._shared_key(record))
            options = self._context_options(record)
            if live.egress is not None:
                options["proxy"] = live.egress.playwright()
            context = await browser.new_context(storage_state=live.storage, **options)
        live.context = context
        if record.get("stealth"):
            await context.add_init_script(STEALTH_JS)
        if live.egress is None:
            # Without a proxy the demo sites are answered in-process; with one, through it.
            await self._route(live)
        page = context.pages[0] if context.pages else await context.new_page()
        live.page = page
        live.cdp = await context.new_cdp_session(page)
        if self.headful(record) and not record.get("kiosk_mode"):
            await self._fit_window(live)
        live.events = page_events.PageEvents(live)
        await live.events.attach()
        page.on("crash", lambda _page: self._crashed(live))
        page.on("download", lambda download: self._spawn(self._save_download(live, download)))
        context.on("page", lambda new: live.events and live.events.tab_opened(new))
        live.fronts = []
        context.on("page", lambda new: self._spawn(_opened(live, new)))
        live.state = "running"
        if live.crashed_at is not None:
            took = int((time.monotonic() - live.crashed_at) * 1000)
            live.events.emit("monitor_reconnected", {"reconnect_duration_ms": took})
            live.crashed_at = None
        if live.url:
            with contextlib.suppress(Exception):
                # Best effort, as the service's start_url: a failed navigation leaves Chromium's error page.
                await page.goto(live.url, timeout=NAVIGATION_TIMEOUT, wait_until="domcontentloaded")
            if self.headful(record) and not record.get("kiosk_mode"):
                await self._fit_window(live)  # a bar the page's first load brought (one check if none)

    def _window_size(self, size: dict) -> str:
        """``--window-size`` of a headful window whose page area is ``size`` (the UI as last measured)."""
        ui_width, ui_height = self._window_ui or (0, 0)
        return f"--window-size={size['width'] + ui_width},{size['height'] + ui_height}"

    async def _fit_window(self, live: Live) -> None:
        """Size a headful window so that its page area is the session's viewport (the contract's
        screenshot and coordinates): the window is the viewport plus the browser's UI, measured on the
        page (``outerHeight - innerHeight``) and applied through CDP's ``Browser.setWindowBounds``."""
        try:
            await self._fitting(live)
        except Exception as exc:  # the page went away or the window did not answer: the page keeps its size
            log.warning(
                "session %s: its window could not be fitted to its viewport: %s", live.session_id, exc
            )

    async def _fitting(self, live: Live) -> None:
        size = _size(live.record)
        wanted = [size["width"], size["height"]]
        measure = "[outerWidth, outerHeight, innerWidth, innerHeight]"
        for _ in range(3):
            outer_w, outer_h, inner_w, inner_h = await live.page.evaluate(measure)
            if [inner_w, inner_h] == wanted:
                return
            ui = (max(0, outer_w - inner_w), max(0, outer_h - inner_h))
            if ui[1] > UI_ALLOWANCE:
                log.warning("the browser's UI takes %s px, more than the display leaves", ui[1])
            self._window_ui = ui
            window = await live.cdp.send("Browser.getWindowForTarget")
            bounds = {"left": 0, "top": 0, "width": wanted[0] + ui[0], "height": wanted[1] + ui[1]}
            await live.cdp.send("Browser.setWindowBounds", {"windowId": window["windowId"], "bounds": bounds})
            with contextlib.suppress(Exception):
                await live.page.wait_for_function(
                    "([width, height]) => innerWidth === width && innerHeight === height",
                    arg=wanted,
                    timeout=2_000,
                )
        outer_w, outer_h, inner_w, inner_h = await live.page.evaluate(measure)
        if [inner_w, inner_h] != wanted:
            log.warning(
                "session %s: page area %sx%s, not its viewport %s", live.session_id, inner_w, inner_h, wanted
            )

    async def _egress(self, live: Live):
        """The session's proxy listener (``forward_proxy``), or None for a session without a proxy."""
        proxy_id = (live.record.get("proxy") or {}).get("id") or live.record.get("proxy_id")
        proxy = live.tenant.table("proxies").get(proxy_id or "")
        if proxy is None:
            return None
        return await forward_proxy.Listener(live.record, proxy).start(live.network)

    async def proxy_changed(self, record: dict) -> None:
        """A new proxy applies from the session's next wake: a running one goes to standby now."""
        live = self.lives.get(record["session_id"])
        if live is not None and live.state == "running":
            await self.standby(live)

    def _flags(self, live: Live | None = None) -> list[str]:
        flags = [*FLAGS, *forward_proxy.chromium_flags()]
        if live is not None and live.egress is not None:
            # The session's proxy (Playwright's launch option) replaces the dead one.
            dead = ("--proxy-server=", "--proxy-bypass-list=")
            flags = [flag for flag in flags if not flag.startswith(dead)]
        return flags

    def _context_options(self, record: dict) -> dict:
        options = {"viewport": _size(record), "device_scale_factor": 1, "accept_downloads": True}
        if self.headful(record):
            # A real window whose page area is the viewport (``_fit_window``): no emulated viewport.
            options = {"no_viewport": True, "accept_downloads": True}
        if record.get("stealth"):
            # Stealth where Chromium allows it: no "HeadlessChrome" in the user agent.
            options["user_agent"] = (
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                "Chrome/140.0.0.0 Safari/537.36"
            )
        return options

    async def _route(self, live: Live) -> None:
        # A jailed browser's file: URLs show its jail (the system's files), never the host's.
        files = self.confinement() is None

        async def handle(route) -> None:
            try:
                await demo_sites.fulfil(route, files=files)
            except Exception:  # the page went away mid-request, or a demo site failed: the request fails
                with contextlib.suppress(Exception):
                    await route.abort("failed")

        await live.context.route("**/*", handle)

    async def _save_download(self, live: Live, download) -> None:
        """A download lands in the session's ``/home/kernel/Downloads`` (its filesystem in the API). The
        session's commands own that directory: the file is copied there through the files API's rooted
        walk, never with ``save_as`` (the sandbox's user following a link a command planted wrote where
        the link pointed, on the host)."""
        name = Path(download.suggested_filename).name or "download"
        with contextlib.suppress(Exception):
            async with asyncio.timeout(60):
                source = await download.path()
                try:
                    moment = live.tenant.now().timestamp()
                    await on_download(live.record, name, str(source), moment)
                finally:
                    await download.delete()

    def _crashed(self, live: Live) -> None:
        if live.state != "running":
            return
        live.state = "crashed"
        live.crashed_at = time.monotonic()
        if live.events is not None:
            live.events.crashed()
        self._spawn(self._after_crash(live))

    async def _after_crash(self, live: Live) -> None:
        """Keep what the crashed page's context still knows (URL, storage), then release it."""
        async with live.lock:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(OPERATION_TIMEOUT):
                    if live.page.url.startswith(("http://", "https://")):
                        live.url = live.page.url
                    live.storage = await live.context.storage_state()
            await self._close_context(live)

    async def standby(self, live: Live) -> None:
        """Release the session's browser, keeping its URL and storage for the next wake."""
        async with live.lock:
            if live.state != "running":
                return
            with contextlib.suppress(Exception):
                async with asyncio.timeout(OPERATION_TIMEOUT):
                    live.storage = await live.context.storage_state()
                    if live.page.url.startswith(("http://", "https://")):
                        live.url = live.page.url
            await self._close_context(live)
            live.state = "standby"

    async def _save_profile(self, live: Live) -> None:
        """With ``profile.save_changes``, the session's cookies and storage go back into its profile."""
        record = live.record
        profile = _profile_of(live.tenant, record)
        if profile is None or not record.get("profile_save_changes"):
            return
        state = live.storage
        if live.state == "running" and live.context is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(OPERATION_TIMEOUT):
                    state = await live.context.storage_state()
        if state is not None:
            profile["_storage_state"] = state
            on_profile_saved(live.tenant, profile)

    async def resize(self, record: dict) -> None:
        """A new viewport applies to the running page at once (and to the next wake from standby)."""
        live = self.lives.get(record["session_id"])
        if live is not None and live.state == "running" and live.page is not None:
            if self.headful(record):
                # The display has the old size: the next call wakes the session on a display of the new.
                await self.standby(live)
                return
            await guarded(live.page.set_viewport_size(_size(record)), "resizing the page")

    async def load_profile(self, tenant: Tenant, record: dict) -> None:
        """A profile loaded into a session after creation (``PATCH``): its cookies join the session's."""
        live = self.lives.get(record["session_id"])
        state = _profile_state(tenant, record)
        if live is None or not state:
            return
        if live.state == "running" and live.context is not None:
            await guarded(live.context.add_cookies(state.get("cookies") or []), "loading the profile")
        else:
            kept = live.storage or {"cookies": [], "origins": []}
            live.storage = {**kept, "cookies": [*kept.get("cookies", []), *state.get("cookies", [])]}

    async def _to_the_end(self, coroutine) -> None:
        """Run a closing to its end even when its caller is cancelled (the reaper or the linger task,
        stopped by ``shutdown``): cut short, it would leave a browser's profile, a display or its
        Xauthority behind. ``shutdown`` waits for the closings still running."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)
        await asyncio.shield(task)

    async def _close_context(self, live: Live) -> None:
        await self._to_the_end(self._close_context_now(live))

    async def _close_context_now(self, live: Live) -> None:
        context, live.context, live.page, live.cdp = live.context, None, None, None
        if live.events is not None:
            live.events.detach()
            live.events = None
        if context is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(OPERATION_TIMEOUT):
                    await context.close()
        live.cdp_endpoint = None
        display, live.display = live.display, None
        if display is not None:
            await display.stop()
        egress, live.egress = live.egress, None
        if egress is not None:
            await egress.stop()
        network, live.network = live.network, None
        if network is not None:
            network.close()
        self._maybe_linger()

    async def _make_room(self, waking: Live) -> None:
        """Standby for as many running browsers as it takes to run one more: the least recently used
        of those nobody holds; else one held by the tenant holding the most, when it holds at least two
        more than the waking session's tenant (``_fair_share``); else 429."""
        running = [
            live
            for live in self.lives.values()
            if live.state == "running" and live is not waking and live.context is not None
        ]
        while len(running) >= self.max_browsers:
            idle = [live for live in running if live.attached == 0]
            if idle:
                oldest = min(idle, key=lambda live: live.last_used)
            else:
                oldest = _fair_share(running, waking.tenant)
                if oldest is None:
                    raise ApiError(
                        429,
                        "browser_limit_reached",
                        f"{self.max_browsers} browsers are running, each held by a CDP client, a live view "
                        "or a recording, and no tenant holds more than its share of them "
                        "(SANDBOX_MAX_BROWSERS); end one and try again",
                    )
                log.info(
                    "session %s gives its browser up to a session of another tenant (fair share of %s)",
                    oldest.session_id,
                    self.max_browsers,
                )
            running.remove(oldest)
            await self.standby(oldest)

    # Ending -----------------------------------------------------------------------------------------

    async def close(self, record: dict) -> None:
        """The session ended: close its browser and remove its temporary directory."""
        live = self.lives.pop(record["session_id"], None)
        if live is None:
            return
        async with live.lock:
            await self._save_profile(live)
            await self._close_context(live)
            live.state = "closed"
            live.storage = None
            # The session's directory is the browser user's: removed from root's side, never through
            # a link planted in it (``rooted.remove_tree``), off the event loop.
            if live.directory is not None:
                await asyncio.to_thread(rooted.remove_beneath, live.directory.parent, live.directory.name)
            if self._root is not None:
                for kind in ("policies", "extensions"):
                    await asyncio.to_thread(rooted.remove_beneath, self._root / kind, live.session_id)

    def remember(self) -> None:
        """Each real session's URL and storage, as its browser knows them now, kept in its record (for the
        state file: ``store.before_save``)."""
        for live in list(self.lives.values()):
            url = live.url
            if live.state == "running" and live.page is not None:
                with contextlib.suppress(OSError, AttributeError):
                    current = live.page.url
                    if current.startswith(("http://", "https://")):
                        url = current
            if url:
                live.record["_kept_url"] = url
            if live.storage is not None:
                live.record["_kept_storage"] = live.storage

    def discard(self, record: dict) -> None:
        """``close`` from synchronous code (a session ending on a state read)."""
        if record["session_id"] not in self.lives:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self.lives.pop(record["session_id"], None)
            return
        self._spawn(self.close(record))

    async def shutdown(self) -> None:
        """Stop every browser this process started (the sandbox is stopping)."""
        for task in (self._reaper, self._linger):
            if task is not None:
                task.cancel()
        # What they were closing is closed to its end first.
        await asyncio.gather(*list(self._cleanups), return_exceptions=True)
        for live in list(self.lives.values()):
            with contextlib.suppress(Exception):
                await self.close(live.record)
        await self._close_shared()
        # Closings the ones above started (a session's close lingers its shared browser), to their end.
        await asyncio.gather(*list(self._cleanups), return_exceptions=True)
        for key in list(self._displays):  # a display whose browser went without it
            await self._stop_display(key)
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
            self._playwright = None
            rooted.remove_beneath(self.root(), PLAYWRIGHT_SCRATCH)  # what the driver could not remove
        if self._root is not None and not self._root_kept:
            # It holds the browsers' user's directories (the shared downloads): never followed in.
            rooted.remove_beneath(self._root.parent, self._root.name)

    # Processes --------------------------------------------------------------------------------------

    def _env(self) -> dict:
        return {**os.environ, "SANDBOX_BROWSER_OWNER": self.owner}

    async def _driver(self):
        if self._playwright is None:
            # Optional (``choose`` runs the simulated engine without it): imported when a browser starts.
            from playwright.async_api import async_playwright

            # The driver makes a profile and an artifacts folder in its TMPDIR for each browser it
            # launches, and removes them when the browser exits; under load a browser's last processes
            # may still be writing then, and its removal gives up. In our own folder, shutdown removes
            # whatever is left (a kept root's leftovers of an earlier run go first).
            scratch = self.root() / PLAYWRIGHT_SCRATCH
            rooted.remove_beneath(self.root(), PLAYWRIGHT_SCRATCH)
            scratch.mkdir(mode=0o711)
            saved = os.environ.get("TMPDIR")
            os.environ["TMPDIR"] = str(scratch)  # copied by the driver's environment as it starts
            try:
                self._playwright = await async_playwright().start()
            finally:
                if saved is None:
                    os.environ.pop("TMPDIR", None)
                else:
                    os.environ["TMPDIR"] = saved
        return self._playwright

    def _shared_key(self, record: dict) -> tuple:
        """Which shared process a session's context lives in: the headless one, or the headful one of its
        viewport's size (its windows fill a display of that size)."""
        if self.headful(record):
            size = _size(record)
            return ("headful", size["width"], size["height"])
        return ("headless",)

    async def _shared_browser(self, key: tuple = ("headless",)):
        if self._launch_lock is None:
            self._launch_lock = asyncio.Lock()
        async with self._launch_lock:
            browser = self._shared.get(key)
            if browser is None or not browser.is_connected():
                playwright = await self._driver()
                downloads = self.root() / "downloads"
                args, display = self._flags(), None
                if key[0] == "headful":
                    await self._stop_display(key)
                    size = {"width": key[1], "height": key[2]}
                    room = {"width": key[1], "height": key[2] + UI_ALLOWANCE}
                    display = self._displays[key] = await Display.start(room, owner=self.owner)
                    args += ["--window-position=0,0", self._window_size(size)]
                options = self._launch_options([], downloads, headless=display is None, display=display)
                browser = await self._launching(playwright.chromium.launch, args=args, **options)
                browser.on("disconnected", lambda _browser: self._shared_gone(key))
                self._shared[key] = browser
            return browser

    def _shared_gone(self, key: tuple) -> None:
        for live in list(self.lives.values()):
            if live.state == "running" and not live.own_browser and self._shared_key(live.record) == key:
                self._crashed(live)

    async def _stop_display(self, key: tuple) -> None:
        display = self._displays.pop(key, None)
        if display is not None:
            await display.stop()

    async def _launch_own(self, live: Live):
        """A browser process for this session alone, its CDP port on loopback (for the CDP proxy): the
        loopback of its own network namespace when the sandbox can make one (``confine.Network``)."""
        playwright = await self._driver()
        live.directory = live.directory or Path(tempfile.mkdtemp(prefix="browser-", dir=self.root()))
        profile = live.directory / "profile"
        forget_devtools_port(live.directory)
        args = [*self._flags(live), "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1"]
        record = live.record
        headful = self.headful(record)
        if headful:
            size = _size(record)
            if record.get("kiosk_mode"):
                # A kiosk window is the whole display: its page area is the display's size.
                live.display = await Display.start(size, owner=self.owner)
                args += ["--window-position=0,0", f"--window-size={size['width']},{size['height']}"]
                args.append("--kiosk")
            else:
                live.display = await Display.start(
                    {**size, "height": size["height"] + UI_ALLOWANCE}, owner=self.owner
                )
                args += ["--window-position=0,0", self._window_size(size)]
        extensions = self._unpack_extensions(live)
        readable = [self._extensions_home(live)] if extensions else []
        if extensions:
            joined = ",".join(str(path) for path in extensions)
            args += [f"--disable-extensions-except={joined}", f"--load-extension={joined}"]
        context = await self._launching(
            playwright.chromium.launch_persistent_context,
            str(profile),
            args=args,
            ignore_default_args=["--disable-extensions"] if extensions else None,
            **({"proxy": live.egress.playwright()} if live.egress is not None else {}),
            **self._launch_options(
                [live.directory],
                live.directory / "downloads",
                readable=readable,
                headless=not headful,
                policy=self._policy(live),
                display=live.display,
                network=live.network,
            ),
            **self._context_options(live.record),
        )
        if live.storage:
            await context.set_storage_state(live.storage)
        for _ in range(100):
            live.cdp_endpoint = devtools_endpoint(live.directory)
            if live.cdp_endpoint is not None:
                break
            await asyncio.sleep(0.05)
        return context

    def _launch_options(
        self,
        writable: list[Path],
        downloads: Path,
        *,
        readable: list[Path] = (),
        headless: bool = True,
        policy: Path | None = None,
        display: Display | None = None,
        network: confine.Network | None = None,
    ) -> dict:
        """Playwright's launch options for one browser process: jailed (``browser_jail``) when bubblewrap
        can confine it, as an unprivileged user when the sandbox is root; the sandbox's own user otherwise
        (``status()["confinement"]`` says so)."""
        downloads.mkdir(parents=True, exist_ok=True)
        if self.confinement() is not None:
            return {
                "executable_path": chromium_path(),
                "env": {**self._env(), **(display.environment() if display else {})},
                "headless": headless,
                "downloads_path": str(downloads),
            }
        jail = confine.browser_jail(
            chromium_path(),
            writable=[*writable, downloads],
            readable=list(readable),
            owner=self.owner,
            policy=policy,
            display=display.name if display else None,
            authority=display.authority if display else None,
            network=network,
        )
        return {
            "executable_path": str(self._wrapper()),
            # The wrapper's environment only: bwrap gives Chromium a clean one (browser_jail).
            "env": {"SANDBOX_BROWSER_JAIL": json.dumps(jail), "SANDBOX_BROWSER_OWNER": self.owner},
            "headless": headless,
            "downloads_path": str(downloads),
            # Unprivileged, Chromium's own sandbox works (in a user namespace inside the jail's).
            "chromium_sandbox": True,
        }

    async def _launching(self, launch, *args, **options):
        """Start a browser; if Chromium's own sandbox cannot start in the jail, without it (logged)."""
        try:
            return await launch(*args, **options)
        except Exception as exc:
            if not options.get("chromium_sandbox"):
                raise
            log.warning("Chromium's sandbox did not start in the jail (%s); starting without it", exc)
            return await launch(*args, **{**options, "chromium_sandbox": False})

    def _policy(self, live: Live) -> Path | None:
        """The session's ``chrome_policy`` as Chromium's managed policy directory (jailed browsers only:
        the jail shows it at /etc/chromium/policies/managed; the host's /etc is never written)."""
        policy = live.record.get("chrome_policy")
        if not policy or self.confinement() is not None:
            return None
        folder = self.root() / "policies" / live.session_id
        folder.mkdir(parents=True, exist_ok=True)
        folder.parent.chmod(0o711)
        folder.chmod(0o755)
        target = folder / "session.json"
        target.write_text(json.dumps(policy))
        target.chmod(0o644)
        return folder

    def headful(self, record: dict) -> bool:
        """Whether the session's browser runs a real window (headful, with Xvfb to show it on)."""
        return not record.get("headless", True) and Display.unavailable() is None

    def applied(self, record: dict) -> dict:
        """What of the session's configuration Chromium could not apply, and why (the record's ``sandbox``
        field): a headful session without Xvfb runs headless; a policy needs the jail."""
        if record.get("_engine") != "chromium":
            return {}
        notes = {}
        if not record.get("headless", True) and self.headful(record) is False:
            notes["window"] = f"headless: {Display.unavailable()}"
        if record.get("chrome_policy") and self.confinement() is not None:
            notes["chrome_policy"] = f"not applied: {self.confinement()}"
        return notes

    def _wrapper(self) -> Path:
        """The executable Playwright starts: ``browser_jail.py`` under the sandbox's Python."""
        wrapper = self.root() / "chromium"
        if not wrapper.exists():
            script = Path(__file__).with_name("browser_jail.py")
            wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -I {script} "$@"\n')
            wrapper.chmod(0o755)
        return wrapper

    def _extensions_home(self, live: Live) -> Path:
        """Where the session's extensions are unpacked: ``extensions/<session>`` in the engine's root,
        root's own and out of the session's directory (which the browser's user owns, and could turn
        into a link to anywhere before root unpacked in it again at the next wake). The jailed browser
        sees it read-only (``confine.browser_jail``'s ``readable``) and passes through, never lists it."""
        home = self.root() / "extensions" / live.session_id
        for folder in (home.parent, home):
            folder.mkdir(mode=0o711, exist_ok=True)
            folder.chmod(0o711)
        return home

    def _unpack_extensions(self, live: Live) -> list[Path]:
        """The session's extensions, unpacked from their uploaded zips (checked at upload), by root into
        root's own directories the browser reads and cannot write (``_extensions_home``)."""
        folders = []
        for ref in live.record.get("extensions") or []:
            extension_id = ref.get("id") or ""
            archive = extension_archive(live.tenant, extension_id)
            if archive is None:
                continue
            home = self._extensions_home(live)
            target = home / extension_id
            if not target.is_dir():
                try:  # bounded at upload; an archive stored by an older sandbox is checked here
                    check_extension(archive)
                except ValueError as exc:
                    log.warning("extension %s not unpacked: %s", extension_id, exc)
                    continue
                _unpack_readable(archive, home, extension_id)
            manifest = next(iter(sorted(target.glob("**/manifest.json"), key=lambda p: len(p.parts))), None)
            if manifest is not None:
                folders.append(manifest.parent)
                on_extension_used(live.tenant, extension_id)
        return folders

    async def dedicate(self, tenant: Tenant, record: dict) -> Live:
        """Move the session to a browser process of its own (state kept) and return it running and
        attached (``Live.attached``, which the caller gives back): attached with no await after its wake,
        so another session's wake cannot put it in standby before its client is connected.

        One move at a time per session: a second client that came while the first one's move was under
        way found the session marked as moved but still in the shared browser, without a CDP endpoint
        (two Playwright executors connecting a second apart: 503)."""
        moving = self._dedicating.setdefault(record["session_id"], asyncio.Lock())
        async with moving:
            live = await self.live(tenant, record)
            if not live.own_browser or live.cdp_endpoint is None:
                # Marked first: a call that wakes the session between its standby and the wake below
                # starts it in its own process already.
                live.own_browser = True
                await self.standby(live)
                live = await self.live(tenant, record)
        if not moving.locked():
            self._dedicating.pop(record["session_id"], None)
        if live.cdp_endpoint is None:
            raise ApiError(503, "browser_unavailable", "the session's browser has no CDP endpoint")
        live.attached += 1
        return live

    async def context_id(self, live: Live) -> str | None:
        """The CDP ``browserContextId`` of the session's context (None when its page cannot say): the CDP
        proxy tells the tabs of the sandbox's own context from those a client made."""
        if live.cdp is None:
            return None
        try:
            info = await guarded(live.cdp.send("Target.getTargetInfo"), "the page")
        except Exception:  # closed or crashed meanwhile
            return None
        found = info.get("targetInfo", {}).get("browserContextId")
        return found if isinstance(found, str) else None

    async def on_page(self, tenant: Tenant, record: dict, operation, what: str = "the page"):
        """``operation(live)`` on the session's running page, with ``guarded``'s deadline. A session
        moved meanwhile (put in standby, or to a process of its own when a CDP client came: its page
        closed under the operation, the browser did not fail) is woken and asked once more. Only for
        operations that may run twice (a screenshot, a read), never for input."""
        live = await self.live(tenant, record)
        page = live.page
        try:
            return await guarded(operation(live), what)
        except Exception:
            moved = live.page is not page or live.state == "standby"
            if not moved or live.state in ("crashed", "closed"):
                raise
        log.info("session %s moved during %s; asking its new page", live.session_id, what)
        return await guarded(operation(await self.live(tenant, record)), what)

    async def bring_to_front(self, live: Live, target_id: str) -> None:
        """A CDP client brought ``target_id`` to front (``Target.activateTarget``): the computer actions go
        to that tab from now on. A target that is none of the context's pages changes nothing."""
        context = live.context
        if context is None or not isinstance(target_id, str):
            return
        for page in list(context.pages):
            if not page.is_closed() and await _target_id(context, page) == target_id:
                _came_to_front(live, page)
                return

    def cdp_socket(self, live: Live):
        """A socket connected to the session's own browser's CDP port where that port is in a network
        namespace of its own (``cdp_proxy`` relays through it), else None (the port is the host's)."""
        if live.network is None or live.cdp_endpoint is None:
            return None
        port = int(live.cdp_endpoint.split("/")[2].rpartition(":")[2])
        return live.network.connect(port)

    def root(self) -> Path:
        if self._root is None:
            kept = store.files_root()  # with SANDBOX_STATE, replays outlive the process
            self._root_kept = kept is not None
            if kept is not None:
                self._root = kept / "browsers"
                self._root.mkdir(mode=0o700, exist_ok=True)
                kept.chmod(0o711)  # jailed browsers (another user) pass through to their own directories
                store.warn_if_unreachable(kept)
            else:
                self._root = Path(tempfile.mkdtemp(prefix="sandbox-browsers-"))
            # Jailed browsers (another user) reach their own directories in it, never list it.
            self._root.chmod(0o711)
        return self._root

    async def _close_shared(self, keys=None) -> None:
        await self._to_the_end(self._close_shared_now(keys))

    async def _close_shared_now(self, keys=None) -> None:
        for key in list(self._shared if keys is None else keys):
            # The browser's display is known before the close's wait: a launch for the same key meanwhile
            # starts a display of its own, which this close must not stop (it did: the new browser found no
            # X server). It stays listed until stopped, so that ``shutdown`` stops it even if this close is
            # still on its way then.
            browser = self._shared.pop(key, None)
            display = self._displays.get(key)
            try:
                if browser is not None:
                    with contextlib.suppress(Exception):
                        await browser.close()
            finally:
                if display is not None:
                    if self._displays.get(key) is display:
                        del self._displays[key]
                    await display.stop()

    def _maybe_linger(self) -> None:
        """Close the shared browser once no session has used it for the linger time."""
        if self._linger is not None and not self._linger.done():
            return
        try:
            self._linger = asyncio.get_running_loop().create_task(self._linger_then_close())
        except RuntimeError:
            return

    async def _linger_then_close(self) -> None:
        await asyncio.sleep(self.linger_seconds)
        in_use = {
            self._shared_key(live.record)
            for live in self.lives.values()
            if live.context is not None and not live.own_browser
        }
        if not self._waking:
            await self._close_shared([key for key in self._shared if key not in in_use])

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _reap(self) -> None:
        """Put sessions idle past ``idle_seconds`` into standby."""
        while True:
            await asyncio.sleep(max(0.5, min(5.0, self.idle_seconds / 2)))
            now = time.monotonic()
            for live in list(self.lives.values()):
                idle = now - live.last_used > self.idle_seconds
                if live.state == "running" and live.attached == 0 and idle:
                    await self.standby(live)

    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _fair_share(running: list[Live], asking: Tenant) -> Live | None:
    """The held browser a session of ``asking`` may take when every running browser is held (by a CDP
    client, a live view or a recording), or None.

    Browsers are shared among the tenants that want them: a tenant may take one from the tenant holding
    the most, when that one holds at least two more than it does. So the running browsers of the tenants
    asking end up split evenly (no two of them more than one apart: each gets at least
    ``MAX // tenants``), and no tenant can keep another from every browser by holding them all (a wall of
    live screens held every one). The one taken is that tenant's least recently used, never a recording
    (it would cut the video; a recording ends within its ``max_duration_in_seconds``); its client is
    disconnected (a CDP client sees its connection close, a live view ends) and its session goes to
    standby, state kept, as any session put in standby. The tenant it was taken from cannot take one back:
    it still holds at least as many as the taker."""
    held: dict[str, int] = {}
    for live in running:
        held[live.tenant.id] = held.get(live.tenant.id, 0) + 1
    mine = held.get(asking.id, 0)
    candidates = [live for live in running if not live.recording and held[live.tenant.id] >= mine + 2]
    if not candidates:
        return None
    most = max(held[live.tenant.id] for live in candidates)
    return min((live for live in candidates if held[live.tenant.id] == most), key=lambda live: live.last_used)


def _unpack_readable(content: bytes, home: Path, name: str) -> None:
    """Unpack the zip ``content`` as ``home/name``: whole or not at all (a temporary directory renamed),
    every directory 0755 and file 0644 (readable by the browser's user, writable by root alone)."""
    staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=home))
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            archive.extractall(staging)
        for folder, _dirs, files in os.walk(staging):
            os.chmod(folder, 0o755)  # noqa: S103 - the browser (another user) reads it
            for entry in files:
                os.chmod(os.path.join(folder, entry), 0o644)  # a zip makes no links
        os.rename(staging, home / name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def forget_devtools_port(directory: Path) -> None:
    """Remove the previous run's ``profile/DevToolsActivePort`` from the session's ``directory``: by
    descriptor, so a ``profile`` the browser's user turned into a link removes nothing elsewhere."""
    try:
        top = rooted.open_top(directory)
    except OSError:
        return
    try:
        profile = rooted.descend(top, ["profile"], links_error=rooted.NotADir)
    except (OSError, rooted.NotADir):
        return
    finally:
        os.close(top)
    try:
        os.unlink("DevToolsActivePort", dir_fd=profile)
    except OSError:
        pass
    finally:
        os.close(profile)


def devtools_endpoint(directory: Path) -> str | None:
    """The browser-level CDP websocket its ``DevToolsActivePort`` names, when that file (in ``profile``
    of the session's ``directory``) is a regular file holding a port and Chromium's path alone: read
    without following a link, without blocking on a FIFO, at most ``DEVTOOLS_PORT_LIMIT`` bytes. Nothing
    of a file that is not that is returned or logged."""
    content = rooted.read_regular(directory, ("profile", "DevToolsActivePort"), DEVTOOLS_PORT_LIMIT)
    match = DEVTOOLS_PORT.match(content or b"")
    if match is None or not 0 < int(match[1]) < 65536:
        return None
    return f"ws://127.0.0.1:{int(match[1])}{match[2].decode('ascii')}"


def _profile_of(tenant: Tenant, record: dict) -> dict | None:
    ref = record.get("profile") or {}
    return tenant.table("profiles").get(ref.get("id") or "")


def _profile_state(tenant: Tenant, record: dict) -> dict | None:
    """The storage state saved in the session's profile (cookies, local storage), if any."""
    profile = _profile_of(tenant, record)
    state = (profile or {}).get("_storage_state")
    return (
        {"cookies": list(state.get("cookies", [])), "origins": list(state.get("origins", []))}
        if state
        else None
    )


def _size(record: dict) -> dict:
    size = record.get("viewport") or {}
    return {"width": int(size.get("width", 1920)), "height": int(size.get("height", 1080))}


_engine: Engine | None = None


def get() -> Engine:
    global _engine
    if _engine is None:
        _engine = Engine(*choose())
    return _engine


async def guarded(awaitable, what: str = "the browser"):
    """Await a browser operation with a deadline; a failure is a clear 503, never a hung request."""
    try:
        async with asyncio.timeout(OPERATION_TIMEOUT):
            return await awaitable
    except ApiError:
        raise
    except TimeoutError:
        raise ApiError(503, "browser_unavailable", f"{what} did not answer in time; try again") from None
    except Exception as exc:
        raise ApiError(
            503,
            "browser_unavailable",
            f"{what} failed: the page may have crashed or navigated; try again",
            inner_error={"code": type(exc).__name__, "message": str(exc).splitlines()[0][:200]},
        ) from None


async def _target_id(context, page) -> str | None:
    """The CDP target id of ``page`` (None once it closed)."""
    try:
        session = await guarded(context.new_cdp_session(page), "the page")
    except Exception:  # closed meanwhile
        return None
    try:
        info = await guarded(session.send("Target.getTargetInfo"), "the page")
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            await session.detach()
    return info.get("targetInfo", {}).get("targetId")


async def _opened(live: Live, page) -> None:
    """A new tab of the session: one a page opened (``window.open``, a link's target) comes to front, as
    Chromium brings it; one a client made (an executor's) is not followed (the console's screen does the
    same: console/live/screen.py)."""
    with contextlib.suppress(Exception):  # closed meanwhile
        if await guarded(page.opener(), "the page") is not None and not page.is_closed():
            _came_to_front(live, page)


def _came_to_front(live: Live, page) -> None:
    """``page`` is the session's front tab now (``Live.front``); closed, it drops out."""
    if page in live.fronts:
        live.fronts.remove(page)
    else:  # the first time: it drops out once closed
        page.once("close", lambda closed: closed in live.fronts and live.fronts.remove(closed))
    live.fronts.append(page)
