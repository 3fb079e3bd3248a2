"""A lean SSE reader for benchmarks: an asyncio protocol, chunks decoded in place, frames found in bytes.

The readers share the servers' two cores, so what they spend per byte is taken from whichever server sends
more bytes (the console's rows are some three times the service's events). httpx would spend more CPU per
event than the servers being measured, and so did a reader built on ``asyncio.StreamReader``: four copies of
every byte (the stream's buffer, ``readexactly``, the chunk without its CRLF, a window for the search) and
three searches through it (frame ids, keepalives). This one copies nothing but a few bytes at the edges of
a read and searches each byte once at most: for the id of the last frame a burst should bring
(``expect``), or, for the benches that need them, for frame ids and keepalives (``counting=True``).
"""

from __future__ import annotations

import asyncio
import re
import time
from urllib.parse import urlsplit

ID = re.compile(rb"\nid: (\d+)")
TOKEN = b"\nid: "
KEEPALIVE = b"event: keepalive"
EDGE = len(TOKEN) - 1  # bytes carried from one piece of the body to the next


class Reader:
    def __init__(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        track_ids: bool = False,
        counting: bool = False,
    ):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port
        self.target = parts.path + (f"?{parts.query}" if parts.query else "")
        self.headers = headers or {}
        self.track_ids = track_ids
        self.counting = counting or track_ids  # frames (``\nid: ``) and keepalives counted
        self.wanted = b""  # the id line of the frame that sets ``reached`` (``expect``)
        self.frames = 0
        self.keepalives = 0
        self.keepalive_times: list[float] = []
        self.arrivals: dict[int, float] = {}
        self.connected = asyncio.Event()
        self.done = asyncio.Event()
        self.reached = asyncio.Event()
        self.target_frames: int | None = None  # (counting) ``reached`` once this many frames arrived
        self.transport: asyncio.Transport | None = None
        self._head = bytearray()  # the status line and headers, until they are complete
        self._opened: asyncio.Future | None = None
        self._chunked = False
        self._size = 0  # bytes left in the current chunk (chunked bodies)
        self._size_line = bytearray()  # a chunk-size line cut between two reads
        self._skip = 0  # the CRLF after a chunk, still to skip
        self._tail = b"\n"  # the last body bytes seen, for a token cut in two
        self._wanted_tail = b""  # likewise for the wanted id line

    def expect(self, last_id: int) -> None:
        """Set ``reached`` once the frame of this id has arrived (frames come in order)."""
        self.wanted = b"\nid: %d\n" % last_id
        self._wanted_tail = b""
        self.reached.clear()

    async def open(self, *, read: bool = True) -> None:
        """Connect and check the status; ``read=False`` then never reads (a stalled browser)."""
        loop = asyncio.get_running_loop()
        self._opened = loop.create_future()
        self.transport, _ = await loop.create_connection(lambda: _Protocol(self), self.host, self.port)
        head = [f"GET {self.target} HTTP/1.1", f"Host: {self.host}:{self.port}", "Accept: text/event-stream"]
        head += [f"{k}: {v}" for k, v in self.headers.items()]
        self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode())
        await self._opened
        if not read:
            self.transport.pause_reading()  # its socket buffers fill and the server must not wait for it
            self.connected.set()

    # Bytes in ----------------------------------------------------------------------------------------

    def received(self, data: bytes) -> None:
        start = 0
        if not self._opened.done():
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(self._head[: end + 4])
            first_line = status.split(b"\r\n", 1)[0]
            if b" 200 " not in first_line:
                self._opened.set_exception(RuntimeError(f"{self.target}: {first_line.decode()}"))
                return
            self._chunked = b"transfer-encoding: chunked" in status.lower()
            data, start = bytes(self._head[end + 4 :]), 0
            self._head.clear()
            self._opened.set_result(None)
        if not self._chunked:
            self._body(data, start, len(data))
        else:
            self._chunks(data, start)
        if self.target_frames is not None and self.frames >= self.target_frames:
            self.reached.set()

    def _chunks(self, data: bytes, at: int) -> None:
        size = len(data)
        while at < size:
            if self._skip:
                step = min(self._skip, size - at)
                self._skip -= step
                at += step
            elif self._size:
                end = min(at + self._size, size)
                self._body(data, at, end)
                self._size -= end - at
                at = end
                if not self._size:
                    self._skip = 2
            else:
                line_end = data.find(b"\n", at)
                if line_end < 0:
                    self._size_line += data[at:]
                    return
                line = bytes(self._size_line) + data[at:line_end]  # (its CR, if any, ignored by int())
                self._size_line.clear()
                at = line_end + 1
                self._size = int(line.split(b";", 1)[0], 16)
                if self._size == 0:
                    self.done.set()
                    return

    def _body(self, data: bytes, start: int, end: int) -> None:
        if end <= start:
            return
        self.connected.set()
        if self.wanted:
            edge = len(self.wanted) - 1
            if (
                data.find(self.wanted, start, end) >= 0
                or self.wanted in self._wanted_tail + data[start : start + edge]
            ):
                self.wanted = b""
                self.reached.set()
            else:
                self._wanted_tail = (self._wanted_tail + data[max(start, end - edge) : end])[-edge:]
        if not self.counting:
            return
        head = data[start : start + EDGE]
        found = data.count(TOKEN, start, end) + (self._tail + head).count(TOKEN)
        if found:
            self.frames += found
            if self.track_ids:
                now = time.perf_counter()
                for match in ID.finditer(self._tail + data[start:end]):
                    self.arrivals.setdefault(int(match.group(1)), now)
        if data.find(KEEPALIVE, start, end) >= 0:  # the relay's named keepalives (live or stalled)
            self.keepalives += data.count(KEEPALIVE, start, end)
            self.keepalive_times.append(time.perf_counter())
        if end - start >= EDGE:
            self._tail = data[end - EDGE : end]
        else:
            self._tail = (self._tail + data[start:end])[-EDGE:]

    async def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        if self._opened is not None and not self._opened.done():
            self._opened.cancel()


class _Protocol(asyncio.Protocol):
    def __init__(self, reader: Reader):
        self.reader = reader

    def data_received(self, data: bytes) -> None:
        self.reader.received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.reader.done.set()
        if self.reader._opened is not None and not self.reader._opened.done():
            self.reader._opened.set_exception(ConnectionError("closed before the response"))
