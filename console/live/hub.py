"""The live relay's hub: one upstream stream per channel per process, fanned out to every viewer.

A ``Channel`` says how to open its upstream stream and how to render one upstream event to HTML. The hub
keeps one ``Broadcast`` per channel key: it runs the upstream reader while anyone watches, renders each
event once, encodes it once as an SSE frame, and appends those bytes to one shared ``FrameLog``. The source
hands over every event one network read brought as one batch: the batch's frames are joined once into one
entry of the log, and every viewer is woken once for it (in a burst, once for several reads' frames: while
more waits upstream they are held, up to ``HOLD_BYTES``, and published when a read finds nothing more).
Each viewer only holds its position in that log: publishing costs the same for 1 or 2000 viewers, and a
viewer writes everything it has not sent yet as one chunk (the very entry the others write, when it keeps
up; at most ``CHUNK_BYTES`` at once when it is far behind), so a burst costs one socket write per viewer
per publication, not one per event.

Ids: a frame carries the upstream's id when it has one (telemetry ``seq``), else the hub numbers frames
itself. Browsers reconnect with ``Last-Event-ID`` and get what they missed from a bounded replay buffer
(of frames, one by one); the upstream is resumed with ``Last-Event-ID`` after a drop (resumable channels).
The log keeps a bounded number of frames and bytes (``max_pending``, ``max_pending_bytes``): a viewer that
falls further behind is told it lagged and resynchronises instead of stalling the others or holding memory.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import html
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from console.service import errors
from console.web.text import visible

log = logging.getLogger("console.live")

# Yielded by an upstream source once its connection is open (before any event), so panes can say "live".
OPENED = object()

# Set by a broadcast for its upstream task. A source calls it whenever bytes arrive from the upstream,
# keepalive comments included (they never become events), so the hub can tell a quiet upstream (comments
# every 15 s) from a frozen one (nothing at all). Events and OPENED count too, for sources that don't call it.
upstream_heard: ContextVar[Callable[[], None]] = ContextVar("upstream_heard", default=lambda: None)

# The relay's keepalive events: the upstream is heard, or went silent without the service answering either.
KEEPALIVE_LIVE = b"event: keepalive\ndata: live\n\n"
KEEPALIVE_STALLED = b"event: keepalive\ndata: stalled\n\n"

STATUS_LABELS = {
    "connecting": "Connecting…",
    "live": "Live",
    "reconnecting": "Reconnecting…",
    "ended": "Ended",
    "error": "Error",
    "lagged": "Fell behind: some events were skipped (reload to see them all)",
}


@dataclass
class Frame:
    """One thing to push to viewers: HTML for ``sse-swap="<event>"``, with an id when it has one."""

    html: str
    event: str = "message"
    id: int | str | None = None


class Batch:
    """Events a source hands over together (every event one network read brought), iterated once by the hub,
    and whether more was already waiting upstream then (``more``: a burst; the hub may hold their frames for
    the next batches', ``Broadcast._publish``). A list of events is a batch too, with nothing waiting."""

    def __init__(self, events: Iterable[Any] = (), *, more: bool = False) -> None:
        self.events, self.more = events, more

    def __iter__(self) -> Iterator[Any]:
        return iter(self.events)


@dataclass
class Channel:
    key: Hashable
    # ``open(last_event_id)`` yields OPENED once connected, then events, or batches of them (a ``Batch`` or a
    # list: every event one read brought, as console.live.sources.ServiceStream yields them).
    open: Callable[[str | None], AsyncIterator[Any]]
    render: Callable[[Any], Frame | list[Frame] | None]
    resumable: bool = False
    is_terminal: Callable[[Any], bool] | None = None
    should_reconnect: Callable[[], Awaitable[bool]] | None = None
    replay_to_new_viewers: bool = False
    ended_message: str = "The stream has ended."
    max_reconnects: int = 8
    # ``probe(since, timeout)``: whether the service answered after ``since`` (event-loop time), asked
    # within ``timeout`` s. Defaults to the source's own (console.live.sources.ServiceStream has one).
    probe: Callable[[float, float], Awaitable[bool]] | None = None

    def __post_init__(self):
        if self.probe is None:
            self.probe = getattr(self.open, "probe", None)


def encode(frame: Frame, seq: int | str | None) -> bytes:
    """One SSE frame. Like every rendered template, its HTML shows control and bidi characters as symbols
    (console.web.text): frames built in Python (telemetry rows, status messages) get the same treatment."""
    head = f"event: {frame.event}\n" if frame.event and frame.event != "message" else ""
    if seq is not None:
        head += f"id: {seq}\n"
    text = frame.html
    if text.isascii():
        data = text.encode()
        if len(data.translate(None, ASCII_CONTROLS)) == len(data):
            # Printable ASCII (a row, mostly): nothing to show as a symbol, no line break. (Told by deleting
            # the control characters from its bytes: three times cheaper than str.isprintable.)
            return b"".join((head.encode(), b"data: ", data, b"\n\n"))
    text = visible(text)
    if not (text.isascii() and "\n" not in text and "\r" not in text):  # (else one line, as a row is)
        text = "\ndata: ".join(text.splitlines() or [""])
    return f"{head}data: {text}\n\n".encode()


ASCII_CONTROLS = bytes(range(0x20)) + b"\x7f"  # line breaks included


def status_frame(state: str, message: str = "") -> bytes:
    label = STATUS_LABELS.get(state, state)
    title = f' title="{html.escape(message)}"' if message else ""
    chip = (
        f'<span class="live-status live-status--{state}" data-state="{state}"{title}>'
        f"{html.escape(label)}</span>"
    )
    if message and state in ("error", "ended"):
        chip += f' <span class="live-status__message">{html.escape(message)}</span>'
    return encode(Frame(html=chip, event="status"), None)


END = object()
# Events the upstream reader handles before giving viewers a turn to write.
YIELD_EVERY = 256
# The most a viewer writes at once, as one ASGI message (console.asgi sends a message of this size whole):
# a burst is a few writes per viewer; a viewer far behind catches up in several, not one copy of its backlog.
CHUNK_BYTES = 512 * 1024
# While more is already waiting upstream (a burst, read faster than one network read at a time), the frames
# of several reads are held and published together, up to this many bytes, rather than read by read (some
# 230 events of 64 KiB): every publication costs every viewer a write through Django, uvicorn and h11. Never
# held longer than HOLD_SECONDS, and published at once by a read that finds nothing more waiting: a stream at
# a steady rate is never held.
HOLD_BYTES = CHUNK_BYTES
HOLD_SECONDS = 0.05


class FrameLog:
    """Encoded frames of one broadcast, appended once and read by every viewer from its own position.

    Frames come in batches (every event one upstream read brought), and each batch is joined once into one
    entry: a viewer that keeps up writes that very entry, as every other viewer does, not a copy of its own.
    Positions count entries; the bounds count frames and bytes."""

    def __init__(self, cap: int, max_bytes: int | None = None):
        self.entries: list[bytes] = []
        self.base = 0  # the absolute position of entries[0]
        # Where each entry starts, in frames and in bytes ever appended (for the bounds, and to read by size).
        self.firsts: list[int] = []
        self.starts: list[int] = []
        self.count = 0  # frames ever appended
        self.total = 0  # bytes ever appended
        self.cap = cap
        # Bytes as well as frames: a frame may be large (a 64 KiB chunk of output renders to some 360 KiB,
        # a service's event may be 16 MiB), and 10 000 of them were kept whatever their size.
        self.max_bytes = max_bytes
        self.changed = asyncio.Event()

    @property
    def end(self) -> int:
        return self.base + len(self.entries)

    @property
    def frames(self) -> int:
        """Frames kept."""
        return self.count - self.firsts[0] if self.entries else 0

    @property
    def size(self) -> int:
        """Bytes kept."""
        return self.total - self.starts[0] if self.entries else 0

    def frame_at(self, pos: int) -> int:
        """The number of the first frame at absolute position ``pos`` (the next one appended at the end)."""
        return self.firsts[pos - self.base] if pos < self.end else self.count

    def append(self, chunk: bytes) -> None:
        self.extend([chunk])

    def extend(self, chunks: list[bytes]) -> None:
        """Add a batch of frames (joined once; every viewer is woken once for all of them)."""
        if not chunks:
            return
        # A batch larger than the bound (a loaded console reads a burst at once) is kept as entries of at most
        # ``cap`` frames, so trimming can still keep the bound (the last entry is always kept whole).
        for at in range(0, len(chunks), self.cap):
            self._add(chunks[at : at + self.cap])
        self.wake()

    def wake(self) -> None:
        """Wake every viewer waiting for frames (later waits need a fresh, unset event)."""
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    def _add(self, chunks: list[bytes]) -> None:
        entry = b"".join(chunks)  # (one frame: that frame itself)
        self.entries.append(entry)
        self.firsts.append(self.count)
        self.starts.append(self.total)
        self.count += len(chunks)
        self.total += len(entry)
        too_big = self.max_bytes is not None and self.size > 2 * self.max_bytes
        if self.frames > 2 * self.cap or too_big:
            # Trimmed in steps, not per entry, to the newest ``cap`` frames and ``max_bytes`` (the last entry
            # always); whoever is further behind than this has lagged.
            drop = bisect.bisect_left(self.firsts, self.count - self.cap)
            if self.max_bytes is not None:
                drop = max(drop, bisect.bisect_left(self.starts, self.total - self.max_bytes))
            drop = min(drop, len(self.entries) - 1)
            del self.entries[:drop]
            del self.firsts[:drop]
            del self.starts[:drop]
            self.base += drop

    def after(self, pos: int, limit: int) -> list[bytes]:
        """The entries from absolute position ``pos`` on, at most ``limit`` bytes of them (at least one)."""
        first = pos - self.base
        if self.total - self.starts[first] <= limit:
            return self.entries[first:]
        last = bisect.bisect_right(self.starts, self.starts[first] + limit, first + 1) - 1
        return self.entries[first : max(last, first + 1)]


class Viewer:
    """One browser connection: its position in the broadcast's log, plus frames meant for it alone."""

    def __init__(self, broadcast: Broadcast):
        self.broadcast = broadcast
        self.pos = broadcast.log.end
        self.frame = broadcast.log.count  # the number of the next frame of the log it will send
        self.private: list[bytes] = []  # replayed frames and the current status, sent before the log
        self.lagged = 0  # frames it missed, being too slow

    def push(self, chunk: bytes) -> None:
        self.private.append(chunk)

    async def next_chunk(self, keepalive: float) -> bytes | object | None:
        """What it has not sent yet, as one chunk (of at most about ``CHUNK_BYTES``: a viewer far behind
        catches up in several), None after ``keepalive`` seconds of silence, END when over."""
        log = self.broadcast.log
        if not self.private and self.pos >= log.end and not self.broadcast.ended:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation that races
            # with a wake-up, and a departed browser's stream would then never end.
            changed = log.changed
            try:
                async with asyncio.timeout(keepalive):
                    await changed.wait()
            except TimeoutError:
                return None
        parts, self.private = self.private, []
        if self.pos < log.base:
            # Too slow: the frames it missed are gone. Say so; the pane resynchronises.
            self.lagged += log.frame_at(log.base) - self.frame
            parts += [status_frame("lagged"), encode(Frame(html="", event="resync"), None)]
            self.pos = log.base
        if self.pos < log.end:
            entries = log.after(self.pos, CHUNK_BYTES)
            parts.extend(entries)
            self.pos += len(entries)
        self.frame = log.frame_at(self.pos)
        if parts:
            return b"".join(parts)  # (a single entry: that entry itself, shared with the other viewers)
        return END if self.broadcast.ended else None

    @property
    def done(self) -> bool:
        return self.broadcast.ended and not self.private and self.pos >= self.broadcast.log.end


@dataclass
class Broadcast:
    hub: Hub
    channel: Channel
    buffer: deque = field(default_factory=deque)
    viewers: set[Viewer] = field(default_factory=set)
    next_seq: int = 1
    last_upstream_id: str | None = None
    status: bytes = field(default_factory=lambda: status_frame("connecting"))
    state: str = "connecting"
    heard_at: float = 0.0  # event-loop time of the last bytes from the upstream
    upstream_stalled: bool = False  # said "stalled" (the watcher): until the upstream is heard again
    ended: bool = False
    task: asyncio.Task | None = None
    linger: asyncio.TimerHandle | None = None
    log: FrameLog = None  # type: ignore[assignment]
    # Frames rendered but not yet published (a burst: HOLD_BYTES), with their seq, and what publishes them.
    held: list[tuple[int | str, bytes]] = field(default_factory=list)
    held_bytes: int = 0
    hold_timer: asyncio.TimerHandle | None = None

    def __post_init__(self):
        self.buffer = deque(maxlen=self.hub.buffer_size)
        self.buffer_size = 0  # bytes of the frames in ``buffer``
        self.log = FrameLog(self.hub.max_pending, self.hub.max_pending_bytes)

    # Viewers ---------------------------------------------------------------------------------------

    def add(self, last_event_id: str | None) -> Viewer:
        viewer = Viewer(self)
        self._replay(viewer, last_event_id)
        viewer.push(self.status)
        self.viewers.add(viewer)
        if self.linger is not None:
            self.linger.cancel()
            self.linger = None
        if not self.ended and (self.task is None or self.task.done()):
            # (Re)opening the upstream: a reconnecting browser resumes from what it saw; a fresh viewer starts
            # from now (what happened while nobody watched is history, not a burst of live events).
            if last_event_id is None:
                self.buffer.clear()
                self.buffer_size = 0
            self.last_upstream_id = last_event_id if self.channel.resumable else None
            self.task = asyncio.get_running_loop().create_task(self._run())
            log.info("live %s: first viewer, opening the upstream", self.channel.key[0])
        return viewer

    def _replay(self, viewer: Viewer, last_event_id: str | None) -> None:
        if last_event_id is None:
            if self.channel.replay_to_new_viewers:
                for _, chunk in self.buffer:
                    viewer.push(chunk)
            return
        try:
            last = int(last_event_id)
        except ValueError:
            return
        for seq, chunk in self.buffer:
            if _as_int(seq) is not None and _as_int(seq) > last:
                viewer.push(chunk)

    def remove(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)
        log.debug("live %s: a viewer left, %d remain", self.channel.key[0], len(self.viewers))
        if self.viewers:
            return
        # The last viewer left: close the upstream now, keep the buffer a while for reconnecting browsers.
        if self.task is not None and not self.task.done():
            log.info("live %s: last viewer left, closing the upstream", self.channel.key[0])
            self.task.cancel()
        self.linger = asyncio.get_running_loop().call_later(self.hub.linger_seconds, self._forget)

    def _forget(self) -> None:
        if not self.viewers and self.hub.broadcasts.get(self.channel.key) is self:
            del self.hub.broadcasts[self.channel.key]

    # Fan-out ---------------------------------------------------------------------------------------

    def _keep(self, chunk: bytes, seq) -> None:
        """Keep a numbered frame in the replay buffer for browsers that reconnect."""
        if len(self.buffer) == self.buffer.maxlen:
            self.buffer_size -= len(self.buffer[0][1])
        self.buffer.append((seq, chunk))
        self.buffer_size += len(chunk)
        # The newest frames within ``hub.buffer_bytes`` (the last one always).
        while self.buffer_size > self.hub.buffer_bytes and len(self.buffer) > 1:
            self.buffer_size -= len(self.buffer.popleft()[1])

    def _publish(self, frames: list[tuple[int | str, bytes]], hold: bool = False) -> None:
        """Put rendered frames in the log (and the replay buffer) for every viewer, or hold them (``hold``:
        more is already waiting upstream) until HOLD_BYTES are held, a read finds nothing more waiting, or
        HOLD_SECONDS have passed. Held frames are nowhere a viewer reads yet, so one that joins meanwhile gets
        each of them once, after what it was replayed."""
        self.held += frames
        self.held_bytes += sum(len(chunk) for _, chunk in frames)
        if hold and self.held_bytes < HOLD_BYTES:
            if self.held and self.hold_timer is None:
                self.hold_timer = asyncio.get_running_loop().call_later(HOLD_SECONDS, self._flush)
            return
        self._flush()

    def _flush(self) -> None:
        """Publish what is held: one entry of the log (a single write for a viewer keeping up)."""
        if self.hold_timer is not None:
            self.hold_timer.cancel()
            self.hold_timer = None
        if not self.held:
            return
        held, self.held, self.held_bytes = self.held, [], 0
        for seq, chunk in held:
            self._keep(chunk, seq)
        self.log.extend([chunk for _, chunk in held])

    def _append(self, chunk: bytes) -> None:
        """One frame for every viewer at once (a status, a keepalive), after everything rendered before it."""
        self._flush()
        self.log.append(chunk)

    def _set_status(self, state: str, message: str = "") -> None:
        self.state = state
        self.status = status_frame(state, message)
        self._append(self.status)

    def _end(self, state: str = "ended", message: str = "") -> None:
        self._set_status(state, message or self.channel.ended_message)
        self._append(
            encode(Frame(html=html.escape(message or self.channel.ended_message), event="ended"), None)
        )
        self.ended = True
        self.log.wake()  # wake viewers waiting for more: there is no more

    def _deliver(self, batch: Iterable[Any], hold: bool = False) -> tuple[int, bool]:
        """Render a batch of upstream events into the log, each once whoever watches, and wake every viewer
        once for the whole batch (or for it and the next ones: ``hold``, a burst, ``_publish``): how many
        were new (not seen before a reconnect), and whether the last was the stream's end."""
        out: list[tuple[int | str, bytes]] = []
        fresh = 0
        try:
            for event in batch:
                upstream_id = getattr(event, "id", None)
                if (
                    self.channel.resumable
                    and upstream_id is not None
                    and _seen(upstream_id, self.last_upstream_id)
                ):
                    continue
                if upstream_id is not None:
                    self.last_upstream_id = upstream_id
                fresh += 1
                self._render(event, out)
                if self.channel.is_terminal is not None and self.channel.is_terminal(event):
                    return fresh, True
            return fresh, False
        finally:
            self._publish(out, hold)  # what was rendered, even when a later event's rendering failed

    def _render(self, event: Any, out: list[tuple[int | str, bytes]]) -> None:
        rendered = self.channel.render(event)
        if rendered is None:
            return
        for frame in rendered if isinstance(rendered, list) else [rendered]:
            seq = frame.id
            if seq is None:
                seq = self.next_seq
                self.next_seq += 1
            out.append((seq, encode(frame, seq)))

    # Upstream --------------------------------------------------------------------------------------

    def _heard(self) -> None:
        self.heard_at = asyncio.get_running_loop().time()
        if self.upstream_stalled:
            self.upstream_stalled = False
            self._append(KEEPALIVE_LIVE)  # back: viewers are told at once, not at their next keepalive

    def stalled(self) -> bool:
        """Connected, but the upstream went silent and the service did not answer a probe either, or
        nothing at all came from it for ``hub.stall_after`` seconds (twice its own keepalive)."""
        if self.state != "live" or self.ended or self.task is None or self.task.done():
            return False
        return (
            self.upstream_stalled or asyncio.get_running_loop().time() - self.heard_at > self.hub.stall_after
        )

    def _stall(self) -> None:
        if not self.upstream_stalled:
            self.upstream_stalled = True
            self._append(KEEPALIVE_STALLED)  # viewers are told at once

    async def _watch(self) -> None:
        """While the upstream is open: after ``hub.probe_after`` s without a byte from it, is it a quiet
        stream (the service sends a keepalive comment only every 15 s) or a frozen service? The service
        is probed (``channel.probe``: one cheap request, shared by every channel of that service); no
        answer within ``hub.probe_timeout`` s and still nothing from the upstream: "stalled", at once.
        Without a probe, or with a probe answered while the stream stays silent for ``hub.stall_after``
        s, the stream itself is frozen: "stalled" then."""
        loop = asyncio.get_running_loop()
        answered_at = float("-inf")
        probe = self.channel.probe
        while True:
            quiet_since = max(self.heard_at, answered_at)
            due = min(quiet_since + self.hub.probe_after, self.heard_at + self.hub.stall_after)
            if probe is None:
                due = self.heard_at + self.hub.stall_after
            if loop.time() < due or self.state != "live" or self.upstream_stalled:
                await asyncio.sleep(max(due - loop.time(), 0.0) or self.hub.probe_after)
                continue
            if loop.time() - self.heard_at > self.hub.stall_after:
                self._stall()
                continue
            asked = loop.time()
            # An answer counts if it came after the stream's last byte and is recent (another channel's
            # probe of the same service a moment ago will do; one from a minute ago will not).
            since = max(self.heard_at, asked - self.hub.probe_timeout)
            answered = await probe(since, self.hub.probe_timeout)
            if self.heard_at >= asked or self.state != "live":
                continue  # the upstream spoke meanwhile
            if answered:
                answered_at = loop.time()
            else:
                self._stall()

    async def _run(self) -> None:
        channel = self.channel
        upstream_heard.set(self._heard)  # this task's context only
        failures = 0
        delivered = 0
        first = True
        watcher = asyncio.get_running_loop().create_task(self._watch())
        try:
            while True:
                self._set_status("connecting" if first else "reconnecting")
                first = False
                dropped = False
                try:
                    last = self.last_upstream_id if channel.resumable else None
                    async for item in channel.open(last):
                        self._heard()
                        if item is OPENED:
                            self.upstream_stalled = False
                            self._set_status("live")
                            continue
                        # A source yields an event, or a batch of them (all that one read brought, and
                        # whether more was already waiting: console.service.http.Read).
                        if isinstance(item, Batch | list):
                            fresh, terminal = self._deliver(item, hold=getattr(item, "more", False))
                        else:
                            fresh, terminal = self._deliver([item])
                        if fresh:
                            failures = 0
                        if terminal:
                            self._end()
                            return
                        delivered += fresh
                        if delivered >= YIELD_EVERY:
                            # A burst arrives in large reads: let viewers write out what they have meanwhile.
                            delivered = 0
                            await asyncio.sleep(0)
                except errors.StreamDropped as exc:
                    dropped = True
                    log.info("upstream %s dropped: %s", channel.key, exc.message)
                except errors.Unavailable as exc:
                    dropped = True
                    log.info("upstream %s unavailable: %s", channel.key, exc.message)
                except errors.ServiceError as exc:
                    self._end("error", exc.message)
                    return
                # A clean close means the resource ended, unless the channel knows better.
                if not dropped and (channel.should_reconnect is None or not await channel.should_reconnect()):
                    self._end()
                    return
                failures += 1
                if failures > channel.max_reconnects:
                    self._end("error", "lost the connection to the service and could not get it back")
                    return
                self._set_status("reconnecting")
                await asyncio.sleep(min(0.2 * 2 ** (failures - 1), 3.0))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in a renderer must not leave viewers hanging forever
            log.exception("live channel %s failed", channel.key)
            self._end("error", f"the live stream failed ({type(exc).__name__})")
        finally:
            watcher.cancel()
            self._flush()  # (the upstream resumes after them: reconnecting browsers find them in the buffer)


def _as_int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _seen(upstream_id: str, last: str | None) -> bool:
    if last is None:
        return False
    try:
        return int(upstream_id) <= int(last)
    except (TypeError, ValueError):
        return False


class Hub:
    """Every live broadcast of this process, by channel key."""

    def __init__(
        self,
        *,
        buffer_size: int = 2000,
        max_pending: int = 5000,
        buffer_bytes: int = 16 * 1024 * 1024,
        max_pending_bytes: int = 64 * 1024 * 1024,
        linger_seconds: float = 30.0,
        stall_after: float = 30.0,
        probe_after: float = 5.0,
        probe_timeout: float = 2.5,
    ):
        self.broadcasts: dict[Hashable, Broadcast] = {}
        self.buffer_size = buffer_size
        self.max_pending = max_pending
        self.buffer_bytes = buffer_bytes
        self.max_pending_bytes = max_pending_bytes
        self.linger_seconds = linger_seconds
        # Twice the upstream's keepalive interval without a byte: the upstream is stalled.
        self.stall_after = stall_after
        # This long without a byte: probe the service; no answer within probe_timeout: stalled (the sum is
        # within two of the relay's keepalive intervals by default: 5 + 2.5 s of 10).
        self.probe_after = probe_after
        self.probe_timeout = probe_timeout

    def subscribe(self, channel: Channel, last_event_id: str | None = None) -> tuple[Broadcast, Viewer]:
        broadcast = self.broadcasts.get(channel.key)
        if broadcast is not None and broadcast.ended and last_event_id is None and not broadcast.viewers:
            # The stream ended (a flow finished, an invocation completed) and a page opened afresh, not a
            # browser reconnecting: the resource may have started again (a new login), so start over.
            broadcast = None
        if broadcast is None:
            broadcast = Broadcast(self, channel)
            self.broadcasts[channel.key] = broadcast
        else:
            # The newest view's callables (fresh service binding) replace the stored ones.
            broadcast.channel = channel
        return broadcast, broadcast.add(last_event_id)

    def upstreams(self) -> int:
        """Upstream connections currently held (a benchmark and test figure)."""
        return sum(1 for b in self.broadcasts.values() if b.task is not None and not b.task.done())

    def viewers(self) -> int:
        return sum(len(b.viewers) for b in self.broadcasts.values())


def keepalive_frame(broadcast: Broadcast) -> bytes:
    """A named keepalive (EventSource never shows comments to scripts): ``live``, or ``stalled`` when the
    upstream went silent and the service does not answer (``Broadcast.stalled``). Panes say "Stalled" on
    the latter, or when even these stop coming. A change either way is also sent at once (``_stall``,
    ``_heard``), not only at the viewer's next keepalive."""
    return KEEPALIVE_STALLED if broadcast.stalled() else KEEPALIVE_LIVE


async def viewer_stream(broadcast: Broadcast, viewer: Viewer, keepalive: float) -> AsyncIterator[bytes]:
    """The bytes one browser receives: a retry hint, queued frames in chunks, and a keepalive event after
    ``keepalive`` seconds of silence."""
    try:
        yield b"retry: 2000\n: connected\n\n"
        while True:
            chunk = await viewer.next_chunk(keepalive)
            if chunk is None:
                yield keepalive_frame(broadcast)
            elif chunk is END:
                return
            else:
                yield chunk
                if viewer.done:
                    return
    finally:
        with contextlib.suppress(RuntimeError):
            broadcast.remove(viewer)
