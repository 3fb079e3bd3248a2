"""A lean SSE reader for benchmarks: raw asyncio sockets, chunked decoding, frame ids counted in bytes.

httpx would spend more CPU per event than the servers being measured; this reader counts ``\\nid: `` in the
decoded body (carrying a few bytes across reads so a token split between two reads is not missed).
"""

from __future__ import annotations

import asyncio
import re
import time
from urllib.parse import urlsplit

ID = re.compile(rb"\nid: (\d+)")
TOKEN = b"\nid: "


class Reader:
    def __init__(self, url: str, headers: dict[str, str] | None = None, *, track_ids: bool = False):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port
        self.target = parts.path + (f"?{parts.query}" if parts.query else "")
        self.headers = headers or {}
        self.track_ids = track_ids
        self.frames = 0
        self.keepalives = 0
        self.keepalive_times: list[float] = []
        self.arrivals: dict[int, float] = {}
        self.connected = asyncio.Event()
        self.done = asyncio.Event()
        self.reached = asyncio.Event()
        self.target_frames: int | None = None
        self._tail = b"\n"
        self._task: asyncio.Task | None = None
        self.writer = None

    async def open(self, *, read: bool = True) -> None:
        """Connect and check the status; ``read=False`` then never reads (a stalled browser)."""
        reader, writer = await asyncio.open_connection(self.host, self.port)
        self.writer = writer
        head = [f"GET {self.target} HTTP/1.1", f"Host: {self.host}:{self.port}", "Accept: text/event-stream"]
        head += [f"{k}: {v}" for k, v in self.headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        await writer.drain()
        status = await reader.readuntil(b"\r\n\r\n")
        first_line = status.split(b"\r\n", 1)[0]
        if b" 200 " not in first_line:
            raise RuntimeError(f"{self.target}: {first_line.decode()}")
        chunked = b"transfer-encoding: chunked" in status.lower()
        if not read:
            self.connected.set()
            return
        self._task = asyncio.create_task(self._read(reader, chunked))

    async def _read(self, reader: asyncio.StreamReader, chunked: bool) -> None:
        try:
            if not chunked:
                while data := await reader.read(65536):
                    self._feed(data)
                return
            while True:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";", 1)[0], 16)
                if size == 0:
                    return
                data = await reader.readexactly(size + 2)
                self._feed(data[:-2])
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            return
        finally:
            self.done.set()

    def _feed(self, data: bytes) -> None:
        self.connected.set()
        window = self._tail + data
        found = window.count(TOKEN)
        if found:
            self.frames += found
            if self.track_ids:
                now = time.perf_counter()
                for match in ID.finditer(window):
                    self.arrivals.setdefault(int(match.group(1)), now)
        if b"event: keepalive" in data:  # the relay's named keepalives (live or stalled)
            self.keepalives += data.count(b"event: keepalive")
            self.keepalive_times.append(time.perf_counter())
        self._tail = window[-(len(TOKEN) - 1) :]
        if self.target_frames is not None and self.frames >= self.target_frames:
            self.reached.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self.writer is not None:
            self.writer.close()
