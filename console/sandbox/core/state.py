"""In-memory state of the sandbox: tenants (one per API key), their clock, faults and collections.

Everything runs on one asyncio event loop, and no handler awaits between reading and writing state, so
mutations are atomic without locks. Time-based behaviour is computed from ``tenant.now()`` when state is
read, which makes the control interface's clock moves deterministic.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import secrets
import string
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import regex

from console.sandbox.core.hooks import Hook

log = logging.getLogger("console.sandbox")

_ALPHABET = string.ascii_lowercase + string.digits


def new_id(prefix: str = "", length: int = 20) -> str:
    """Ids look like the service's: short lowercase alphanumerics (a prefix helps humans read them)."""
    body = "".join(secrets.choice(_ALPHABET) for _ in range(length))
    return f"{prefix}_{body}" if prefix else body


def key_digest(api_key: str) -> str:
    """How the sandbox knows an API key: its SHA-256, never the key itself (keys are random and long, so
    a plain hash is enough). A tenant's own key and the keys it created are found by it."""
    return hashlib.sha256(api_key.encode()).hexdigest()


def rfc3339(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value: str) -> datetime:
    """RFC 3339, with a trailing Z accepted."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError("timestamp needs a time zone")
    return moment


# How long one fault's path pattern may take on one request path (seconds). The pattern is the tenant's
# own, matched on the event loop every tenant shares: ``regex`` stops a search past this, where Python's
# ``re`` has no limit at all (``(?:a|a)*$`` on a path of thirty a's and a "!" ran for a minute).
MATCH_TIMEOUT = 0.02
# How long all of a tenant's patterns together may take on one request path: a hundred faults each just
# under MATCH_TIMEOUT would otherwise cost two seconds a request.
MATCH_BUDGET = 0.05

# How far a tenant's clock may be from the real one, either way: every time the sandbox computes from it
# (expiries, pool fills, invocation steps, telemetry windows) stays far inside ``datetime``'s years 1..9999.
MAX_CLOCK_OFFSET = timedelta(days=365 * 100)


@dataclass
class Fault:
    """One injected failure, applied to the next ``count`` matching requests (None = until cleared).

    ``control.add_fault`` validates every field and bounds them; ``path`` is compiled by ``regex``."""

    method: str
    path: regex.Pattern
    status: int | None = None
    code: str | None = None
    message: str | None = None
    body: str | None = None
    retry_after: float | None = None
    latency_ms: int = 0
    drop_after_events: int | None = None
    fields: dict | None = None  # merged into a JSON object answer (into each of its ``items`` for a list)
    stall_seconds: float = 0  # a stream sends nothing at all (no keepalives either) for this long...
    stall_after_chunks: int = 1  # ...after this many chunks (1: right after ": connected")
    # Both act after the handler ran, so the change is made but the client never hears about it.
    delay_response_ms: int = 0  # hold the answer this long (past the client's read timeout)
    drop_response: bool = False  # start a 200 and cut the connection mid-body
    count: int | None = 1

    def matches(self, method: str, path: str, timeout: float = MATCH_TIMEOUT) -> bool:
        """Whether this fault applies; raises ``TimeoutError`` when the pattern takes longer than
        ``timeout`` seconds on ``path``."""
        return (self.method in ("*", method)) and bool(self.path.search(path, timeout=timeout))


class Topic:
    """A fan-out of items to every current subscriber (streams wait on these instead of polling)."""

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue] = set()

    def publish(self, item) -> None:
        for queue in list(self._queues):
            queue.put_nowait(item)

    def subscribe(self) -> asyncio.Queue:
        queue: asyncio.Queue = asyncio.Queue()
        self._queues.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue) -> None:
        self._queues.discard(queue)

    @property
    def subscribers(self) -> int:
        return len(self._queues)


@dataclass
class Tenant:
    key_sha256: str  # ``key_digest`` of its own API key: the key itself is kept nowhere (memory or file)
    id: str = field(default_factory=lambda: new_id("org"))
    clock_offset: timedelta = timedelta(0)
    keepalive_seconds: float = 15.0
    faults: list[Fault] = field(default_factory=list)
    requests: deque = field(default_factory=lambda: deque(maxlen=500))
    tables: dict[str, dict[str, dict]] = field(default_factory=dict)
    topics: dict[str, Topic] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    default_project_id: str = ""
    # Open event streams by path: how tests and benchmarks see upstream connections come and go.
    open_streams: dict[str, int] = field(default_factory=dict)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.clock_offset

    def set_clock(self, moment: datetime) -> None:
        """Raises ``ValueError`` for a moment further than ``MAX_CLOCK_OFFSET`` from the real clock."""
        self._move_clock(moment - datetime.now(UTC))

    def advance(self, seconds: float) -> None:
        """Raises ``ValueError`` for a step that is not a finite number or that would take the clock further
        than ``MAX_CLOCK_OFFSET`` from the real one (it stays where it was)."""
        if not math.isfinite(seconds) or abs(seconds) > 2 * MAX_CLOCK_OFFSET.total_seconds():
            raise ValueError("the step is not a finite number of seconds within the clock's range")
        self._move_clock(self.clock_offset + timedelta(seconds=seconds))

    def _move_clock(self, offset: timedelta) -> None:
        if abs(offset) > MAX_CLOCK_OFFSET:
            raise ValueError("the clock may be at most 100 years from the real time")
        self.clock_offset = offset

    def table(self, name: str) -> dict[str, dict]:
        """A collection of records (id → dict). Records carry their project in ``_project``."""
        return self.tables.setdefault(name, {})

    def topic(self, name: str) -> Topic:
        return self.topics.setdefault(name, Topic())

    def take_fault(self, method: str, path: str) -> Fault | None:
        """The first fault matching the request (its count taken), else None.

        Matching takes at most ``MATCH_BUDGET`` in all: a fault whose pattern takes ``MATCH_TIMEOUT`` on
        the path is dropped (it would again), and once the budget is spent the rest do not match."""
        deadline = time.monotonic() + MATCH_BUDGET
        for fault in list(self.faults):
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning(
                    "a tenant's fault patterns took over %s s on one path: the rest skipped", MATCH_BUDGET
                )
                return None
            try:
                matched = fault.matches(method, path, timeout=min(MATCH_TIMEOUT, left))
            except TimeoutError:
                if left >= MATCH_TIMEOUT:
                    self.faults.remove(fault)
                    log.warning("a fault's path pattern took over %s s and was dropped", MATCH_TIMEOUT)
                continue
            if matched:
                if fault.count is not None:
                    fault.count -= 1
                    if fault.count <= 0:
                        self.faults.remove(fault)
                return fault
        return None

    def active_records(self, project_id: str) -> list[tuple[str, dict]]:
        """Every live record of a project, across all collections (a project deletes only when empty)."""
        found = []
        for name, table in self.tables.items():
            if name == "projects":
                continue
            for record in table.values():
                if record.get("_project") == project_id and not record.get("_deleted"):
                    found.append((name, record))
        return found


def new_api_key() -> str:
    return "sk_" + new_id(length=32)


DEMO = "_demo"  # tenant.settings: created with demo data

# Handed in by ``app.assemble``: what a new tenant starts with (its default project, and the demo data
# when asked), which the resources make.
tenant_setup = Hook("state.tenant_setup(tenant, demo)")


class Registry:
    """All tenants of this sandbox process, by the digest (``key_digest``) of every API key that opens
    one: its own and those it created."""

    def __init__(self) -> None:
        self.tenants: dict[str, Tenant] = {}

    def create(self, api_key: str | None = None, *, demo: bool = False) -> Tenant:
        """A new tenant opened by ``api_key`` (the caller tells it to its user: it is not kept)."""
        tenant = Tenant(key_sha256=key_digest(api_key or new_api_key()))
        tenant_setup(tenant, demo)
        if demo:
            # Kept with the state, so the bound on demo tenants (control.create_tenant) survives a restart;
            # no tenant can set it (``POST /_sandbox/settings`` takes its known settings only).
            tenant.settings[DEMO] = True
        self.tenants[tenant.key_sha256] = tenant
        return tenant

    def get(self, api_key: str) -> Tenant | None:
        return self.tenants.get(key_digest(api_key))

    def demos(self) -> int:
        """How many tenants were created with demo data (each holds megabytes of it)."""
        return sum(1 for tenant in self.own() if tenant.settings.get(DEMO))

    def own(self) -> list[Tenant]:
        """Every tenant once (one is also listed under each key it created)."""
        return [tenant for digest, tenant in list(self.tenants.items()) if digest == tenant.key_sha256]


registry = Registry()
