"""Issue "Live session monitoring": the telemetry relay against the sandbox read directly.

All in one run, against one browser session whose telemetry the sandbox emits as fast as it can (burst):
events/s delivered to 1 and 100 viewers through the console vs the same viewers on the sandbox directly;
added latency (console arrival minus direct arrival of the same seq) at a low rate; idle viewers held with
their memory and keepalives; upstream connections for 100 viewers; time from the last viewer leaving to the
upstream closing; and whether a viewer that stops reading slows the others.
"""

from __future__ import annotations

import asyncio
import itertools
import resource
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.bench import harness
from tests.bench.sse_client import Reader
from tests.sandbox_fixtures import new_tenant

BURST = 20_000
ROUNDS = 3
KEEPALIVE = 2.0


def run() -> str:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with harness.sandbox() as (sandbox_url, sandbox_process):
        tenant = new_tenant(sandbox_url)
        tenant.control("POST", "settings", {"telemetry_rate_per_second": 0, "telemetry_retention": 1_000_000})
        body = {
            "telemetry": {"enabled": True, "browser": {"console": {"enabled": True}}},
            "timeout_seconds": 259200,
        }
        session_id = tenant.call("POST", "/browsers", json=body).json()["session_id"]
        env = {"LIVE_KEEPALIVE_SECONDS": str(KEEPALIVE), "LIVE_MAX_PENDING": "50000"}
        with harness.console(sandbox_url, tenant.api_key, extra_env=env) as console:
            bench = RelayBench(console, tenant, session_id, sandbox_process.pid)
            return asyncio.run(bench.all())


@dataclass
class Round:
    rate: float  # events/s summed over the viewers
    cpu: dict[str, float]  # µs of CPU per event of the burst (all viewers): console, sandbox, readers


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class RelayBench:
    def __init__(self, console, tenant, session_id, sandbox_pid: int):
        self.console, self.tenant, self.session_id = console, tenant, session_id
        self.sandbox_pid = sandbox_pid
        self.console_url = f"{console.url}/o/{console.org_slug}/browsers/{session_id}/telemetry/stream/"
        self.direct_url = f"{tenant.url}/browsers/{session_id}/telemetry/stream"
        self.stream_path = f"/browsers/{session_id}/telemetry/stream"
        self.pid = self._console_pid()

    def _console_pid(self) -> int:
        port = self.console.url.rsplit(":", 1)[1]
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    cmd = (proc / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"uvicorn" in b" ".join(cmd) and port.encode() in cmd:
                    return int(proc.name)
        raise RuntimeError("console process not found")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def upstreams(self) -> int:
        return self.tenant.control("GET", "streams").json().get(self.stream_path, 0)

    def readers(self, n: int, *, via_console: bool, **options) -> list[Reader]:
        if via_console:
            url, headers = self.console_url, {"Cookie": self.console.cookie_header}
        else:
            url, headers = self.direct_url, {"Authorization": f"Bearer {self.tenant.api_key}"}
        return [Reader(url, headers, **options) for _ in range(n)]

    async def open_all(self, readers: list[Reader], batch: int = 100) -> None:
        for i in range(0, len(readers), batch):
            await asyncio.gather(*(r.open() for r in readers[i : i + batch]))
        await asyncio.gather(*(r.connected.wait() for r in readers))

    async def wait_upstreams(self, expected: int, seconds: float = 10) -> bool:
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            if await asyncio.to_thread(self.upstreams) == expected:
                return True
            await asyncio.sleep(0.05)
        return False

    async def close_all(self, readers: list[Reader]) -> None:
        await asyncio.gather(*(r.close() for r in readers))
        await self.wait_upstreams(0)

    async def burst(self, count: int) -> int:
        """Emit ``count`` events at once; the seq of the last."""
        body = {"session_id": self.session_id, "count": count}
        answer = await asyncio.to_thread(self.tenant.control, "POST", "telemetry/burst", body)
        return answer.json()["last_seq"]

    def newest_seq(self) -> int:
        path = f"/browsers/{self.session_id}/telemetry/events"
        items = self.tenant.call("GET", path, params={"order": "desc", "limit": 1}).json()
        return items[0]["seq"] if items else 0

    # (1) throughput --------------------------------------------------------------------------------

    def cpu(self) -> dict[str, float]:
        return {
            "console": harness.cpu_seconds(self.pid),
            "sandbox": harness.cpu_seconds(self.sandbox_pid),
            "readers": own_cpu(),
        }

    async def throughput(self, viewers: int, *, via_console: bool, stalled: int = 0) -> Round:
        readers = self.readers(viewers, via_console=via_console)
        await self.open_all(readers)
        stalled_readers = self.readers(stalled, via_console=True)
        for reader in stalled_readers:
            # Connected, then never read: its socket buffers fill and the console must not wait for it.
            await reader.open(read=False)
        await self.wait_upstreams(1 if via_console else viewers)
        # Each reader waits for the burst's last frame (frames come in order, and a viewer cannot lag here:
        # the console keeps LIVE_MAX_PENDING frames, more than a burst). Nothing else emits meanwhile.
        last = await asyncio.to_thread(self.newest_seq) + BURST
        for r in readers:
            r.expect(last)
        before = self.cpu()
        started = time.perf_counter()
        if await self.burst(BURST) != last:
            raise RuntimeError("the burst's last seq is not the one the readers wait for")
        await asyncio.wait_for(asyncio.gather(*(r.reached.wait() for r in readers)), timeout=120)
        elapsed = time.perf_counter() - started
        after = self.cpu()
        await asyncio.gather(*(r.close() for r in stalled_readers))
        await self.close_all(readers)
        cpu = {name: (after[name] - before[name]) / BURST * 1e6 for name in before}
        return Round(viewers * BURST / elapsed, cpu)

    # (2) added latency -----------------------------------------------------------------------------

    async def latency(self, viewers: int, events: int = 150, rate: float = 50.0) -> tuple[float, float]:
        direct = self.readers(1, via_console=False, track_ids=True)[0]
        relayed = self.readers(viewers, via_console=True, track_ids=True)
        await self.open_all([direct, *relayed])
        await self.wait_upstreams(2)
        emit = {
            "session_id": self.session_id,
            "events": [
                {"type": "console_log", "category": "console", "data": {"level": "log", "text": "tick"}}
            ],
        }
        async with httpx.AsyncClient(
            base_url=self.tenant.url, headers={"Authorization": f"Bearer {self.tenant.api_key}"}
        ) as client:
            for _ in range(events):
                await client.post("/_sandbox/telemetry/emit", json=emit)
                await asyncio.sleep(1 / rate)
        await asyncio.sleep(0.5)
        added = []
        for reader in relayed:
            for seq, at in reader.arrivals.items():
                if seq in direct.arrivals:
                    added.append((at - direct.arrivals[seq]) * 1000)
        await self.close_all([direct, *relayed])
        added.sort()
        return statistics.median(added), added[int(len(added) * 0.99) - 1]

    # (3) idle viewers ------------------------------------------------------------------------------

    async def idle(self, viewers: int) -> dict:
        before = self.rss_mb()
        readers = self.readers(viewers, via_console=True, counting=True)  # (their keepalives)
        started = time.perf_counter()
        await self.open_all(readers)
        opened = time.perf_counter() - started
        await asyncio.sleep(KEEPALIVE * 2.6)
        after = self.rss_mb()
        upstreams = await asyncio.to_thread(self.upstreams)
        gaps = []
        for r in readers:
            times = r.keepalive_times
            gaps.extend(b - a for a, b in itertools.pairwise(times))
        on_time = sum(1 for r in readers if r.keepalives >= 2)
        result = {
            "viewers": viewers,
            "open_s": opened,
            "rss_delta_mb": after - before,
            "per_viewer_kb": (after - before) * 1024 / viewers,
            "on_time": on_time,
            "max_gap_s": max(gaps) if gaps else float("nan"),
            "upstreams": upstreams,
        }
        # (5) time from the last viewer leaving to the upstream closing: all others leave first.
        await asyncio.gather(*(r.close() for r in readers[1:]))
        await asyncio.sleep(max(2.0, viewers / 500))
        closed_at = time.perf_counter()
        await readers[0].close()
        await self.wait_upstreams(0, seconds=10)
        result["close_ms"] = (time.perf_counter() - closed_at) * 1000
        return result

    async def all(self) -> str:
        rows = []
        for viewers in (1, 100):
            relayed, direct = [], []
            for _ in range(ROUNDS):  # interleaved; the median of each is reported
                relayed.append(await self.throughput(viewers, via_console=True))
                direct.append(await self.throughput(viewers, via_console=False))
            rows.append((viewers, median(relayed), median(direct)))
        alone = (await self.throughput(10, via_console=True)).rate
        with_stalled = (await self.throughput(10, via_console=True, stalled=1)).rate
        lat1 = await self.latency(1)
        lat100 = await self.latency(100)
        idles = [await self.idle(n) for n in (200, 1000, 2000)]
        return report(rows, alone, with_stalled, lat1, lat100, idles)


def per(micros: float, viewers: int) -> str:
    return f"{micros:.1f}" if viewers == 1 else f"{micros:.0f} ({micros / viewers:.2f} per viewer)"


def median(rounds: list[Round]) -> Round:
    """The median round's events/s, and the median of each process's CPU per event over the rounds."""
    names = rounds[0].cpu
    return Round(
        statistics.median(r.rate for r in rounds),
        {name: statistics.median(r.cpu[name] for r in rounds) for name in names},
    )


def report(rows, alone, with_stalled, lat1, lat100, idles) -> str:
    idle_head = (
        "| idle viewers | time to open | console RSS added | per viewer"
        f" | keepalives on time (every {KEEPALIVE:g} s)"
        " | longest keepalive gap | upstreams | last viewer gone, upstream closed after |"
    )
    idle_rows = [
        f"| {i['viewers']} | {i['open_s']:.1f} s | {i['rss_delta_mb']:.1f} MB | {i['per_viewer_kb']:.0f} KB"
        f" | {i['on_time']}/{i['viewers']} | {i['max_gap_s']:.2f} s | {i['upstreams']}"
        f" | {i['close_ms']:.0f} ms |"
        for i in idles
    ]
    lines = [
        f"Burst of {BURST:,} telemetry events emitted at once by the sandbox; events/s = viewers x events"
        f" / time until every viewer had them all; median of {ROUNDS} interleaved rounds.",
        "",
        "| viewers | through the console (events/s) | sandbox directly (events/s) | console / direct |",
        "|---:|---:|---:|---:|",
        *(f"| {v} | {c.rate:,.0f} | {d.rate:,.0f} | {c.rate / d.rate:.2f} |" for v, c, d in rows),
        "",
        "CPU per event of the burst (µs of a core, median of the rounds; per viewer: divided by the viewers),"
        " each process read from /proc around the burst:",
        "",
        "| viewers | console, through it | its upstream (sandbox) | its readers"
        " | sandbox, read directly | its readers |",
        "|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {v} | {per(c.cpu['console'], v)} | {c.cpu['sandbox']:.1f} | {per(c.cpu['readers'], v)}"
            f" | {per(d.cpu['sandbox'], v)} | {per(d.cpu['readers'], v)} |"
            for v, c, d in rows
        ),
        "",
        "- Added latency at 50 events/s (console arrival minus direct arrival of the same seq): "
        f"1 viewer p50 **{lat1[0]:.2f} ms**, p99 **{lat1[1]:.2f} ms**; "
        f"100 viewers p50 **{lat100[0]:.2f} ms**, p99 **{lat100[1]:.2f} ms**.",
        f"- A viewer that stops reading: 10 readers got {alone:,.0f} events/s alone and {with_stalled:,.0f}"
        f" with one stalled connection beside them ({with_stalled / alone:.2f}).",
        "",
        idle_head,
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        *idle_rows,
    ]
    return "\n".join(lines)
