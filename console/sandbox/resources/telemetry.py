"""Browser telemetry (spec: Telemetry page query parameters, Telemetry stream; notes §6).

Each session keeps an archive of envelopes ``{seq, event}`` in ``record["_telemetry"]`` (a ``Log``), bounded
to the last ``telemetry_retention`` events (tenant setting, default 10,000), so the oldest retained ``seq``
may be above 1. Events come from three places:

- a generator that produces realistic traffic (navigations, network requests and responses, console logs
  and errors with stack traces, interactions, control calls, connections, CAPTCHA results, now and then a
  crash) lazily from the tenant clock: whenever a page or stream reads the archive, the events due since
  the last read are appended at ``telemetry_rate_per_second`` (tenant setting, default 2; 0 disables),
  only for the categories the session captures (``monitor`` flows whenever a CDP category is on); more
  than ``EAGER_GENERATE`` due at once go into a span, built a chunk at a time as reads reach them (see
  "Spans"); an ended session catches up to its end at the next read of its telemetry;
- ``POST /_sandbox/telemetry/emit {session_id, events: [{type, category?, data?}]}`` or ``{session_id,
  count}``: events injected now (missing ``data`` is filled in realistically for the type);
- ``POST /_sandbox/telemetry/burst {session_id, count}``: N small synthetic console events appended at once
  and published together, for benchmarks.

Page reads (``GET /browsers/{id}/telemetry/events``): the offset cursor is opaque: a per-session random base
plus the position (it is never an event's seq, never 0). ``category`` and ``type`` may be comma-joined
or repeated; both apply within the page (an event must match both); an unknown value matches nothing.
``since``/``until`` take RFC 3339 or a duration (``30s``, ``5m``, ``1h30m``, ``500ms``) meaning that
long before now. ``offset=0`` counts as no cursor (0 is the service's "last page" sentinel). A session
whose telemetry was never on has an empty archive, so it reads as an empty list.

The stream (``GET /browsers/{id}/telemetry/stream``) sends every archived event after its start point in
one chunk per wake-up, each frame pre-encoded once for all readers. It starts after ``Last-Event-ID``, or at
the oldest retained event with ``replay=all``, else after the newest; it ends when the session ends.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import contextlib
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core import store
from console.sandbox.core.errors import conflict, invalid
from console.sandbox.core.http import (
    EventStreamResponse,
    StreamDropped,
    counted,
    endpoint,
    last_event_id,
    ok,
    read_json,
)
from console.sandbox.core.state import Tenant, parse_time
from console.sandbox.resources import sessions

DEFAULT_RATE = 2.0
DEFAULT_RETENTION = 10_000
MAX_EMIT = 1_000
MAX_EMIT_DATA = 32 * 1024  # characters of one emitted event's data, as JSON
# A burst is built on the event loop every tenant shares: 200,000 took seconds (the benchmark sends 20,000).
MAX_BURST = 20_000
# The most events one catch-up generates (a tenant's clock moved a day at 1,000 a second would be 86 million).
MAX_GENERATE = 10_000
# A catch-up due more than this many events puts them in a span, built a chunk at a time as reads reach them.
EAGER_GENERATE = 200
DEFAULT_SINCE = timedelta(minutes=5)
PAGE_LIMIT, PAGE_MAX = 20, 100
ORDERS = ("asc", "desc")
ALL_CATEGORIES = (
    "console",
    "network",
    "page",
    "interaction",
    "control",
    "connection",
    "system",
    "screenshot",
    "captcha",
    "monitor",
)
CDP_CATEGORIES = ("console", "network", "page", "interaction")

# type -> (category, source kind, source event): the 31 types of notes §6.4.
TYPES: dict[str, tuple[str, str, str | None]] = {
    "console_log": ("console", "cdp", "Runtime.consoleAPICalled"),
    "console_error": ("console", "cdp", "Runtime.exceptionThrown"),
    "network_request": ("network", "cdp", "Network.requestWillBeSent"),
    "network_response": ("network", "cdp", "Network.loadingFinished"),
    "network_loading_failed": ("network", "cdp", "Network.loadingFailed"),
    "network_idle": ("network", "cdp", None),
    "proxy_error": ("network", "cdp", "Network.responseReceived"),
    "page_navigation": ("page", "cdp", "Page.frameNavigated"),
    "page_dom_content_loaded": ("page", "cdp", "Page.domContentEventFired"),
    "page_load": ("page", "cdp", "Page.loadEventFired"),
    "page_tab_opened": ("page", "cdp", "Target.targetCreated"),
    "page_layout_shift": ("page", "cdp", "PerformanceTimeline.timelineEventAdded"),
    "page_lcp": ("page", "cdp", "PerformanceTimeline.timelineEventAdded"),
    "page_layout_settled": ("page", "cdp", None),
    "page_navigation_settled": ("page", "cdp", None),
    "interaction_click": ("interaction", "extension", "click"),
    "interaction_key": ("interaction", "extension", "keydown"),
    "interaction_scroll_settled": ("interaction", "extension", "scrollend"),
    "monitor_screenshot": ("screenshot", "cdp", "Page.captureScreenshot"),
    "monitor_disconnected": ("monitor", "local_process", None),
    "monitor_reconnected": ("monitor", "local_process", None),
    "monitor_reconnect_failed": ("monitor", "local_process", None),
    "monitor_init_failed": ("monitor", "local_process", None),
    "api_call": ("control", "kernel_api", None),
    "cdp_connect": ("connection", "kernel_api", None),
    "cdp_disconnect": ("connection", "kernel_api", None),
    "live_view_connect": ("connection", "kernel_api", None),
    "live_view_disconnect": ("connection", "kernel_api", None),
    "captcha_solve_result": ("captcha", "extension", None),
    "system_oom_kill": ("system", "local_process", "oom_kill"),
    "service_crashed": ("system", "local_process", "supervisor"),
}


# The archive ---------------------------------------------------------------------------------------


class Event:
    """One archived event: ``seq``, ``ts`` (Unix microseconds), ``category``, ``type``, ``frame`` (the SSE
    frame, encoded once for every reader) and ``body`` (the envelope ``{seq, event}``).

    An event of a span (``spanned``: generated after a long clock move) knows its ``seq`` and ``ts`` from
    the start; the rest is built with the other events of its chunk the first time anything reads it.
    """

    __slots__ = ("_body", "_category", "_chunk", "_frame", "_type", "seq", "spanned", "ts")

    def __init__(self, seq: int, ts: int, category=None, type=None, frame=None, body=None, chunk=None):
        self.seq, self.ts = seq, ts
        self._category, self._type, self._frame, self._body = category, type, frame, body
        self._chunk = chunk
        self.spanned = chunk is not None

    def _built(self) -> Event:
        if self._chunk is not None:
            self._chunk.fill()
        return self

    @property
    def category(self) -> str:
        return self._built()._category

    @property
    def type(self) -> str:
        return self._built()._type

    @property
    def frame(self) -> bytes:
        return self._built()._frame

    @property
    def body(self) -> dict:
        return self._built()._body


def _seq(event: Event) -> int:
    return event.seq


def _ts(event: Event) -> int:
    return event.ts


@dataclass
class Log:
    """One session's archive plus what the generator needs to continue where it stopped."""

    cursor_base: int
    rng: random.Random
    events: list[Event] = field(default_factory=list)
    next_seq: int = 1
    generated_until: datetime | None = None
    script: Iterator | None = None
    ended: bool = False
    # Spans: the events of a long catch-up, built a chunk at a time when read (see ``_add_span``).
    spans: list[dict] = field(default_factory=list)
    waiter: asyncio.Event = field(default_factory=asyncio.Event)

    def wake(self) -> None:
        waiter, self.waiter = self.waiter, asyncio.Event()
        waiter.set()

    def after(self, seq: int) -> list[Event]:
        return self.events[bisect.bisect_right(self.events, seq, key=_seq) :]


def log_of(record: dict) -> Log:
    log = record.get("_telemetry")
    if log is None:
        rng = random.Random(record["session_id"])
        log = Log(cursor_base=rng.randrange(10**9, 10**10), rng=rng)
        record["_telemetry"] = log
    return log


def start(tenant: Tenant, record: dict) -> None:
    """A new session: generation starts now (or where ``backdate`` puts it)."""
    log_of(record).generated_until = tenant.now()


def backdate(tenant: Tenant, record: dict, moment: datetime) -> None:
    """Demo data: pretend the session has been generating since ``moment``."""
    log_of(record).generated_until = moment


def finish(tenant: Tenant, record: dict) -> None:
    """The session ended: its readers are woken. What was due up to the end is generated by the next read
    of this session's telemetry, not here: a listing that notices many sessions timed out generated for
    each of them in turn."""
    log = log_of(record)
    log.ended = True
    log.wake()


def _rate(tenant: Tenant) -> float:
    try:
        return max(0.0, float(tenant.settings.get("telemetry_rate_per_second", DEFAULT_RATE)))
    except (TypeError, ValueError):
        return DEFAULT_RATE


def _retention(tenant: Tenant) -> int:
    try:
        return max(1, int(tenant.settings.get("telemetry_retention", DEFAULT_RETENTION)))
    except (TypeError, ValueError):
        return DEFAULT_RETENTION


def _micros(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def _allowed(record: dict) -> set[str] | None:
    chosen = sessions.categories(record)
    if chosen is None:
        return None
    allowed = set(chosen)
    if allowed & set(CDP_CATEGORIES):
        allowed.add("monitor")
    return allowed


def captured(record: dict) -> set[str]:
    """The categories the session captures (``monitor`` with any CDP one); empty when capture is off."""
    return _allowed(record) or set()


def from_page(tenant: Tenant, record: dict, kind: str, data: dict) -> None:
    """An event a real page reported (``page_events``): archived when the session captures its category
    and is still active."""
    if TYPES[kind][0] not in captured(record):
        return
    if not sessions.is_active(tenant, record):
        return
    append(tenant, record, [(tenant.now(), kind, data)])


def catch_up(tenant: Tenant, record: dict, *, until: datetime | None = None) -> None:
    """Append the generated events due between the last generation and ``until`` (default: now/end)."""
    log = log_of(record)
    limit = until or sessions.ended_at(tenant, record) or tenant.now()
    if record.get("_ended_at") is not None:
        limit = min(limit, record["_ended_at"])  # an ended session generates up to its end, once
    if record.get("_engine") == "chromium":
        # A real page produces its own telemetry (page_events); nothing is generated after the history a
        # demo session was seeded with (``_history_until``).
        history_end = record.get("_history_until")
        if history_end is None or (log.generated_until is not None and log.generated_until >= history_end):
            log.generated_until = limit
            return
        limit = min(limit, history_end)
    if log.generated_until is None:
        log.generated_until = limit
        return
    start_at = log.generated_until
    rate = _rate(tenant)
    allowed = _allowed(record)
    if limit <= start_at:
        return
    if rate <= 0 or not allowed:
        log.generated_until = limit
        return
    due = int((limit - start_at).total_seconds() * rate)
    if due <= 0:
        return
    step = 1 / rate
    retention = _retention(tenant)
    skipped = max(0, due - min(retention, MAX_GENERATE))
    if skipped:
        # Older than the archive keeps, or than one catch-up generates (it runs on the event loop every
        # tenant shares): only their sequence numbers are spent (a gap, as in the service).
        log.next_seq += skipped
    if due - skipped > EAGER_GENERATE:
        # A long move: the events get their seq and time now, their content when a read reaches them.
        _add_span(tenant, record, start_at + timedelta(seconds=skipped * step), step, due - skipped, allowed)
        log.generated_until = start_at + timedelta(seconds=due * step)
        return
    if log.script is None:
        log.script = script(log.rng, record)
    drafts = []
    for i in range(skipped, due):
        draft = _next_allowed(log.script, allowed)
        if draft is None:
            break
        moment = start_at + timedelta(seconds=(i + log.rng.random() * 0.8) * step)
        drafts.append((moment, *draft))
    log.generated_until = start_at + timedelta(seconds=due * step)
    append(tenant, record, drafts)


def _next_allowed(events: Iterator, allowed: set[str]):
    for _ in range(500):
        kind, data = next(events)
        if TYPES[kind][0] in allowed:
            return kind, data
    return None


def append(tenant: Tenant, record: dict, drafts: list[tuple]) -> list[Event]:
    """Archive ``(moment, type, data[, category])`` drafts in order and wake the session's readers."""
    if not drafts:
        return []
    log = log_of(record)
    last_ts = log.events[-1].ts if log.events else 0
    added = []
    for draft in drafts:
        moment, kind, data = draft[0], draft[1], draft[2]
        category = draft[3] if len(draft) > 3 else TYPES[kind][0]
        ts = max(_micros(moment), last_ts)
        last_ts = ts
        added.append(_event(log.next_seq, ts, kind, category, data))
        log.next_seq += 1
    log.events.extend(added)
    _trim(tenant, log)
    log.wake()
    return added


def _trim(tenant: Tenant, log: Log) -> None:
    """Keep the newest ``telemetry_retention`` events; spans forget what went."""
    excess = len(log.events) - _retention(tenant)
    if excess > 0:
        del log.events[:excess]
    if log.spans:
        first = log.events[0].seq if log.events else log.next_seq
        kept = []
        for span in log.spans:
            if span["first_seq"] + span["count"] > first:
                span["cut"] = max(span["cut"], first - span["first_seq"])
                kept.append(span)
        log.spans = kept


# Spans: a long catch-up, built when read -------------------------------------------------------------
#
# After a long clock move (or the first read of a demo session's history) a catch-up is due thousands of
# events; building each (its data from the flow, its JSON) cost 1.5 to 3 s of the event loop under load for
# 10 000. A span gives each its seq and time at once (a few milliseconds) and builds a chunk of CHUNK
# events the first time a read touches one of them: a page builds what it returns, whatever the move.
# A chunk's content comes from its own seeded flow, so it is the same whenever it is built (and after a
# restart: the state keeps the span, not its events).

CHUNK = 100


class _Chunk:
    __slots__ = ("events", "index", "record", "span")

    def __init__(self, record: dict, span: dict, index: int) -> None:
        self.record, self.span, self.index = record, span, index
        self.events: dict[int, Event] = {}

    def fill(self) -> None:
        span, events = self.span, self.events
        if not events:
            return
        rng = random.Random(f"{span['seed']}:{self.index}")
        flow = script(rng, self.record)
        for _ in range(2 + rng.randrange(12)):  # mid-flow, not a new connection every chunk
            next(flow)
        allowed = set(span["allowed"])
        fallback = next((k for k, (category, _, _) in TYPES.items() if category in allowed), "api_call")
        first, builds = self.index * CHUNK, []
        for j in range(first, min(first + CHUNK, span["count"])):
            draft = _next_allowed(flow, allowed)
            if draft is None:
                ctx = _context(rng, self.record, "https://shop.example.com/cart", 1)
                draft = (fallback, sample(fallback, rng, ctx))
            event = events.get(j)
            if event is None:
                continue  # trimmed: built only to keep the flow the same
            kind, data = draft
            builds.append((event, _event(event.seq, event.ts, kind, TYPES[kind][0], data)))
        # All or nothing: a chunk that failed half-way is built again by the next read.
        for event, built in builds:
            event._category, event._type = built._category, built._type
            event._frame, event._body = built._frame, built._body
            event._chunk = None
        self.events = {}


def _placeholders(record: dict, span: dict) -> list[Event]:
    """The span's events still kept, each with its seq and time; the rest is built by its chunk."""
    rng = random.Random(f"{span['seed']}:ts")
    start, step, first_seq, cut = span["start_us"], span["step_us"], span["first_seq"], span["cut"]
    last, chunk, out = span["floor_ts"], None, []
    for j in range(span["count"]):
        # As the eager path: the j-th slot of the span, somewhere in its first 80 %.
        ts = max(int(start + (j + rng.random() * 0.8) * step), last)
        last = ts
        if j < cut:
            continue
        if chunk is None or chunk.index != j // CHUNK:
            chunk = _Chunk(record, span, j // CHUNK)
        event = Event(first_seq + j, ts, chunk=chunk)
        chunk.events[j] = event
        out.append(event)
    return out


def _add_span(tenant: Tenant, record: dict, start: datetime, step: float, count: int, allowed) -> None:
    log = log_of(record)
    span = {
        "first_seq": log.next_seq,
        "count": count,
        "start_us": _micros(start),
        "step_us": step * 1_000_000,
        "seed": log.rng.randrange(2**62),
        "allowed": sorted(allowed),
        "floor_ts": log.events[-1].ts if log.events else 0,
        "cut": 0,
    }
    log.next_seq += count
    log.spans.append(span)
    log.events.extend(_placeholders(record, span))
    _trim(tenant, log)
    log.wake()


def restore_spans(record: dict) -> None:
    """After a restart: the spans' events back among the saved ones (which never include them)."""
    log = record.get("_telemetry")
    if log is None or not log.spans:
        return
    for span in log.spans:
        log.events.extend(_placeholders(record, span))
    log.events.sort(key=_seq)


def after_restart(tenant: Tenant) -> None:
    """The sessions' spans rebuilt among their saved events (``store.after_load``)."""
    for record in tenant.table("browsers").values():
        restore_spans(record)


def _saved(log: Log) -> dict:
    """What the state file keeps of an archive besides its events (rows of their own)."""
    fields = ("cursor_base", "rng", "next_seq", "generated_until", "spans", "ended")
    return {name: getattr(log, name) for name in fields}


def _restore_event(log: Log, seq: int, body: dict) -> None:
    """A saved event back at the end of its archive (rows come oldest first)."""
    frame = f"id: {seq}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n".encode()
    event = body["event"]
    log.events.append(
        Event(seq=seq, ts=event["ts"], category=event["category"], type=event["type"], frame=frame, body=body)
    )


# A session's archive in the state file (``app.assemble`` registers it): its events are rows of their own.
STORED = (store.Kind("Log", Log, dump=_saved, restore=_restore_event),)


def _event(seq: int, ts: int, kind: str, category: str, data: dict) -> Event:
    _, source_kind, source_event = TYPES.get(kind, (category, "kernel_api", None))
    source: dict = {"kind": source_kind}
    if source_event:
        source["event"] = source_event
    if source_kind == "cdp" and data.get("target_type"):
        source["metadata"] = {"target_type": str(data["target_type"])}
    event = {"ts": ts, "type": kind, "category": category, "source": source}
    truncated = bool(data.pop("_truncated", False))
    if data:
        event["data"] = data
    event["truncated"] = truncated
    body = {"seq": seq, "event": event}
    frame = f"id: {seq}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n".encode()
    return Event(seq=seq, ts=ts, category=category, type=kind, frame=frame, body=body)


# Page reads -----------------------------------------------------------------------------------------

_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(ms|us|µs|s|m|h))+$")
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|s|m|h)")
_UNIT = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def parse_moment(value: str, now: datetime, name: str) -> datetime:
    """RFC 3339, or a duration such as 5m / 1h30m / 30s meaning that long before now."""
    text = value.strip()
    if _DURATION.match(text):
        seconds = sum(float(n) * _UNIT[u] for n, u in _PART.findall(text))
        return now - timedelta(seconds=seconds)
    try:
        return parse_time(text)
    except ValueError:
        raise invalid(
            f"{name} must be an RFC 3339 timestamp or a duration such as 5m",
            **{name: f"{value!r} is neither an RFC 3339 timestamp nor a duration like 5m, 1h or 30s"},
        ) from None


def _cursor(log: Log, raw: str | None) -> int | None:
    """The seq a cursor points at (None = no cursor)."""
    if raw is None or raw.strip() in ("", "0"):
        return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    # Only positions up to the next seq were ever issued; a larger number is no cursor of ours.
    if not log.cursor_base <= value <= log.cursor_base + log.next_seq:
        raise invalid(
            "offset is not a cursor this session issued",
            offset="pass the X-Next-Offset of the previous page (an opaque cursor, not a seq)",
        )
    return value - log.cursor_base


def _wanted_categories(request: Request, name: str = "category") -> set[str] | None:
    """A list filter given comma-joined or repeated (``category``, and ``type`` since SDK 0.131)."""
    raw = [part.strip() for value in request.query_params.getlist(name) for part in value.split(",")]
    raw = [part for part in raw if part]
    return set(raw) if raw else None


def _limit(request: Request) -> int:
    raw = request.query_params.get("limit")
    if raw is None or raw == "":
        return PAGE_LIMIT
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= PAGE_MAX:
        raise invalid(f"limit must be between 1 and {PAGE_MAX}", limit=f"must be 1 to {PAGE_MAX}, got {raw}")
    return value


def read_page(tenant: Tenant, record: dict, request: Request) -> tuple[list[dict], int | None]:
    """One page and the next cursor (None when there is no more), per the contract's paging rules."""
    params = request.query_params
    order = params.get("order") or params.get("direction") or "asc"
    if order not in ORDERS:
        raise invalid("order must be asc or desc", order="must be asc or desc")
    if order == "desc" and params.get("since"):
        raise invalid(
            "since cannot be combined with order=desc",
            since="a descending read ends at the cursor, until or the newest event; it takes no since",
        )
    limit = _limit(request)
    now = tenant.now()
    until = parse_moment(params["until"], now, "until") if params.get("until") else None
    log = log_of(record)
    cursor = _cursor(log, params.get("offset"))
    since = None
    if order == "asc" and cursor is None:
        since = parse_moment(params["since"], now, "since") if params.get("since") else now - DEFAULT_SINCE
    wanted = _wanted_categories(request)
    wanted_types = _wanted_categories(request, "type")
    catch_up(tenant, record)
    events = log.events
    end = len(events) if until is None else bisect.bisect_left(events, _micros(until), key=_ts)
    if order == "asc":
        if cursor is not None:
            begin = bisect.bisect_left(events, cursor, key=_seq)
        else:
            begin = bisect.bisect_left(events, _micros(since), key=_ts)
        scanned = events[begin : min(begin + limit, end)] if begin < end else []
        more = begin + limit < end
        next_seq = events[begin + limit].seq if more else None
    else:
        if cursor is not None:
            end = min(end, bisect.bisect_left(events, cursor, key=_seq))
        begin = max(0, end - limit)
        scanned = list(reversed(events[begin:end]))
        more = begin > 0 and end > 0
        next_seq = events[begin].seq if more else None
    # Both filters apply within the scanned page; an event must match both (SDK 0.131).
    items = [
        e.body
        for e in scanned
        if (wanted is None or e.category in wanted) and (wanted_types is None or e.type in wanted_types)
    ]
    return items, (None if next_seq is None else log.cursor_base + next_seq)


@endpoint
async def list_events(request: Request):
    tenant = request.state.tenant
    record = sessions.get_session(request, request.path_params["id"], include_deleted=True)
    items, next_cursor = read_page(tenant, record, request)
    headers = {"X-Has-More": "true" if next_cursor is not None else "false"}
    if next_cursor is not None:
        headers["X-Next-Offset"] = str(next_cursor)
    return ok(items, headers=headers)


# The stream -----------------------------------------------------------------------------------------

STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
STREAM_BATCH = 1000


def _tick(tenant: Tenant, record: dict) -> float:
    """How often an idle stream looks at the clock (generation and the inactivity timeout)."""
    rate = _rate(tenant)
    if rate > 0 and _allowed(record):
        return min(0.5, max(0.02, 1 / rate))
    return 0.5


@endpoint
async def stream_events(request: Request):
    tenant: Tenant = request.state.tenant
    record = sessions.get_session(request, request.path_params["id"])
    log = log_of(record)
    catch_up(tenant, record)
    resume = last_event_id(request)
    if resume is not None:
        start_after = resume
    elif request.query_params.get("replay") == "all":
        start_after = 0
    else:
        start_after = log.next_seq - 1
    drop_after = request.state.drop_after_events

    async def body():
        loop = asyncio.get_running_loop()
        cursor, sent = start_after, 0
        yield b": connected\n\n"
        quiet_since = loop.time()
        while True:
            waiter = log.waiter
            catch_up(tenant, record)
            # At most a few chunks a wake (a span is built as it goes out); the loop comes back at once.
            batch = log.after(cursor)[:STREAM_BATCH]
            if batch:
                if drop_after is not None and sent + len(batch) >= drop_after:
                    batch = batch[: drop_after - sent]
                    yield b"".join(e.frame for e in batch)
                    raise StreamDropped(f"stream dropped after {drop_after} events (injected fault)")
                yield b"".join(e.frame for e in batch)
                cursor, sent = batch[-1].seq, sent + len(batch)
                quiet_since = loop.time()
                continue
            if log.ended or not sessions.is_active(tenant, record):
                return
            keepalive_in = tenant.keepalive_seconds - (loop.time() - quiet_since)
            if keepalive_in <= 0:
                yield b": keepalive\n\n"
                quiet_since = loop.time()
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(keepalive_in, _tick(tenant, record))):
                    await waiter.wait()

    headers = {**STREAM_HEADERS, "X-Request-Id": request.state.request_id}
    return EventStreamResponse(counted(request, body()), media_type="text/event-stream", headers=headers)


# Control: emit and burst ---------------------------------------------------------------------------


def _control_session(request: Request, body: dict) -> dict:
    session_id = body.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise invalid("session_id is required", session_id="the browser session to emit into")
    record = sessions.get_session(request, session_id)
    if _allowed(record) is None:
        raise conflict(
            "telemetry is not enabled on this session, so it has no events", code="telemetry_disabled"
        )
    return record


def _count(body: dict, high: int) -> int:
    count = body.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= high:
        raise invalid(f"count must be 1 to {high}", count=f"an integer from 1 to {high}")
    return count


@endpoint
async def control_emit(request: Request):
    tenant = request.state.tenant
    body = await read_json(request)
    record = _control_session(request, body)
    catch_up(tenant, record)
    now = tenant.now()
    log = log_of(record)
    if "events" in body:
        raw = body["events"]
        if not isinstance(raw, list) or not raw or len(raw) > MAX_EMIT:
            raise invalid("events must be a non-empty list", events=f"1 to {MAX_EMIT} events")
        drafts = [(now, *_draft(log, record, item, index)) for index, item in enumerate(raw)]
    else:
        count = _count(body, MAX_EMIT)
        if log.script is None:
            log.script = script(log.rng, record)
        allowed = _allowed(record) or set()
        drafts = []
        for _ in range(count):
            draft = _next_allowed(log.script, allowed)
            if draft is None:
                break
            drafts.append((now, *draft))
    added = append(tenant, record, drafts)
    return ok({"seqs": [e.seq for e in added], "events": [e.body for e in added]}, status=201)


def _draft(log: Log, record: dict, item, index: int) -> tuple[str, dict, str]:
    if not isinstance(item, dict) or not isinstance(item.get("type"), str) or not item["type"]:
        raise invalid("each event needs a type", **{f"events[{index}].type": "required"})
    kind = item["type"]
    category = item.get("category") or (TYPES[kind][0] if kind in TYPES else None)
    if not isinstance(category, str) or not category:
        raise invalid(
            "an event of an unknown type needs a category",
            **{f"events[{index}].category": "required for a type outside the 31 known ones"},
        )
    data = item.get("data")
    if data is None:
        data = sample(kind, log.rng, _context(log.rng, record, "https://shop.example.com/cart", 1))
    elif not isinstance(data, dict):
        raise invalid("data must be an object", **{f"events[{index}].data": "must be an object"})
    elif len(json.dumps(data)) > MAX_EMIT_DATA:
        # Kept for the archive's retention (up to a million events), in memory and in the state file.
        why = f"at most {MAX_EMIT_DATA} characters as JSON"
        raise invalid("data is too large", **{f"events[{index}].data": why})
    if len(kind) > 100 or len(category) > 100:
        raise invalid("type and category are names", **{f"events[{index}].type": "at most 100 characters"})
    return kind, dict(data), category


@endpoint
async def control_burst(request: Request):
    """N small console events appended and published at once (readers get them in one chunk)."""
    tenant = request.state.tenant
    body = await read_json(request)
    record = _control_session(request, body)
    count = _count(body, MAX_BURST)
    log = log_of(record)
    now = tenant.now()
    ts = max(_micros(now), log.events[-1].ts if log.events else 0)
    first = log.next_seq
    added = []
    # Only what the archive keeps is built: older events of the burst spend their sequence numbers only.
    for seq in range(max(first, first + count - _retention(tenant)), first + count):
        data = {"level": "log", "text": f"burst event {seq}", "target_type": "page"}
        added.append(_event(seq, ts, "console_log", "console", data))
    log.next_seq += count
    log.events.extend(added)
    _trim(tenant, log)
    log.wake()
    return ok({"first_seq": first, "last_seq": first + count - 1, "count": count}, status=201)


# The generator -------------------------------------------------------------------------------------


def _hex(rng: random.Random, n: int = 32) -> str:
    return "".join(rng.choice("0123456789ABCDEF") for _ in range(n))


def _context(rng: random.Random, record: dict, url: str, nav_seq: int, target: str | None = None) -> dict:
    target = target or _hex(rng)
    return {
        "target_id": target,
        "target_type": "page",
        "session_id": _hex(rng),
        "frame_id": target,
        "loader_id": _hex(rng),
        "nav_seq": nav_seq,
        "url": url,
    }


SITES = [
    (
        "https://shop.example.com",
        [
            "/",
            "/search?q=noise+cancelling+headphones",
            "/p/sony-wh-1000xm5",
            "/cart",
            "/checkout/shipping",
            "/checkout/payment",
            "/checkout/confirmation",
        ],
    ),
    ("https://news.example.org", ["/", "/world/2026/elections-live", "/tech/ai-chips-supply", "/login"]),
    ("https://accounts.example.com", ["/login", "/login/mfa", "/dashboard", "/settings/security"]),
]
SCRIPTS = ["runtime.3c1f9a.js", "vendor.8e02b1.js", "app.5d7c44.js", "checkout.91af0e.js"]
API_CALLS = [
    ("GET", "/api/cart", 200, '{"items":[{"sku":"WH1000XM5","qty":1,"price":349.99}],"currency":"USD"}'),
    ("GET", "/api/session", 200, '{"user":{"id":"u_81723","tier":"gold"},"expires_in":3600}'),
    ("POST", "/api/events", 204, ""),
    ("GET", "/api/recommendations?limit=8", 200, '{"items":[],"experiment":"recs-v4"}'),
    ("POST", "/api/checkout/quote", 422, '{"error":"invalid_postcode","field":"shipping.postcode"}'),
    ("GET", "/api/inventory/WH1000XM5", 503, '{"error":"upstream_unavailable"}'),
]
CONSOLE_LINES = [
    ("log", "[app] boot v2.14.3 (build 5d7c44) in 412ms"),
    ("info", "[router] navigated to {path}"),
    ("debug", "[store] hydrate cart: 1 item(s)"),
    ("warning", "[Deprecation] SharedArrayBuffer will require cross-origin isolation as of M92."),
    ("log", "[analytics] queued page_view {path}"),
    ("info", "Service worker registered with scope: /"),
    ("warning", 'Image with src "/img/hero.avif" has no width/height: layout shift risk'),
]
ERRORS = [
    (
        "TypeError: Cannot read properties of undefined (reading 'price')",
        "renderCartTotals",
        "checkout.91af0e.js",
    ),
    ("ReferenceError: dataLayer is not defined", "trackPageView", "app.5d7c44.js"),
    ("Error: Request failed with status code 503", "fetchInventory", "vendor.8e02b1.js"),
    ("Uncaught (in promise) AbortError: The user aborted a request.", "loadRecommendations", "app.5d7c44.js"),
]
CLICK_TARGETS = [
    ("button#add-to-cart", "BUTTON", "Add to cart"),
    ("a.nav-link[href='/cart']", "A", "Cart"),
    ("button[type=submit].checkout-continue", "BUTTON", "Continue to payment"),
    ("input#email", "INPUT", ""),
    ("div.cookie-banner button.accept", "BUTTON", "Accept all"),
]
KEYS = ["Tab", "Enter", "a", "Backspace", "ArrowDown", "Escape"]
OPERATIONS = ["computer.click_mouse", "computer.batch", "computer.move_mouse", "fs.read_file", "process.exec"]
PNG_1x1 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf000000030101009c6f1f5a0000000049454e44ae426082"
    )
).decode()


def _stack(rng: random.Random, origin: str, function: str, script_name: str) -> dict:
    url = f"{origin}/static/js/{script_name}"
    frames = [
        {
            "functionName": function,
            "scriptId": str(rng.randint(20, 400)),
            "url": url,
            "lineNumber": rng.randint(10, 2400),
            "columnNumber": rng.randint(1, 120),
        },
        {
            "functionName": rng.choice(["commitRoot", "invokeGuardedCallback", "dispatchEvent", ""]),
            "scriptId": str(rng.randint(20, 400)),
            "url": f"{origin}/static/js/vendor.8e02b1.js",
            "lineNumber": rng.randint(1000, 30000),
            "columnNumber": rng.randint(1, 80),
        },
    ]
    stack = {"callFrames": frames}
    if rng.random() < 0.5:
        stack["parent"] = {
            "description": rng.choice(["Promise.then", "setTimeout", "requestAnimationFrame"]),
            "callFrames": [
                {
                    "functionName": "scheduleUpdate",
                    "scriptId": str(rng.randint(20, 400)),
                    "url": f"{origin}/static/js/app.5d7c44.js",
                    "lineNumber": rng.randint(10, 900),
                    "columnNumber": rng.randint(1, 60),
                }
            ],
        }
    return stack


@dataclass(frozen=True)
class _Page:
    """What an event's generator draws from: its CDP context and the page it is about."""

    ctx: dict
    url: str
    origin: str
    path: str
    request_id: str  # drawn for every event, used or not, so the flow's draws stay the same


def _console_log(rng: random.Random, page: _Page) -> dict:
    level, text = rng.choice(CONSOLE_LINES)
    text = text.format(path=page.path)
    data = {**page.ctx, "level": level, "text": text, "args": [text]}
    if level == "warning":
        data["stack_trace"] = _stack(rng, page.origin, "warnOnce", "vendor.8e02b1.js")
    return data


def _console_error(rng: random.Random, page: _Page) -> dict:
    text, function, script_name = rng.choice(ERRORS)
    stack = _stack(rng, page.origin, function, script_name)
    data = {**page.ctx, "text": text, "stack_trace": stack}
    if text.startswith("Uncaught") or rng.random() < 0.5:
        top = stack["callFrames"][0]
        data.update(line=top["lineNumber"], column=top["columnNumber"], source_url=top["url"])
    else:
        data.update(level="error", args=[text])
    return data


def _network_request(rng: random.Random, page: _Page) -> dict:
    method, api_path, _, _ = rng.choice(API_CALLS)
    return {
        **page.ctx,
        "request_id": page.request_id,
        "method": method,
        "resource_type": "XHR",
        "initiator_type": "script",
        "document_url": page.url,
        "headers": {"accept": "application/json", "x-requested-with": "fetch"},
        "url": page.origin + api_path,
        "is_redirect": False,
    }


STATUS_TEXT = {200: "OK", 204: "No Content", 422: "Unprocessable Entity", 503: "Service Unavailable"}


def _network_response(rng: random.Random, page: _Page) -> dict:
    method, api_path, status, body = rng.choice(API_CALLS)
    return {
        **page.ctx,
        "request_id": page.request_id,
        "method": method,
        "status": status,
        "status_text": STATUS_TEXT[status],
        "mime_type": "application/json",
        "resource_type": "XHR",
        "url": page.origin + api_path,
        "headers": {"content-type": "application/json", "cache-control": "no-store"},
        "body": body,
    }


def _network_loading_failed(rng: random.Random, page: _Page) -> dict:
    return {
        **page.ctx,
        "request_id": page.request_id,
        "resource_type": "Script",
        "url": "https://www.googletagmanager.com/gtm.js?id=GTM-K2X9",
        "error_text": rng.choice(
            ["net::ERR_BLOCKED_BY_CLIENT", "net::ERR_CONNECTION_RESET", "net::ERR_NAME_NOT_RESOLVED"]
        ),
        "canceled": False,
    }


def _proxy_error(rng: random.Random, page: _Page) -> dict:
    return {
        **page.ctx,
        "code": rng.choice(["upstream_timeout", "destination_blocked", "upstream_connect_failed"]),
        "request_id": page.request_id,
        "status": 502,
        "method": "GET",
        "resource_type": "Document",
    }


def _page_navigation(rng: random.Random, page: _Page) -> dict:
    return {
        k: page.ctx[k] for k in ("url", "frame_id", "loader_id", "session_id", "target_id", "target_type")
    }


def _page_timestamp(rng: random.Random, page: _Page) -> dict:
    return {**page.ctx, "cdp_timestamp": round(rng.uniform(10_000, 90_000), 3)}


def _page_tab_opened(rng: random.Random, page: _Page) -> dict:
    return {
        "target_id": _hex(rng),
        "target_type": "page",
        "opener_id": page.ctx["target_id"],
        "url": page.origin + "/help/returns",
        "title": "Returns & refunds",
    }


def _page_layout_shift(rng: random.Random, page: _Page) -> dict:
    return {
        **page.ctx,
        "duration": 0,
        "time": round(rng.uniform(200, 2500), 1),
        "source_frame_id": page.ctx["frame_id"],
        "layout_shift_details": {"value": round(rng.uniform(0.001, 0.3), 4), "had_recent_input": False},
    }


def _page_lcp(rng: random.Random, page: _Page) -> dict:
    return {
        **page.ctx,
        "time": round(rng.uniform(600, 4200), 1),
        "source_frame_id": page.ctx["frame_id"],
        "lcp_details": {
            "element_id": "hero",
            "load_time": round(rng.uniform(300, 3000), 1),
            "render_time": round(rng.uniform(600, 4200), 1),
            "size": rng.randint(20000, 400000),
            "url": page.origin + "/img/hero.avif",
            "node_id": rng.randint(10, 900),
        },
    }


def _interaction_click(rng: random.Random, page: _Page) -> dict:
    selector, tag, text = rng.choice(CLICK_TARGETS)
    return {
        **page.ctx,
        "x": rng.randint(40, 1800),
        "y": rng.randint(60, 1000),
        "selector": selector,
        "tag": tag,
        "text": text,
    }


def _interaction_key(rng: random.Random, page: _Page) -> dict:
    return {**page.ctx, "key": rng.choice(KEYS), "selector": "input#email", "tag": "INPUT"}


def _interaction_scroll_settled(rng: random.Random, page: _Page) -> dict:
    to_y = rng.randint(200, 4800)
    return {
        **page.ctx,
        "from_x": 0,
        "from_y": max(0, to_y - rng.randint(100, 1200)),
        "to_x": 0,
        "to_y": to_y,
        "target_selector": "html",
    }


def _api_call(rng: random.Random, page: _Page) -> dict:
    return {
        "operation_id": rng.choice(OPERATIONS),
        "request_id": "req_" + _hex(rng, 16).lower(),
        "status": rng.choice([200, 200, 200, 204, 400]),
        "duration_ms": rng.randint(3, 900),
    }


def _cdp_disconnect(rng: random.Random, page: _Page) -> dict:
    return {
        "duration_ms": rng.randint(1_000, 600_000),
        "message_count": rng.randint(50, 90_000),
        "reason": rng.choice(["client_close", "upstream_error", "context_cancelled"]),
    }


def _live_view_disconnect(rng: random.Random, page: _Page) -> dict:
    return {"session_id": "lv_" + _hex(rng, 12).lower(), "duration_ms": rng.randint(5_000, 900_000)}


def _captcha_solve_result(rng: random.Random, page: _Page) -> dict:
    status = rng.choice(["success", "success", "success", "failure", "timeout"])
    data = {
        "captcha_type": rng.choice(["hcaptcha", "recaptcha_v2", "turnstile"]),
        "status": status,
        "duration_ms": rng.randint(2_000, 40_000),
        "task_id": _hex(rng, 16).lower(),
        "website_host": page.origin.split("//")[-1],
        "website_path": page.path,
    }
    if status != "success":
        data["error_code"] = "ERROR_CAPTCHA_UNSOLVABLE" if status == "failure" else "ERROR_TIMEOUT"
    return data


def _system_oom_kill(rng: random.Random, page: _Page) -> dict:
    return {
        "pid": rng.randint(300, 9000),
        "process_name": "chrome",
        "rss_kb": rng.randint(3_000_000, 7_800_000),
        "trigger_pid": rng.randint(300, 9000),
        "trigger_process_name": "chrome",
        "constraint": "memcg",
        "mem_free_kb": rng.randint(20_000, 90_000),
        "mem_total_kb": 8_388_608,
        "top_tasks": [
            {"name": "chrome", "pid": rng.randint(300, 9000), "rss_kb": rng.randint(500_000, 3_000_000)}
            for _ in range(3)
        ],
    }


def _service_crashed(rng: random.Random, page: _Page) -> dict:
    return {
        "service_name": rng.choice(["chromium", "neko", "kernel-images-api"]),
        "phase": "running",
        "pid": rng.randint(300, 9000),
    }


def _context_only(rng: random.Random, page: _Page) -> dict:
    return dict(page.ctx)


def _fixed(data: dict) -> Callable[[random.Random, _Page], dict]:
    """A generator of the same ``data`` every time (a copy)."""
    return lambda rng, page: dict(data)


# Realistic ``data`` for each event type (notes §6.4 shapes): a type's generator draws from the flow's
# random numbers and the page; a type without one has no data.
SAMPLES: dict[str, Callable[[random.Random, _Page], dict]] = {
    "console_log": _console_log,
    "console_error": _console_error,
    "network_request": _network_request,
    "network_response": _network_response,
    "network_loading_failed": _network_loading_failed,
    "network_idle": _context_only,
    "proxy_error": _proxy_error,
    "page_navigation": _page_navigation,
    "page_dom_content_loaded": _page_timestamp,
    "page_load": _page_timestamp,
    "page_tab_opened": _page_tab_opened,
    "page_layout_shift": _page_layout_shift,
    "page_lcp": _page_lcp,
    "page_layout_settled": _context_only,
    "page_navigation_settled": _context_only,
    "interaction_click": _interaction_click,
    "interaction_key": _interaction_key,
    "interaction_scroll_settled": _interaction_scroll_settled,
    "monitor_screenshot": _fixed({"png": PNG_1x1}),
    "monitor_disconnected": _fixed({"reason": "chrome_restarted"}),
    "monitor_reconnected": lambda rng, page: {"reconnect_duration_ms": rng.randint(300, 4000)},
    "monitor_reconnect_failed": _fixed({"reason": "reconnect_exhausted"}),
    "monitor_init_failed": _fixed({"step": "attach_to_target"}),
    "api_call": _api_call,
    "cdp_connect": _fixed({}),
    "cdp_disconnect": _cdp_disconnect,
    "live_view_connect": lambda rng, page: {"session_id": "lv_" + _hex(rng, 12).lower()},
    "live_view_disconnect": _live_view_disconnect,
    "captcha_solve_result": _captcha_solve_result,
    "system_oom_kill": _system_oom_kill,
    "service_crashed": _service_crashed,
}


def sample(kind: str, rng: random.Random, ctx: dict) -> dict:
    """Realistic ``data`` for one event type (``SAMPLES``), given a CDP context."""
    url = ctx["url"]
    origin = re.match(r"^https?://[^/]+", url).group(0) if re.match(r"^https?://", url) else url
    page = _Page(
        ctx=ctx,
        url=url,
        origin=origin,
        path=url[len(origin) :] or "/",
        request_id=f"{rng.randint(1000, 99999)}.{rng.randint(1, 400)}",
    )
    generate = SAMPLES.get(kind)
    return generate(rng, page) if generate is not None else {}


def script(rng: random.Random, record: dict) -> Iterator[tuple[str, dict]]:
    """An endless, realistic flow of (type, data): page visits with their network, console and
    interaction traffic, control calls and connections, and now and then something going wrong."""
    headful = not record.get("headless")
    stealth = bool(record.get("stealth"))
    start = record.get("start_url")
    nav_seq = 0
    target = _hex(rng)
    yield "cdp_connect", {}
    if headful:
        yield "live_view_connect", sample("live_view_connect", rng, {"url": "", "target_id": target})
    while True:
        origin, paths = rng.choice(SITES)
        first_visit = bool(start) and nav_seq == 0
        urls = [start] if first_visit else [origin + p for p in paths[: rng.randint(2, len(paths))]]
        for url in urls:
            nav_seq += 1
            ctx = _context(rng, record, url, nav_seq, target)
            yield "api_call", {**sample("api_call", rng, ctx), "operation_id": "computer.batch"}
            yield "page_navigation", sample("page_navigation", rng, ctx)
            document = {
                **ctx,
                "request_id": ctx["loader_id"],
                "method": "GET",
                "resource_type": "Document",
                "initiator_type": "other",
                "document_url": url,
                "headers": {"accept": "text/html"},
                "is_redirect": False,
            }
            yield "network_request", document
            page = f"<!doctype html><html lang=en><head><title>{url}</title>" + "<div class=p></div>" * 600
            yield (
                "network_response",
                {
                    **ctx,
                    "request_id": ctx["loader_id"],
                    "method": "GET",
                    "status": 200,
                    "status_text": "OK",
                    "mime_type": "text/html",
                    "resource_type": "Document",
                    "headers": {"content-type": "text/html; charset=utf-8"},
                    "body": page[:8192],
                    "_truncated": len(page) > 8192,
                },
            )
            for name in rng.sample(SCRIPTS, 2):
                script_url = f"{origin}/static/js/{name}"
                rid = f"{rng.randint(1000, 99999)}.{rng.randint(1, 400)}"
                yield (
                    "network_request",
                    {
                        **ctx,
                        "request_id": rid,
                        "method": "GET",
                        "resource_type": "Script",
                        "initiator_type": "parser",
                        "document_url": url,
                        "url": script_url,
                        "headers": {"accept": "*/*"},
                        "is_redirect": False,
                    },
                )
                yield (
                    "network_response",
                    {
                        **ctx,
                        "request_id": rid,
                        "method": "GET",
                        "status": 200,
                        "status_text": "OK",
                        "mime_type": "application/javascript",
                        "resource_type": "Script",
                        "url": script_url,
                        "headers": {"content-type": "application/javascript"},
                    },
                )
            yield "page_dom_content_loaded", sample("page_dom_content_loaded", rng, ctx)
            for _ in range(rng.randint(1, 3)):
                yield "console_log", sample("console_log", rng, ctx)
            request = sample("network_request", rng, ctx)
            yield "network_request", request
            response = sample("network_response", rng, ctx)
            yield "network_response", {**response, "request_id": request["request_id"]}
            if response["status"] >= 500 or rng.random() < 0.15:
                yield "console_error", sample("console_error", rng, ctx)
            if rng.random() < 0.3:
                yield "network_loading_failed", sample("network_loading_failed", rng, ctx)
            yield "page_load", sample("page_load", rng, ctx)
            yield "page_lcp", sample("page_lcp", rng, ctx)
            if rng.random() < 0.4:
                yield "page_layout_shift", sample("page_layout_shift", rng, ctx)
            yield "network_idle", sample("network_idle", rng, ctx)
            yield "page_layout_settled", sample("page_layout_settled", rng, ctx)
            yield "page_navigation_settled", sample("page_navigation_settled", rng, ctx)
            yield "monitor_screenshot", sample("monitor_screenshot", rng, ctx)
            yield "interaction_scroll_settled", sample("interaction_scroll_settled", rng, ctx)
            yield "api_call", {**sample("api_call", rng, ctx), "operation_id": "computer.click_mouse"}
            yield "interaction_click", sample("interaction_click", rng, ctx)
            if "login" in url or rng.random() < 0.3:
                for _ in range(rng.randint(2, 5)):
                    yield "interaction_key", sample("interaction_key", rng, ctx)
            if stealth and ("login" in url or "checkout" in url) and rng.random() < 0.5:
                yield "captcha_solve_result", sample("captcha_solve_result", rng, ctx)
            if rng.random() < 0.08:
                yield "page_tab_opened", sample("page_tab_opened", rng, ctx)
            if rng.random() < 0.05:
                yield "proxy_error", sample("proxy_error", rng, ctx)
            roll = rng.random()
            if roll < 0.01:
                yield "system_oom_kill", sample("system_oom_kill", rng, ctx)
                yield "service_crashed", {**sample("service_crashed", rng, ctx), "service_name": "chromium"}
                yield "monitor_disconnected", sample("monitor_disconnected", rng, ctx)
                yield "monitor_reconnected", sample("monitor_reconnected", rng, ctx)
            elif roll < 0.04:
                yield "cdp_disconnect", sample("cdp_disconnect", rng, ctx)
                yield "cdp_connect", {}
            elif headful and roll < 0.07:
                yield "live_view_disconnect", sample("live_view_disconnect", rng, ctx)
                yield "live_view_connect", sample("live_view_connect", rng, ctx)


routes = [
    Route("/browsers/{id}/telemetry/events", list_events, methods=["GET"]),
    Route("/browsers/{id}/telemetry/stream", stream_events, methods=["GET"]),
    Route("/_sandbox/telemetry/emit", control_emit, methods=["POST"]),
    Route("/_sandbox/telemetry/burst", control_burst, methods=["POST"]),
]


def seed(tenant: Tenant) -> None:
    """Telemetry history is generated lazily for the sessions ``browsers.seed`` backdated."""
