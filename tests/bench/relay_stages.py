"""Where one telemetry event's time goes in the console's relay, stage by stage (issue 28).

In one process, with cProfile: a burst of telemetry events is read from a real sandbox through the console's
own upstream reader (``service_stream``: the socket read, the event-stream parse), then each batch goes
through the telemetry channel's render (JSON, the record, redaction, the row's markup) and the hub's
encoding into SSE frames and its log. The profile's own time per function is summed by the module it runs
in, so a stage's figure is what its code costs (µs of CPU per event), whichever function called it. cProfile
adds its own cost per call, so the figures are higher than without it; they are for comparing stages and
versions measured the same way, not for the absolute rate (``make bench relay`` has that).

Run: ``make bench BENCH_ARGS=relay-stages`` (``python -m tests.bench relay-stages``).
"""

from __future__ import annotations

import asyncio
import cProfile
import os
import pstats
import time

from tests.bench import harness
from tests.sandbox_fixtures import new_tenant

EVENTS = 20_000

# Module paths (by substring, first match wins) to the stage they belong to.
STAGES = [
    (
        "network read (httpx, httpcore, asyncio)",
        ("httpx", "httpcore", "anyio", "asyncio", "selectors", "ssl"),
    ),
    (
        "event-stream parse",
        ("console/service/http.py", "console/service/sse.py", "httpx_sse", "console/live/sources.py"),
    ),
    ("JSON decode", ("json/",)),
    (
        "record (telemetry envelope)",
        ("console/service/records.py", "console/service/telemetry.py", "console/service/contract.py"),
    ),
    ("redaction", ("console/redaction.py",)),
    (
        "row markup (escape, format)",
        ("console/browsers/presenters.py", "console/web/text.py", "django/utils/", "html/", "re/", "sre_"),
    ),
    ("hub (frames, log)", ("console/live/hub.py",)),
]
BUILTINS = "built-ins (str, dict, list methods called by the stages above)"
# Functions whose own time belongs to another stage than their module's: the C JSON scanner is called
# straight from decode_json (cProfile counts a call of it as the caller's own time).
FUNCTIONS = {("console/service/http.py", "decode_json"): "JSON decode"}


def _stage(filename: str, function: str = "") -> str:
    for (path, name), stage in FUNCTIONS.items():
        if name == function and filename.endswith(path):
            return stage
    for name, parts in STAGES:
        if any(part in filename for part in parts):
            return name
    if filename == "~":
        return BUILTINS
    return "other"


async def _read(service, session_id: str, first: int, last: int) -> list:
    """Every event of the burst as the console's upstream reader yields them (batches of one read: their
    events, parsed from JSON as the render stage comes to each, as the hub does)."""
    from console.live.hub import Batch
    from console.live.sources import service_stream
    from console.service import telemetry

    batches: list = []
    stream = service_stream(service, telemetry.stream_path(session_id))
    async for item in stream(str(first - 1)):  # resumed just before the burst: the sandbox replays it
        if not isinstance(item, Batch | list):
            item = [item]
        batches.append(item)
        if any(getattr(frame, "id", None) == str(last) for frame in getattr(item, "events", item)):
            return batches
    return batches


def _render(batches: list) -> list:
    from console.browsers import views

    return [[frame for frame in map(views._render_event, batch) if frame is not None] for batch in batches]


def _encode(rendered: list) -> int:
    from console.live import hub

    return sum(len(b"".join(hub.encode(frame, frame.id) for frame in frames)) for frames in rendered)


def _timed(function, *args):
    started = time.process_time()
    result = function(*args)
    return result, (time.process_time() - started)


def measure(sandbox_url: str, api_key: str, session_id: str, first: int, last: int, *, profiled: bool):
    """CPU seconds per coarse stage (without a profiler), or the profile's own time per module's stage."""
    from console.service.http import Service

    service = Service(sandbox_url, api_key, allow_private=True)
    profiler = cProfile.Profile()
    if profiled:
        profiler.enable()
    batches, read = _timed(
        lambda: asyncio.run(asyncio.wait_for(_read(service, session_id, first, last), 300))
    )
    rendered, render = _timed(_render, batches)
    _, encode = _timed(_encode, rendered)
    if profiled:
        profiler.disable()
    frames = sum(map(len, rendered))
    if frames < EVENTS:
        raise RuntimeError(f"read {frames} frames, expected {EVENTS}")
    if not profiled:
        coarse = {
            "read and parse (socket, event stream)": read,
            "render (JSON, record, redaction, row)": render,
        }
        coarse["encode (SSE frames)"] = encode
        return {stage: seconds / frames * 1e6 for stage, seconds in coarse.items()}
    totals: dict[str, float] = {}
    for (filename, _line, name), (_cc, _nc, tottime, _ct, _callers) in pstats.Stats(profiler).stats.items():
        stage = _stage(filename, name)
        totals[stage] = totals.get(stage, 0.0) + tottime
    whole = sum(totals.values())
    return {stage: seconds / whole * 100 for stage, seconds in totals.items()}


def run() -> str:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    os.environ.setdefault("SECRET_KEY", "bench-" + "x" * 60)
    import django

    django.setup()
    with harness.sandbox() as (sandbox_url, _process):
        tenant = new_tenant(sandbox_url)
        tenant.control("POST", "settings", {"telemetry_rate_per_second": 0, "telemetry_retention": 1_000_000})
        body = {
            "telemetry": {"enabled": True, "browser": {"console": {"enabled": True}}},
            "timeout_seconds": 3600,
        }
        session_id = tenant.call("POST", "/browsers", json=body).json()["session_id"]
        last = tenant.control("POST", "telemetry/burst", {"session_id": session_id, "count": EVENTS}).json()[
            "last_seq"
        ]
        first = last - EVENTS + 1
        args = (sandbox_url, tenant.api_key, session_id, first, last)
        rounds = [measure(*args, profiled=False) for _ in range(3)]
        shares = measure(*args, profiled=True)
    coarse = {stage: min(r[stage] for r in rounds) for stage in rounds[0]}
    lines = [
        f"The {EVENTS:,} events of one burst read back from the sandbox by the console's upstream reader, "
        "then rendered by the telemetry channel and encoded as SSE frames, in one process (the per-viewer "
        "side is in the relay section's CPU columns). µs of CPU per event, least of 3 rounds:",
        "",
        "| stage | µs per event |",
        "|---|---:|",
    ]
    lines += [f"| {stage} | {value:.1f} |" for stage, value in coarse.items()]
    lines += [f"| **total** | **{sum(coarse.values()):.1f}** |", ""]
    lines += [
        "Within those, the share of each module's own time under cProfile (one more round; the profiler's "
        "own cost per call weighs on many small calls):",
        "",
        "| where | share |",
        "|---|---:|",
    ]
    stages = [name for name, _ in STAGES] + [BUILTINS, "other"]
    lines += [
        f"| {stage} | {shares.get(stage, 0.0):.0f} % |" for stage in stages if shares.get(stage, 0.0) >= 0.5
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
