"""Telemetry from a real page (notes §6.4): CDP events and the page's own interactions, mapped to the
envelope and event types the simulated engine produces, archived by ``telemetry`` (same ``seq``, paging
and stream), whose functions ``app.assemble`` hands in (``captured``, ``recorded``).

- ``console`` (``Runtime`` domain): ``console.*`` calls are ``console_log`` with the CDP level, or
  ``console_error`` for ``console.error``; uncaught exceptions are ``console_error`` with ``line``,
  ``column``, ``source_url``; both carry the CDP ``stack_trace``.
- ``network`` (``Network`` domain): ``network_request``, ``network_response`` once the body has loaded
  (text bodies truncated to 8 KB for JSON, XML and form data, 4 KB for other text; binary excluded),
  ``network_loading_failed``, and ``network_idle`` after 500 ms with nothing in flight.
  Headers and bodies are recorded without their secrets, by the rules the console applies to whatever a
  service sends (``console.redaction``): credential headers, secret-named form and JSON fields.
- ``page`` (``Page`` and ``PerformanceTimeline`` domains): ``page_navigation``, DOMContentLoaded and load,
  ``page_lcp``, ``page_layout_shift``, ``page_layout_settled`` (1 s after load without a shift),
  ``page_navigation_settled``, and ``page_tab_opened`` for a page the session's page opens.
- ``interaction``: a script in every document reports clicks, key presses and settled scrolls (whoever
  caused them: a computer action, a CDP client or the live view) through a Playwright binding.
- ``screenshot``: ``monitor_screenshot`` every ``SANDBOX_TELEMETRY_SCREENSHOT_SECONDS`` (default 10), a
  quarter-size PNG of the viewport (base64).
- ``system``: a crashed page is ``service_crashed``; ``monitor`` (whenever a CDP category is on):
  ``monitor_disconnected`` then, and ``monitor_reconnected`` when the next call opens a new page.

A category switches capture for real: ``Runtime`` (console), ``Network`` (network) and
``PerformanceTimeline`` (page) are enabled only while the session captures their category (``apply``,
called on wake and when the session's telemetry changes); ``Page`` stays enabled because navigations
give every event its context (url, loader, ``nav_seq``), and page events are dropped while ``page`` is
off, as interactions are while ``interaction`` is off.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import os
import time

from console import redaction
from console.sandbox.core.hooks import Hook

log = logging.getLogger("console.sandbox.engine")

# Handed in by ``app.assemble`` (``telemetry``): the categories a session captures, and the archiving of
# an event of its page (kept when its category is captured and the session is still active).
captured = Hook("page_events.captured(record) -> set of categories")
recorded = Hook("page_events.recorded(tenant, record, type, data)")

BINDING = "__sandboxTelemetry"
DOMAINS = (("Runtime", "console"), ("Network", "network"))
JSON_LIMIT, TEXT_LIMIT = 8192, 4096
MAX_CONSOLE_ARGS = 32
IDLE_AFTER = 0.5
# The screenshot category is high volume (notes §6.3): a small image, now and then.
SCREENSHOT_EVERY = float(os.environ.get("SANDBOX_TELEMETRY_SCREENSHOT_SECONDS", "10"))
SCREENSHOT_SCALE = 0.25
SETTLE_AFTER = 1.0
# What the page's interaction reports may carry (INTERACTIONS_JS sends these; anything else is dropped).
REPORTED_NUMBERS = frozenset({"x", "y", "from_x", "from_y", "to_x", "to_y"})
REPORTED_TEXT = frozenset({"selector", "tag", "text", "key", "target_selector"})
REPORTED_TEXT_LIMIT = 500
INTERACTIONS_JS = """
(() => {
  const report = window.__sandboxTelemetry;
  if (!report || window.__sandboxTelemetryInstalled) return;
  window.__sandboxTelemetryInstalled = true;
  const describe = (el) => {
    if (!el || !el.tagName) return {selector: 'html', tag: 'HTML'};
    let selector = el.tagName.toLowerCase();
    if (el.id) selector += '#' + el.id;
    else if (el.classList && el.classList.length) selector += '.' + Array.from(el.classList).join('.');
    return {selector, tag: el.tagName};
  };
  addEventListener('click', (e) => {
    const d = describe(e.target);
    report({type: 'interaction_click', x: Math.round(e.clientX), y: Math.round(e.clientY),
            selector: d.selector, tag: d.tag, text: (e.target.innerText || '').trim().slice(0, 200)});
  }, true);
  // A character typed into a password or one-time-code field is a secret: the event says a key was
  // pressed there, never which (named keys such as Enter or Tab are kept).
  const secret = (el) => !!el && el.tagName === 'INPUT' &&
    (el.type === 'password' || /password|one-time-code/.test(el.autocomplete || ''));
  addEventListener('keydown', (e) => {
    const d = describe(e.target);
    const key = secret(e.target) && e.key.length === 1 ? '\u2022' : e.key;
    report({type: 'interaction_key', key, selector: d.selector, tag: d.tag});
  }, true);
  let from = null, timer = null;
  addEventListener('scroll', (e) => {
    if (from === null) from = [scrollX, scrollY];
    clearTimeout(timer);
    timer = setTimeout(() => {
      const target = e.target === document ? 'html' : describe(e.target).selector;
      report({type: 'interaction_scroll_settled', from_x: Math.round(from[0]), from_y: Math.round(from[1]),
              to_x: Math.round(scrollX), to_y: Math.round(scrollY), target_selector: target});
      from = null;
    }, 150);
  }, true);
})();
"""


class PageEvents:
    """Listens to one session's page and appends its telemetry."""

    def __init__(self, live):
        self.live = live
        self.enabled: set[str] = set()
        # V8 keeps a page's console messages and exceptions and reports them all again on Runtime.enable. The
        # first enable's replay is the page's start (kept); after a disable, a replay would bring back what
        # was recorded before and what the page logged while the category was off: messages stamped before
        # the latest re-enable (milliseconds since the epoch, as CDP stamps them) are dropped.
        self.replayed_before: float | None = None
        self.runtime_disabled = False
        self.target_id = ""
        self.cdp_session_id = hashlib.sha256(live.session_id.encode()).hexdigest()[:32].upper()
        self.frame_id = ""
        self.loader_id = ""
        self.nav_seq = 0
        self.url = ""
        self.requests: dict[str, dict] = {}
        self.responses: dict[str, dict] = {}
        self.in_flight: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task] = set()
        self._dom_loaded = False
        self._settled = False
        self._closed = False
        self._screenshots: asyncio.Task | None = None

    # Wiring -----------------------------------------------------------------------------------------

    async def attach(self) -> None:
        cdp = self.live.cdp
        info = await cdp.send("Target.getTargetInfo")
        self.target_id = info["targetInfo"]["targetId"]
        self.frame_id = self.target_id
        for name, handler in (
            ("Runtime.consoleAPICalled", self._console),
            ("Runtime.exceptionThrown", self._exception),
            ("Network.requestWillBeSent", self._request),
            ("Network.responseReceived", self._response),
            ("Network.loadingFinished", self._finished),
            ("Network.loadingFailed", self._failed),
            ("Page.frameNavigated", self._navigated),
            ("Page.domContentEventFired", self._dom_content),
            ("Page.loadEventFired", self._load),
            ("PerformanceTimeline.timelineEventAdded", self._timeline),
        ):
            cdp.on(name, self._guard(handler))
        # Always on: navigations give every event its context (url, loader, nav_seq).
        await cdp.send("Page.enable")
        await self.live.context.expose_binding(BINDING, self._interaction)
        await self.live.context.add_init_script(INTERACTIONS_JS)
        await self.apply()

    async def apply(self) -> None:
        """Enable the CDP domains of the categories the session captures, disable the others."""
        cdp = self.live.cdp
        if cdp is None:
            return
        wanted = self._captured()
        for domain, category in DOMAINS:
            on = category in wanted
            if on and domain not in self.enabled:
                if domain == "Runtime" and self.runtime_disabled:
                    self.replayed_before = time.time() * 1000
                await cdp.send(f"{domain}.enable")
                self.enabled.add(domain)
            elif not on and domain in self.enabled:
                await cdp.send(f"{domain}.disable")
                self.enabled.discard(domain)
                self.runtime_disabled = self.runtime_disabled or domain == "Runtime"
        timeline = "page" in wanted
        if timeline != ("PerformanceTimeline" in self.enabled):
            types = ["largest-contentful-paint", "layout-shift"] if timeline else []
            await cdp.send("PerformanceTimeline.enable", {"eventTypes": types})
            (self.enabled.add if timeline else self.enabled.discard)("PerformanceTimeline")
        if "screenshot" in wanted and (self._screenshots is None or self._screenshots.done()):
            self._screenshots = self._task(self._take_screenshots())
        elif "screenshot" not in wanted and self._screenshots is not None:
            self._screenshots.cancel()
            self._screenshots = None

    async def _take_screenshots(self) -> None:
        """``monitor_screenshot`` every ``SCREENSHOT_EVERY`` seconds: a quarter-size PNG of the page."""
        while not self._closed:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(10):
                    metrics = await self.live.cdp.send("Page.getLayoutMetrics")
                    view = metrics["cssVisualViewport"]
                    clip = {"x": 0, "y": 0, "width": view["clientWidth"], "height": view["clientHeight"]}
                    shot = await self.live.cdp.send(
                        "Page.captureScreenshot",
                        {"format": "png", "clip": {**clip, "scale": SCREENSHOT_SCALE}},
                    )
                self.emit("monitor_screenshot", {"png": shot["data"]})
            await asyncio.sleep(SCREENSHOT_EVERY)

    def detach(self) -> None:
        self._closed = True
        for timer in self._timers.values():
            timer.cancel()
        for task in self._tasks:
            task.cancel()

    def _captured(self) -> set[str]:
        return captured(self.live.record)

    def _guard(self, handler):
        def run(params: dict) -> None:
            if self._closed:
                return
            try:
                handler(params)
            except Exception:  # a malformed event must not break the page's other telemetry
                log.exception("could not map a CDP event")

        return run

    def emit(self, kind: str, data: dict) -> None:
        record = self.live.record
        if self._closed or record.get("_ended_at") is not None:
            return
        recorded(self.live.tenant, record, kind, data)

    def ctx(self, **extra) -> dict:
        context = {
            "target_id": self.target_id,
            "target_type": "page",
            "session_id": self.cdp_session_id,
            "frame_id": self.frame_id,
            "loader_id": self.loader_id,
            "nav_seq": self.nav_seq,
            "url": self.url,
        }
        context.update({k: v for k, v in extra.items() if v is not None})
        return context

    def _later(self, name: str, delay: float, callback) -> None:
        old = self._timers.pop(name, None)
        if old is not None:
            old.cancel()
        self._timers[name] = asyncio.get_running_loop().call_later(delay, callback)

    # Console ----------------------------------------------------------------------------------------

    def _replayed(self, params: dict) -> bool:
        stamp = params.get("timestamp")
        return (
            self.replayed_before is not None
            and isinstance(stamp, int | float)
            and stamp < self.replayed_before
        )

    def _console(self, params: dict) -> None:
        if self._replayed(params):
            return
        # Bounded like the other text a page makes: a page logging megabytes at a time kept them all.
        args = [_arg_text(arg)[:TEXT_LIMIT] for arg in params.get("args", [])[:MAX_CONSOLE_ARGS]]
        text = " ".join(args)[:TEXT_LIMIT]
        level = params.get("type", "log")
        data = self.ctx()
        data.update(text=text, args=args)
        if params.get("stackTrace"):
            data["stack_trace"] = params["stackTrace"]
        if level == "error":
            self.emit("console_error", {**data, "level": "error"})
        else:
            self.emit("console_log", {**data, "level": level})

    def _exception(self, params: dict) -> None:
        if self._replayed(params):
            return
        details = params.get("exceptionDetails") or {}
        exception = details.get("exception") or {}
        text = exception.get("description") or details.get("text") or "Uncaught exception"
        data = self.ctx()
        data.update(
            text=text.splitlines()[0][:TEXT_LIMIT] if text else text,
            line=details.get("lineNumber"),
            column=details.get("columnNumber"),
            source_url=details.get("url") or self.url,
        )
        if details.get("stackTrace"):
            data["stack_trace"] = details["stackTrace"]
        self.emit("console_error", data)

    # Network ----------------------------------------------------------------------------------------

    def _request(self, params: dict) -> None:
        request = params.get("request") or {}
        request_id = params["requestId"]
        self.requests[request_id] = {"method": request.get("method"), "type": params.get("type")}
        self.in_flight.add(request_id)
        idle = self._timers.pop("idle", None)
        if idle is not None:
            idle.cancel()
        data = self.ctx(frame_id=params.get("frameId"), loader_id=params.get("loaderId"))
        data.update(
            request_id=request_id,
            method=request.get("method"),
            headers=redaction.headers(request.get("headers") or {}),
            resource_type=params.get("type"),
            initiator_type=(params.get("initiator") or {}).get("type"),
            document_url=params.get("documentURL"),
            is_redirect=bool(params.get("redirectResponse")),
            url=request.get("url"),
        )
        if params.get("redirectResponse"):
            data["redirect_url"] = request.get("url")
        if request.get("postData"):
            data["post_data"] = redaction.post_data(request["postData"], data["headers"])[:JSON_LIMIT]
        self.emit("network_request", data)

    def _response(self, params: dict) -> None:
        response = params.get("response", {})
        self.responses[params["requestId"]] = {**response, "type": params.get("type")}
        headers = {str(k).lower(): v for k, v in (response.get("headers") or {}).items()}
        code = headers.get("x-kernel-proxy-error")
        if code:
            # The session's proxy could not serve the request (forward_proxy): the service's proxy_error.
            request = self.requests.get(params["requestId"], {})
            data = self.ctx(frame_id=params.get("frameId"), loader_id=params.get("loaderId"))
            data.update(
                code=str(code),
                request_id=params["requestId"],
                status=response.get("status"),
                method=request.get("method"),
                resource_type=params.get("type"),
            )
            self.emit("proxy_error", data)

    def _finished(self, params: dict) -> None:
        request_id = params["requestId"]
        response = self.responses.pop(request_id, None)
        request = self.requests.pop(request_id, {})
        self._settle_request(request_id)
        if response is None:
            return
        data = self.ctx()
        data.update(
            request_id=request_id,
            method=request.get("method"),
            status=response.get("status"),
            status_text=response.get("statusText") or "",
            mime_type=response.get("mimeType"),
            headers=redaction.headers(response.get("headers") or {}),
            resource_type=response.get("type") or request.get("type"),
            url=response.get("url"),
        )
        limit = _body_limit(response.get("mimeType") or "")
        if limit and "network" in self._captured():
            self._task(self._with_body(request_id, data, limit))
        else:
            self.emit("network_response", data)

    async def _with_body(self, request_id: str, data: dict, limit: int) -> None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                body = await self.live.cdp.send("Network.getResponseBody", {"requestId": request_id})
            if not body.get("base64Encoded"):
                text = body.get("body") or ""
                mime = data.get("mime_type") or ""
                data["body"] = redaction.post_data(text[:limit], data["headers"], mime_type=mime)
                data["_truncated"] = len(text) > limit
        self.emit("network_response", data)

    def _failed(self, params: dict) -> None:
        request_id = params["requestId"]
        request = self.requests.pop(request_id, {})
        self.responses.pop(request_id, None)
        self._settle_request(request_id)
        data = self.ctx()
        data.update(
            request_id=request_id,
            error_text=params.get("errorText"),
            canceled=bool(params.get("canceled")),
            resource_type=params.get("type") or request.get("type"),
        )
        self.emit("network_loading_failed", data)

    def _settle_request(self, request_id: str) -> None:
        self.in_flight.discard(request_id)
        if not self.in_flight:
            self._later("idle", IDLE_AFTER, self._idle)

    def _idle(self) -> None:
        if not self.in_flight and not self._closed:
            self.emit("network_idle", self.ctx())

    # Page -------------------------------------------------------------------------------------------

    def _navigated(self, params: dict) -> None:
        frame = params.get("frame") or {}
        main = not frame.get("parentId")
        if main:
            self.nav_seq += 1
            self.frame_id = frame.get("id") or self.frame_id
            self.loader_id = frame.get("loaderId") or ""
            self.url = frame.get("url") or ""
            self._dom_loaded = self._settled = False
        data = {
            "url": frame.get("url"),
            "frame_id": frame.get("id"),
            "loader_id": frame.get("loaderId"),
            "session_id": self.cdp_session_id,
            "target_id": self.target_id,
            "target_type": "page",
        }
        if frame.get("parentId"):
            data["parent_frame_id"] = frame["parentId"]
        self.emit("page_navigation", data)

    def _dom_content(self, params: dict) -> None:
        self._dom_loaded = True
        self.emit("page_dom_content_loaded", self.ctx(cdp_timestamp=params.get("timestamp")))
        self._maybe_navigation_settled()

    def _load(self, params: dict) -> None:
        self.emit("page_load", self.ctx(cdp_timestamp=params.get("timestamp")))
        self._later("settle", SETTLE_AFTER, self._layout_settled)

    def _layout_settled(self) -> None:
        if self._closed:
            return
        self._settled = True
        self.emit("page_layout_settled", self.ctx())
        self._maybe_navigation_settled()

    def _maybe_navigation_settled(self) -> None:
        if self._dom_loaded and self._settled:
            self._dom_loaded = False
            self.emit("page_navigation_settled", self.ctx())

    def _timeline(self, params: dict) -> None:
        event = params.get("event") or {}
        frame = event.get("frameId") or self.frame_id
        if event.get("type") == "largest-contentful-paint":
            details = event.get("lcpDetails") or {}
            self.emit(
                "page_lcp",
                self.ctx(
                    time=event.get("time"),
                    source_frame_id=frame,
                    lcp_details={
                        "element_id": details.get("elementId"),
                        "load_time": details.get("loadTime"),
                        "render_time": details.get("renderTime"),
                        "size": details.get("size"),
                        "url": details.get("url"),
                        "node_id": details.get("nodeId"),
                    },
                ),
            )
        elif event.get("type") == "layout-shift":
            details = event.get("layoutShiftDetails") or {}
            if self._timers.get("settle") is not None and not self._settled:
                self._later("settle", SETTLE_AFTER, self._layout_settled)
            self.emit(
                "page_layout_shift",
                self.ctx(
                    duration=event.get("duration") or 0,
                    time=event.get("time"),
                    source_frame_id=frame,
                    layout_shift_details={
                        "value": details.get("value"),
                        "had_recent_input": bool(details.get("hadRecentInput")),
                    },
                ),
            )

    def tab_opened(self, page) -> None:
        async def report() -> None:
            title = ""
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await page.wait_for_load_state("domcontentloaded")
                    title = await page.title()
            digest = hashlib.sha256(f"{id(page)}{time.time()}".encode()).hexdigest()[:32].upper()
            self.emit(
                "page_tab_opened",
                {
                    "target_id": digest,
                    "target_type": "page",
                    "opener_id": self.target_id,
                    "url": page.url,
                    "title": title,
                },
            )

        if page is not self.live.page and not self._closed:
            self._task(report())

    # Interactions and faults ------------------------------------------------------------------------

    def _interaction(self, source, payload) -> None:
        if self._closed or not isinstance(payload, dict):
            return
        kind = payload.pop("type", None)
        if kind not in ("interaction_click", "interaction_key", "interaction_scroll_settled"):
            return
        if source.get("frame") is not None and source["frame"] != self.live.page.main_frame:
            return
        # The page's script reports these, but any script of the page can call the binding with anything:
        # numbers stay finite numbers and text is cut, the rest is dropped (a page's nested lists or
        # megabytes of text were kept in the tenant's telemetry, in memory and in the state file).
        data = {}
        for key, value in payload.items():
            if key in REPORTED_NUMBERS and type(value) in (int, float) and math.isfinite(value):
                data[key] = value
            elif key in REPORTED_TEXT and isinstance(value, str):
                data[key] = value[:REPORTED_TEXT_LIMIT]
        self.emit(kind, {**self.ctx(), **data})

    def crashed(self) -> None:
        self.emit("service_crashed", {"service_name": "chromium", "phase": "running"})
        self.emit("monitor_disconnected", {"reason": "chrome_restarted"})

    def _task(self, coroutine) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


def _arg_text(arg: dict) -> str:
    if "value" in arg:
        value = arg["value"]
        if isinstance(value, bool):
            return str(value).lower()
        return value if isinstance(value, str) else json.dumps(value)
    return arg.get("description") or arg.get("unserializableValue") or arg.get("type", "")


def _body_limit(mime: str) -> int:
    mime = mime.lower()
    if any(kind in mime for kind in ("json", "xml", "x-www-form-urlencoded")):
        return JSON_LIMIT
    if mime.startswith("text/") or "javascript" in mime:
        return TEXT_LIMIT
    return 0
