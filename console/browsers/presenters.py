"""How one telemetry envelope reads in the pane: a one-line summary, a severity, the console details
(level, text, URL, stack trace) and the full JSON behind an expander (notes §6.4 shapes)."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html import escape as _escape
from typing import Any, NamedTuple

from django.utils.safestring import SafeString

from console.service.telemetry import Envelope, moment
from console.web import images


def escape(value: Any) -> str:
    """For attribute values."""
    return html.escape("" if value is None else str(value), quote=True)


def escape_text(value: Any) -> str:
    """For element content: quotes need no escaping there (and JSON is full of them)."""
    return html.escape("" if value is None else str(value), quote=False)


def _text(value: str) -> str:
    """``html.escape(value, False)``, without its three passes over a string with nothing to escape (most
    rows' JSON and summary): three tests for a character cost a sixth of them."""
    if "&" in value or "<" in value or ">" in value:
        return _escape(value, False)
    return value


def _name(value: str) -> tuple[str, str]:
    """A severity, category, type or level escaped for an attribute and for text. Remembered when short: a
    stream repeats a few dozen of them, and every row shows four (bounded: they come from the service)."""
    found = _NAMES.get(value)
    if found is None:
        found = (_escape(value), _escape(value, False))
        if len(value) <= 64:
            if len(_NAMES) >= 1024:
                _NAMES.clear()
            _NAMES[value] = found
    return found


_NAMES: dict[str, tuple[str, str]] = {}


def _labels(severity: str, category: str, kind: str, level: str) -> tuple[str, str, str]:
    """The parts of a row's markup that its severity, category, type and level make: the opening tag up to
    its ``data-seq`` value, its attributes after it, and the labels in its summary. Remembered: a stream
    repeats a few dozen such combinations (bounded: they come from the service)."""
    key = (severity, category, kind, level)
    found = _LABELS.get(key)
    if found is None:
        (category_attr, category_text), (kind_attr, kind_text) = _name(category), _name(kind)
        # data-level: what the page's level filter matches (static/js/telemetry.js).
        level_attr = f' data-level="{_name(level)[0]}"' if level else ""
        labels = (
            f' <span class="cat cat--{category_attr}">{category_text}</span>'
            f' <span class="trow__type">{kind_text}</span>'
        )
        if level:
            labels += f' <span class="level level--{_name(level)[0]}">{_name(level)[1]}</span>'
        found = (
            f'<li class="trow trow--{_name(severity)[0]}" data-seq="',
            f'" data-category="{category_attr}" data-type="{kind_attr}"{level_attr}',
            labels,
        )
        if sum(map(len, key)) <= 256:
            if len(_LABELS) >= 1024:
                _LABELS.clear()
            _LABELS[key] = found
    return found


_LABELS: dict[tuple[str, str, str, str], tuple[str, str, str]] = {}

SCREENSHOT_PREVIEW = 120
# The events the overview and the session wall count as errors: what a page logged, and failed requests.
ERROR_TYPES = ("console_error", "network_loading_failed", "network_response")
# json.dumps(body, ensure_ascii=False, default=str), without building an encoder for every event: the C
# encoder json.dumps itself builds for each call (without the check for cycles: parsed JSON has none), made
# once; the encoder object where the C one is missing.
if json.encoder.c_make_encoder is not None:
    _encode = json.encoder.c_make_encoder(
        None, str, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
    )

    def _dumps(body: Any) -> str:
        return "".join(_encode(body, 0))

else:  # pragma: no cover
    _dumps = json.JSONEncoder(ensure_ascii=False, default=str).encode


@dataclass(frozen=True)
class StackFrame:
    function: str
    url: str
    line: int | None
    column: int | None

    def __str__(self) -> str:
        where = self.url or "<anonymous>"
        if self.line is not None:
            # CDP numbers lines and columns from 0; people (and editors) count from 1.
            where += f":{self.line + 1}:{(self.column or 0) + 1}"
        return f"at {self.function or '(anonymous)'} ({where})"


class Row(NamedTuple):
    """One event as the pane shows it. A named tuple, immutable like a frozen dataclass but built for a
    fraction of its cost (a frozen dataclass sets each of its fields through a call): the relay builds one
    for every live event."""

    seq: int | None
    ts: int | None  # the event's time, Unix microseconds (``time`` is it as a datetime)
    type: str
    category: str
    severity: str  # info | warn | error
    summary: str
    level: str = ""
    text: str = ""
    url: str = ""
    stack: tuple[tuple[str, tuple[StackFrame, ...]], ...] = ()
    screenshot: str = ""
    truncated: bool = False
    json: str = ""
    target: str = ""  # the CDP target (browser tab) the event came from, when the service says

    @property
    def time(self) -> datetime | None:
        return moment(self.ts)

    @property
    def html(self) -> SafeString:
        """The row's markup: built here rather than by the template engine because the live pane renders
        every event (the relay renders each one once, at up to thousands per second); the page's history
        rows use the same markup through ``{{ row.html }}``. One line (one SSE ``data:`` line), and text
        escaped only for what text needs: every byte is sent to every viewer."""
        return SafeString(self.markup())

    def markup(self) -> str:
        """``html`` as a plain string (what the relay encodes: no copy into a SafeString)."""
        seq = "" if self.seq is None else str(self.seq)  # a number: nothing in it to escape
        opening, attrs, labels = _labels(self.severity, self.category, self.type, self.level)
        time = _time(self.ts)
        # data-target (with data-level): what the page's tab filter matches (static/js/telemetry.js).
        target = f' data-target="{_name(self.target)[0]}"' if self.target else ""
        badge = ' <span class="badge">truncated</span>' if self.truncated else ""
        body = (
            self._body()
            if self.url or self.stack or self.screenshot or (self.text and self.text != self.summary)
            else ""
        )
        return (
            f'{opening}{seq}{attrs}{target}><details><summary>{time}{labels} <span class="trow__summary">'
            f'{_text(self.summary)}</span>{badge}</summary><div class="trow__body">{body}'
            '<div class="trow__json"><button type="button" class="small" data-copy>Copy JSON</button>'
            f' <span class="muted">seq {seq}</span><pre data-json>{_text(self.json)}</pre></div>'
            "</div></details></li>"
        )

    def _body(self) -> str:
        """What the row shows when opened, above its JSON: the console text, the URL, the stack trace, the
        screenshot (each when it has one)."""
        parts = []
        if self.text and self.text != self.summary:
            parts.append(f'<p class="trow__text">{_text(self.text)}</p>')
        if self.url:
            url = _text(self.url)
            parts.append(f'<p class="trow__url"><span class="muted">URL</span> <code>{url}</code></p>')
        if self.stack:
            t = escape_text
            lines = []
            for description, frames in self.stack:
                if description:
                    lines.append(f"    --- {t(description)} ---\n")
                lines.extend(f"    {t(str(frame))}\n" for frame in frames)
            parts.append(f'<pre class="trow__stack">{"".join(lines)}</pre>')
        if self.screenshot:
            when = _clock(_iso(self.ts))[:8]
            parts.append(
                f'<img class="trow__shot" alt="Screenshot at {when}"'
                f' src="data:image/png;base64,{_escape(self.screenshot)}">'
            )
        return "".join(parts)

    @property
    def clock(self) -> str:
        """``14:03:07.123`` (UTC), to the millisecond: events come many per second."""
        return _clock(_iso(self.ts))


def _clock(iso: str) -> str:
    """``14:03:07.123`` from ``2026-01-02T14:03:07.123456+00:00`` (a whole second has no fraction there)."""
    return iso[11:19] + (iso[19:23] if iso[19:20] == "." else ".000") if iso else ""


def _iso(ts: int | None) -> str:
    """``moment(ts).isoformat()`` ("" for None), without a datetime for every event: the date and time of
    each whole second are remembered (a stream's events come many to a second, and a datetime and its
    isoformat cost more than the rest of a row's markup). Only where ``moment``'s float of seconds holds
    every microsecond (to the year 2106); elsewhere through ``moment`` itself."""
    if type(ts) is not int or not 0 <= ts < _EXACT:
        found = moment(ts)
        return "" if found is None else found.isoformat()
    seconds, micros = divmod(ts, 1_000_000)
    second = _SECONDS.get(seconds) or _second(seconds)
    return f"{second}.{micros:06d}+00:00" if micros else f"{second}+00:00"


def _time(ts: int | None) -> str:
    """A row's ``<time>``: ``_iso(ts)`` and ``_clock`` of it, from the same remembered second."""
    if type(ts) is not int or not 0 <= ts < _EXACT:
        iso = _iso(ts)
        return f'<time datetime="{iso}">{_clock(iso)}</time>' if iso else "<time></time>"
    seconds, micros = divmod(ts, 1_000_000)
    second = _SECONDS.get(seconds) or _second(seconds)
    if not micros:
        return f'<time datetime="{second}+00:00">{second[11:]}.000</time>'
    fraction = str(1_000_000 + micros)  # "1" and the six digits: cheaper than a format spec
    return f'<time datetime="{second}.{fraction[1:]}+00:00">{second[11:]}.{fraction[1:4]}</time>'


def _second(seconds: int) -> str:
    """``2026-01-02T14:03:07``: the date and time of a whole second since the epoch, remembered."""
    if len(_SECONDS) >= 1024:
        _SECONDS.clear()
    second = _SECONDS[seconds] = datetime.fromtimestamp(seconds, tz=UTC).isoformat()[:19]
    return second


# Below 2**32 s, a double's seconds are exact to within 0.24 µs: rounded to the microsecond, as
# datetime.fromtimestamp rounds them, they are the integer's own microseconds.
_EXACT = 2**32 * 1_000_000
_SECONDS: dict[int, str] = {}


def raw(envelope: Envelope) -> dict:
    """The envelope as the service sent it (unknown fields included)."""
    event = envelope.event
    body: dict[str, Any] = {**envelope.extra, "seq": envelope.seq}
    if event is not None:
        body["event"] = {
            "ts": event.ts,
            "type": event.type,
            "category": event.category,
            "source": event.source,
            "data": event.data,
            "truncated": event.truncated,
            **event.extra,
        }
    return body


def _pretty(envelope: Envelope) -> str:
    body = raw(envelope)
    data = (body.get("event") or {}).get("data")
    if isinstance(data, dict) and isinstance(data.get("png"), str) and len(data["png"]) > SCREENSHOT_PREVIEW:
        # A screenshot's base64 would dwarf the page; the image itself is shown above the JSON.
        png = data["png"]
        body["event"]["data"] = {**data, "png": f"{png[:SCREENSHOT_PREVIEW]}… ({len(png)} characters)"}
    # Compact (the C encoder; indent would use the slow pure-Python one on every live event): telemetry.js
    # indents it when a row is opened.
    return _dumps(body)


def _stack(trace: Any) -> tuple[tuple[str, tuple[StackFrame, ...]], ...]:
    """A CDP stack trace and its async parents as (description, frames) groups."""
    groups = []
    depth = 0
    while isinstance(trace, dict) and depth < 8:
        frames = tuple(
            StackFrame(
                function=str(f.get("functionName") or ""),
                url=str(f.get("url") or ""),
                line=f.get("lineNumber") if isinstance(f.get("lineNumber"), int) else None,
                column=f.get("columnNumber") if isinstance(f.get("columnNumber"), int) else None,
            )
            for f in trace.get("callFrames") or []
            if isinstance(f, dict)
        )
        groups.append((str(trace.get("description") or ""), frames))
        trace, depth = trace.get("parent"), depth + 1
    return tuple(g for g in groups if g[1])


def _ms(value: Any) -> str:
    if not isinstance(value, int | float):
        return ""
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


def _summary(kind: str, d: dict) -> str:
    url = str(d.get("url") or "")
    if kind in ("console_log", "console_error"):
        return str(d.get("text") or "")
    if kind == "network_request":
        return f"{d.get('method', 'GET')} {url}".strip() + (
            f"  ({d['resource_type']})" if d.get("resource_type") else ""
        )
    if kind == "network_response":
        mime = f"  {d['mime_type']}" if d.get("mime_type") else ""
        return f"{d.get('status', '')} {d.get('method', '')} {url}{mime}".strip()
    if kind == "network_loading_failed":
        return f"{d.get('error_text', 'failed')} {url}".strip() + (
            "  (canceled)" if d.get("canceled") else ""
        )
    if kind == "network_idle":
        return f"network idle  {url}".strip()
    if kind == "proxy_error":
        return f"proxy error {d.get('code', '')} ({d.get('status', 502)}) {d.get('method', '')} {url}".strip()
    if kind == "page_navigation":
        return f"→ {url}"
    if kind == "page_dom_content_loaded":
        return f"DOMContentLoaded  {url}".strip()
    if kind == "page_load":
        return f"load  {url}".strip()
    if kind == "page_tab_opened":
        return f"new tab “{d.get('title') or ''}” {url}".strip()
    if kind == "page_layout_shift":
        value = (d.get("layout_shift_details") or {}).get("value")
        return f"layout shift {value}" if value is not None else "layout shift"
    if kind == "page_lcp":
        return f"largest contentful paint at {_ms(d.get('time'))}".strip()
    if kind == "page_layout_settled":
        return "layout settled"
    if kind == "page_navigation_settled":
        return f"navigation settled  {url}".strip()
    if kind == "interaction_click":
        text = f" “{d['text']}”" if d.get("text") else ""
        return f"click {d.get('selector', '')}{text} at ({d.get('x')}, {d.get('y')})"
    if kind == "interaction_key":
        return f"key {d.get('key', '')} in {d.get('selector', '')}".strip()
    if kind == "interaction_scroll_settled":
        return f"scrolled to ({d.get('to_x')}, {d.get('to_y')}) in {d.get('target_selector', '')}".strip()
    if kind == "monitor_screenshot":
        return f"screenshot ({len(str(d.get('png') or '')) * 3 // 4 // 1024} KiB)"
    if kind == "monitor_disconnected":
        return f"telemetry collector disconnected: {d.get('reason', '')}"
    if kind == "monitor_reconnected":
        return f"telemetry collector reconnected after {_ms(d.get('reconnect_duration_ms'))}"
    if kind == "monitor_reconnect_failed":
        return f"telemetry collector gave up: {d.get('reason', '')}; no further events will follow"
    if kind == "monitor_init_failed":
        return f"telemetry collector failed to start at {d.get('step', '?')}"
    if kind == "api_call":
        return f"{d.get('operation_id', '')} → {d.get('status', '')} in {_ms(d.get('duration_ms'))}"
    if kind == "cdp_connect":
        return "CDP client connected"
    if kind == "cdp_disconnect":
        return (
            f"CDP client disconnected ({d.get('reason', '')}) after {_ms(d.get('duration_ms'))}, "
            f"{d.get('message_count', 0)} messages"
        )
    if kind == "live_view_connect":
        return "live view attached"
    if kind == "live_view_disconnect":
        return f"live view detached after {_ms(d.get('duration_ms'))}"
    if kind == "captcha_solve_result":
        site = f" on {d['website_host']}" if d.get("website_host") else ""
        error = f" ({d['error_code']})" if d.get("error_code") else ""
        took = _ms(d.get("duration_ms"))
        return f"{d.get('captcha_type', 'captcha')}: {d.get('status', '')}{error} in {took}{site}"
    if kind == "system_oom_kill":
        rss = d.get("rss_kb")
        size = f", {rss // 1024} MiB" if isinstance(rss, int) else ""
        return f"out of memory: killed {d.get('process_name', '?')} (pid {d.get('pid', '?')}{size})"
    if kind == "service_crashed":
        return f"{d.get('service_name', 'a service')} crashed ({d.get('phase', '')})"
    compact = json.dumps(d, separators=(",", ":"), default=str)
    return compact[:200] + ("…" if len(compact) > 200 else "")


def _severity(kind: str, d: dict) -> str:
    level = str(d.get("level") or "").lower()
    status = d.get("status")
    if kind == "network_loading_failed" and d.get("canceled") is True:
        # Given up on by the page or the browser (a navigation away, a favicon headless Chromium drops, an
        # abort()): shown, but not a failed request for the wall's badge, the overview or the player.
        return "info"
    if kind in (
        "console_error",
        "network_loading_failed",
        "proxy_error",
        "system_oom_kill",
        "service_crashed",
    ):
        return "error"
    if kind in ("monitor_reconnect_failed", "monitor_init_failed"):
        return "error"
    if level in ("error", "assert"):
        return "error"
    if kind == "network_response" and isinstance(status, int) and status >= 500:
        return "error"
    if kind == "captcha_solve_result" and d.get("status") != "success":
        return "warn"
    if level in ("warning", "warn") or (
        kind == "network_response" and isinstance(status, int) and status >= 400
    ):
        return "warn"
    if kind in ("monitor_disconnected", "cdp_disconnect") and d.get("reason") not in (None, "client_close"):
        return "warn"
    if kind == "page_layout_shift" and ((d.get("layout_shift_details") or {}).get("value") or 0) > 0.1:
        return "warn"
    return "info"


def _screenshot(data: dict) -> str:
    """A telemetry screenshot's base64 PNG, if its header says it is one of a screen's size (a PNG may
    declare 100 000 x 100 000 pixels in a few hundred bytes: every browser shown the row decodes it)."""
    png = str(data.get("png") or "")
    return png if images.showable_png_base64(png) else ""


def row(envelope: Envelope) -> Row:
    event = envelope.event
    if event is not None:
        data = event.data if isinstance(event.data, dict) else {}
        kind, category = event.type or "unknown", event.category or "unknown"
    else:
        data, kind, category = {}, "unknown", "unknown"
    if kind.startswith("console"):
        level = str(data.get("level") or ("error" if kind == "console_error" else ""))
        text = str(data.get("text") or "")
        url = str(data.get("source_url") or data.get("url") or "")
    else:
        level = text = ""
        url = str(data.get("url") or "")
    trace, target = data.get("stack_trace"), data.get("target_id")
    # tuple.__new__ itself, with every field in order: a named tuple's __new__ is a Python call of fourteen
    # arguments, for every live event.
    return tuple.__new__(
        Row,
        (
            envelope.seq,
            event.ts if event else None,
            kind,
            category,
            _severity(kind, data),
            _summary(kind, data),
            level,
            text,
            url,
            _stack(trace) if trace is not None else (),
            _screenshot(data) if kind == "monitor_screenshot" else "",
            bool(event.truncated) if event else False,
            _pretty(envelope),
            target if isinstance(target, str) else "",
        ),
    )


def duration(value: timedelta | None) -> str:
    """``2 d 3 h``, ``2 h 14 min``, ``48 min 3 s``, ``12 s``."""
    if value is None:
        return ""
    seconds = max(0, int(value.total_seconds()))
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def browser_summary(session) -> str:
    """A session's browser on one line: ``headless · stealth · us-east-1 · 1920x1080``."""
    parts = ["headless" if session.headless else "headful"]
    if session.stealth:
        parts.append("stealth")
    parts += [str(value) for value in (session.region, session.viewport) if value]
    return " · ".join(parts)


def uses_summary(session) -> str:
    """What a session loads on one line: its profile, proxy and pool ("" for none)."""
    parts = [session.profile.label if session.profile else "", session.proxy_label]
    if session.pool:
        parts.append(f"pool {session.pool.label}")
    return " · ".join(p for p in parts if p)
