"""Issue "Service client and sandbox core": a proxied console page against a trivial view and the sandbox.

(a) the projects list page (session, membership, one service call, a template) against `/` (the home
view: the same middleware, session and membership lookup, answered with a redirect to the dashboard; no
template, no service call; not `/healthz`, which ProbeMiddleware answers ahead of the stack); (b) the same
list fetched from the sandbox directly. Then 20 concurrent page loads against an upstream with 200 ms
injected latency: they should overlap, finishing in about 200 ms.

Requests per second depend on whatever else the machine runs (wrk and the sandbox share its cores with the
console). The CPU time the console's process spends per request does much less: it is measured alongside
(from /proc), and its ratio is what the requests/s ratio is when the console alone is the bottleneck.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx

from tests.bench import harness


def run(rounds: int = 2, seconds: int = 5) -> str:
    with harness.sandbox() as (sandbox_url, _):
        tenant = harness.tenant_with_projects(sandbox_url)
        with harness.console(sandbox_url, tenant.api_key) as console:
            cookie = {"Cookie": console.cookie_header}
            page_url = f"{console.url}/o/{console.org_slug}/projects/"
            check = harness.get(page_url, headers=cookie)
            assert check.status_code == 200 and "bench-00" in check.text, check.status_code
            home = harness.get(f"{console.url}/", headers=cookie)
            assert home.status_code == 302 and home.headers["location"].endswith(f"/o/{console.org_slug}/")
            results = {"trivial": [], "dashboard": [], "page": [], "direct": []}
            cpu = {"trivial": [], "dashboard": [], "page": []}

            def measured(kind: str, url: str, headers: dict) -> harness.WrkResult:
                before = harness.cpu_seconds(console.pid)
                result = harness.wrk(url, headers=headers, seconds=seconds)
                used = harness.cpu_seconds(console.pid) - before
                cpu[kind].append(used * 1000 / max(result.rps * seconds, 1))
                return result

            for _ in range(rounds):
                results["trivial"].append(measured("trivial", f"{console.url}/", cookie))
                # What a browser's navigation gets first: the overview's frame, its cards loading after
                # (console/web/deferred.py); without the header it would be the whole page, every card's
                # service calls included.
                navigate = {**cookie, "Sec-Fetch-Mode": "navigate"}
                overview = f"{console.url}/o/{console.org_slug}/"
                results["dashboard"].append(measured("dashboard", overview, navigate))
                results["page"].append(measured("page", page_url, cookie))
                results["direct"].append(
                    harness.wrk(
                        f"{sandbox_url}/org/projects",
                        headers={"Authorization": f"Bearer {tenant.api_key}"},
                        seconds=seconds,
                    )
                )
            overlap = asyncio.run(_concurrent_loads(page_url, cookie, tenant))
    return _report(results, overlap, cpu)


async def _concurrent_loads(page_url: str, cookie: dict, tenant, n: int = 20, latency_ms: int = 200) -> dict:
    tenant.fault(method="GET", path="^/org/projects$", latency_ms=latency_ms, count=n)
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=n)) as client:
        started = time.perf_counter()
        responses = await asyncio.gather(*(client.get(page_url, headers=cookie) for _ in range(n)))
        wall = time.perf_counter() - started
    assert all(r.status_code == 200 for r in responses)
    return {"n": n, "latency_ms": latency_ms, "wall_ms": wall * 1000}


def _best(samples):
    return max(samples, key=lambda r: r.rps)


def _report(results: dict, overlap: dict, cpu: dict) -> str:
    trivial, dashboard, page, direct = (_best(results[k]) for k in ("trivial", "dashboard", "page", "direct"))
    # The least CPU per request over the rounds: the round least disturbed by the rest of the machine.
    cpu_ms = {kind: min(samples) for kind, samples in cpu.items()}
    rows = [
        (
            "trivial view (`/`: same middleware and session, a redirect; no template)",
            trivial,
            cpu_ms["trivial"],
        ),
        ("overview frame (session, membership, template; no service call)", dashboard, cpu_ms["dashboard"]),
        ("projects page (proxied: session, membership, service call, template)", page, cpu_ms["page"]),
        ("sandbox `GET /org/projects` directly", direct, None),
    ]
    spread = ", ".join(f"{r.rps:,.0f}" for r in results["page"])
    median = statistics.median(r.rps for r in results["page"])
    lines = [
        "| request | requests/s | p50 ms | p99 ms | errors | console CPU ms/request |",
        "|---|---:|---:|---:|---:|---:|",
        *(
            f"| {name} | {r.rps:,.0f} | {r.p50_ms:.1f} | {r.p99_ms:.1f} | {r.errors} | "
            f"{'—' if ms is None else f'{ms:.2f}'} |"
            for name, r, ms in rows
        ),
        "",
        f"- **page / trivial view: {page.rps / trivial.rps:.2f}** of the requests/s (budget ≥ 0.70); by the "
        f"console's CPU time per request: {cpu_ms['trivial'] / cpu_ms['page']:.2f}",
        f"- page / overview frame: {page.rps / dashboard.rps:.2f} (what one service call costs a page)",
        f"- page / sandbox direct: {page.rps / direct.rps:.2f}",
        f"- rounds: {len(results['page'])} of each, interleaved; best round shown; the page's rounds: "
        f"{spread} req/s (median {median:,.0f})",
        f"- {overlap['n']} concurrent page loads against an upstream with {overlap['latency_ms']} ms "
        f"injected latency finished in **{overlap['wall_ms']:.0f} ms** "
        f"(one after another would take {overlap['n'] * overlap['latency_ms']} ms)",
    ]
    return "\n".join(lines)
