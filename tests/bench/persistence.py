"""Issue 14 (defect 5): what persisting the sandbox's state (``SANDBOX_STATE``) costs a mutating request.

Two sandboxes on the simulated engine, each with the demo tenant (as ``make run`` has it): one in memory,
one with a state file. The same mutating request, ``PATCH /proxies/{id}`` renaming a proxy of the demo
tenant, is sent one after another over one keep-alive connection to each, in interleaved rounds; with the
file, every such answer waits for its save (the tenant's rows re-encoded, the changed ones written in one
SQLite transaction). A read (``GET /proxies/{id}``) is measured alongside: it is never saved on the
request path.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from console.sandbox.core import store
from tests.sandbox_fixtures import TEST_DEMO_KEY, start_sandbox, stop_sandbox

REQUESTS = 300
ROUNDS = 3


def run() -> str:
    load_before = os.getloadavg()
    save_ms = _save_ms()
    directory = Path(tempfile.mkdtemp(prefix="bench-sandbox-state-"))
    directory.chmod(0o711)  # as a state directory is: commands run as another user pass through
    state = directory / "sandbox.sqlite3"
    memory_url, memory = start_sandbox(SANDBOX_ENGINE="simulated")
    file_url, persisted = start_sandbox(SANDBOX_ENGINE="simulated", SANDBOX_STATE=str(state))
    try:
        results: dict[str, list[list[float]]] = {k: [] for k in ("memory", "file", "memory_get", "file_get")}
        clients = {name: _client(url) for name, url in (("memory", memory_url), ("file", file_url))}
        proxies = {name: _proxy(client) for name, client in clients.items()}
        for _ in range(ROUNDS):
            for name, client in clients.items():
                results[name].append(_patch(client, proxies[name]))
                results[f"{name}_get"].append(_get(client, proxies[name]))
        size = sum(p.stat().st_size for p in directory.glob("sandbox.sqlite3*")) / 1024
    finally:
        stop_sandbox(memory)
        stop_sandbox(persisted)
        store.reset(state)
        directory.rmdir()
    return report(results, size, save_ms, load_before, os.getloadavg())


def _save_ms() -> list[float]:
    from console.sandbox.app import assemble
    from console.sandbox.core.state import Registry

    assemble()  # the sandbox's objects, in-process: wired as the app wires them
    directory = Path(tempfile.mkdtemp(prefix="bench-sandbox-save-"))
    state = directory / "sandbox.sqlite3"
    saved = store.Store(state)
    try:
        registry = Registry()
        registry.create(demo=True)
        saved.save(registry)
        took = []
        for _ in range(50):
            started = time.perf_counter()
            saved.save(registry)
            took.append((time.perf_counter() - started) * 1000)
        return took
    finally:
        saved.close()
        store.reset(state)
        directory.rmdir()


def _client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TEST_DEMO_KEY}"}, timeout=30)


def _proxy(client: httpx.Client) -> str:
    response = client.get("/proxies", params={"limit": 1})
    assert response.status_code == 200 and response.json(), response.text
    return response.json()[0]["id"]


def _patch(client: httpx.Client, proxy_id: str) -> list[float]:
    took = []
    for i in range(REQUESTS):
        started = time.perf_counter()
        response = client.patch(f"/proxies/{proxy_id}", json={"name": f"bench-{i % 2}"})
        took.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
    return took


def _get(client: httpx.Client, proxy_id: str) -> list[float]:
    took = []
    for _ in range(REQUESTS):
        started = time.perf_counter()
        response = client.get(f"/proxies/{proxy_id}")
        took.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
    return took


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(results: dict[str, list[list[float]]], size_kb: float, save_ms, load_before, load_after) -> str:
    def best(name: str) -> list[float]:  # the round with the lowest median: the least disturbed one
        return min(results[name], key=statistics.median)

    rows = [
        ("`PATCH /proxies/{id}` in memory", best("memory")),
        ("`PATCH /proxies/{id}` with the state file", best("file")),
        ("`GET /proxies/{id}` in memory", best("memory_get")),
        ("`GET /proxies/{id}` with the state file", best("file_get")),
    ]
    lines = [
        "| request (one connection, one after another) | p50 ms | p99 ms | requests/s |",
        "|---|---:|---:|---:|",
    ]
    for label, values in rows:
        rate = len(values) / (sum(values) / 1000)
        lines.append(f"| {label} | {statistics.median(values):.2f} | {_p(values, 0.99):.2f} | {rate:,.0f} |")
    ratio = statistics.median(best("file")) / statistics.median(best("memory"))
    reads = statistics.median(best("file_get")) / statistics.median(best("memory_get"))
    medians = ", ".join(f"{statistics.median(r):.2f}" for r in results["file"])
    lines += [
        "",
        f"- **mutating request with persistence / without: {ratio:.2f}x** the p50 latency",
        f"- reads: {reads:.2f}x (never saved on the request path)",
        f"- {REQUESTS} requests per round, {ROUNDS} interleaved rounds, best round shown; "
        f"the file's PATCH rounds: {medians} ms p50",
        f"- one save of the demo tenant with nothing changed (in process): "
        f"{statistics.median(save_ms):.2f} ms p50, {_p(save_ms, 0.99):.2f} ms p99",
        f"- state file (demo tenant and the benchmark's changes): {size_kb:,.0f} KB",
        f"- load average before/after: {load_before[0]:.1f} / {load_after[0]:.1f} (2 cores shared)",
    ]
    return "\n".join(lines)
