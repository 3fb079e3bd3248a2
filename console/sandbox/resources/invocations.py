"""Invocations (notes §13): run an action of a deployed app version; status, logs, output, browsers.

Choices where the notes leave room:

- ``POST /invocations`` needs ``app_name``, ``action_name`` and ``version`` (400 with details when
  missing); an app or version that no running deployment serves is 404, an unknown action 400 (detail
  ``action_name``). ``payload`` must be a JSON **string** holding valid JSON (400, detail ``payload``).
  ``async: true`` answers 202 with status ``queued``; without it the call waits (up to
  ``SYNC_WAIT_SECONDS`` of real time) for the end and answers 200 (or 202 if still going).
- An invocation moves ``queued`` → ``running`` → ``succeeded``/``failed`` on the tenant clock
  (``QUEUE_SECONDS`` then ``RUN_SECONDS`` by default), with log lines on the way; all of it is a
  timeline computed on read (see ``deployments``), so ``tenant.advance()`` moves it deterministically.
- The demo actions are deterministic: a payload with ``"fail": true`` fails; ``"duration_seconds": n``
  (0..86400) sets how long it runs; ``async_timeout_seconds`` fails a run that would last longer.
  Each demo action computes its output from its payload; actions of uploaded apps echo the payload.
- Actions that use a browser create one browser session (``tenant.table("browsers")``, ``_invocation``
  set) when the invocation is created; it outlives the invocation until deleted (``DELETE
  /invocations/{id}/browsers``, or the browsers API).
- ``PATCH /invocations/{id}``: ``status`` ``failed`` cancels (reason ``cancelled``), ``succeeded``
  completes with the given ``output`` (a JSON string); a finished invocation answers 409.
- ``max_concurrent_invocations`` (the project's, else the plan's 50): an invocation created while every
  slot is held by an unfinished one stays ``queued`` ("waiting for a concurrency slot") until the
  earliest of them ends, then runs as usual; nothing is refused.
- Invocations are run history: they never keep a project from being deleted (the browsers they
  created do, while active).
- ``GET /invocations/{id}/events`` replays the timeline (or what follows ``since``), follows it live and
  ends at ``succeeded`` or ``failed``. Frames carry no ``id:`` (the stream is not resumable).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from datetime import datetime, timedelta
from urllib.parse import urlparse

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.errors import ApiError, conflict, invalid, not_found
from console.sandbox.core.fields import Bad, Body, Context, Field, boolean
from console.sandbox.core.http import endpoint, no_content, ok, paginate, project_of, read_json, record_of
from console.sandbox.core.state import Tenant, new_id, rfc3339
from console.sandbox.resources import browsers, caps, deployments, sessions
from console.sandbox.resources.deployments import (
    interrupt,
    last_state,
    log_entry,
    parse_since,
    state_entry,
    timeline_events,
)

TABLE = "invocations"
STATUSES = ("queued", "running", "succeeded", "failed")
TERMINAL = ("succeeded", "failed")
QUEUE_SECONDS = 0.5
RUN_SECONDS = 1.5
SYNC_WAIT_SECONDS = 60.0
BROWSER_ACTIONS = {"get-page-title", "extract-links", "place-order"}
SLOT_REASON = "waiting for a concurrency slot (max_concurrent_invocations)"


# What the demo actions do -------------------------------------------------------------------------


def _host(payload: dict) -> str:
    return urlparse(str(payload.get("url") or "")).hostname or "example.com"


def _output(action: str, payload: dict) -> tuple[dict | None, str | None]:
    """(output, failure reason) of a demo action for this payload; deterministic."""
    if payload.get("fail") is True:
        return None, 'the action raised an error: the payload asked for a failure ("fail": true)'
    if action == "get-page-title":
        host = _host(payload)
        title = "Example Domain" if host.endswith("example.com") else f"{host} — Home"
        return {"title": title, "url": payload.get("url") or f"https://{host}/"}, None
    if action == "extract-links":
        host, count = _host(payload), int(payload.get("max_links") or 20)
        links = [{"href": f"https://{host}/page-{i}", "text": f"Page {i}"} for i in range(1, count + 1)]
        return {"links": links, "count": count}, None
    if action == "place-order":
        if payload.get("sku") == "OUT-0000":
            return None, "the store says OUT-0000 is out of stock"
        quantity = int(payload.get("quantity") or 1)
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        return {
            "order_id": f"ord_{digest[:10]}",
            "total": round(quantity * 19.99, 2),
            "currency": "USD",
        }, None
    if action == "check-stock":
        return {
            "in_stock": payload.get("sku") != "OUT-0000",
            "quantity": 0 if payload.get("sku") == "OUT-0000" else 42,
        }, None
    if action == "build-report":
        rows = int(payload.get("rows") or 50)
        data = [
            {"id": i, "region": ("us", "eu", "apac")[i % 3], "orders": (i * 37) % 101}
            for i in range(1, rows + 1)
        ]
        return {"format": payload.get("format") or "json", "rows": data}, None
    if action == "run-query":
        return {"rows": [{"answer": 42}], "elapsed_ms": 12}, None
    return {"ok": True, "action": action, "echo": payload}, None


def plan(
    record: dict,
    payload: dict,
    start: datetime,
    *,
    queue_seconds: float = QUEUE_SECONDS,
    run_seconds: float | None = None,
    timeout_seconds: int | None = None,
    queue_reason: str = "waiting for a worker",
) -> list[dict]:
    """The timeline of an invocation: queued, running with log lines, then its outcome."""
    action = record["action_name"]
    duration = run_seconds
    if duration is None:
        asked = payload.get("duration_seconds")
        ok_number = isinstance(asked, int | float) and not isinstance(asked, bool) and 0 <= asked <= 86400
        duration = float(asked) if ok_number else RUN_SECONDS
    begin = start + timedelta(seconds=queue_seconds)
    end = begin + timedelta(seconds=duration)
    output, failure = _output(action, payload)
    if timeout_seconds is not None and duration > timeout_seconds:
        end = begin + timedelta(seconds=timeout_seconds)
        output, failure = None, f"timed out after {timeout_seconds} s (async_timeout_seconds)"
    step = (end - begin) / 4
    timeline = [
        state_entry(start, "queued", queue_reason),
        state_entry(begin, "running"),
        log_entry(begin, f"Starting {record['app_name']}@{record['version']} action {action}"),
    ]
    if action in BROWSER_ACTIONS:
        timeline.append(log_entry(begin + step, "Connected to browser session over CDP"))
        if payload.get("url"):
            timeline.append(log_entry(begin + step * 2, f"Navigating to {payload['url']}"))
    else:
        timeline.append(log_entry(begin + step * 2, "Working…"))
    if failure:
        timeline += [log_entry(end, f"Error: {failure}"), state_entry(end, "failed", failure)]
    else:
        seconds = (end - begin).total_seconds()
        timeline += [
            log_entry(end, f"Action {action} finished in {seconds:.1f}s"),
            state_entry(end, "succeeded", output=json.dumps(output)),
        ]
    return timeline


# Records -----------------------------------------------------------------------------------------


def view(record: dict, moment: datetime) -> dict:
    """The public invocation as of ``moment``."""
    state = last_state(record, moment)
    public = {k: v for k, v in record.items() if not k.startswith("_")}
    public["status"] = state["status"]
    public["status_reason"] = state.get("reason")
    public["finished_at"] = rfc3339(state["at"]) if state["status"] in TERMINAL else None
    public["output"] = state.get("output") if state["status"] in TERMINAL else None
    return public


def create(
    tenant: Tenant,
    project: str,
    deployment: dict,
    action: str,
    payload_text: str | None,
    *,
    at: datetime | None = None,
    **timing,
) -> dict:
    start = at or tenant.now()
    payload = json.loads(payload_text) if payload_text else {}
    record = {
        "id": new_id("inv"),
        "app_name": deployment["app_name"],
        "action_name": action,
        "version": deployment["version"],
        "payload": payload_text,
        "output": None,
        "started_at": rfc3339(start),
        "finished_at": None,
        "status": "queued",
        "status_reason": None,
        # Not ``_project``: invocations are run history, which never keeps a project from being deleted.
        "_scope": project,
        "_deployment": deployment["id"],
        "_created": start,
    }
    record["_timeline"] = plan(record, payload if isinstance(payload, dict) else {}, start, **timing)
    tenant.table(TABLE)[record["id"]] = record
    if action in BROWSER_ACTIONS:
        # The session outlives the run by a few minutes of inactivity, like a real one left open.
        run_for = (record["_timeline"][-1]["at"] - start).total_seconds()
        new_browser(tenant, project, record["id"], start, timeout=int(min(max(600, run_for + 300), 259200)))
    return record


def new_browser(tenant: Tenant, project: str, invocation_id: str, at: datetime, timeout: int) -> dict:
    """A browser session an invocation created (notes §2 record; ``_invocation`` links it back)."""
    record = browsers.new_browser_record(
        tenant, project, invocation_id=invocation_id, stealth=True, timeout_seconds=timeout
    )
    record["_invocation"] = invocation_id
    return record


def _browsers_of(tenant: Tenant, invocation_id: str) -> list[dict]:
    """The invocation's browsers that are still active."""
    return [
        browser
        for browser in tenant.table(sessions.TABLE).values()
        if browser.get("_invocation") == invocation_id and sessions.is_active(tenant, browser)
    ]


def _end_browser(tenant: Tenant, browser: dict, reason: str, at: datetime | None = None) -> None:
    sessions.end(tenant, browser, reason, at=at)


def _render_browser(request: Request, browser: dict) -> dict:
    return browsers.render(browser, request.state.tenant, str(request.base_url))


def _in_flight(tenant: Tenant, project: str) -> int:
    """The project's queued and running invocations (``caps.check_invocations``)."""
    now = tenant.now()
    return sum(
        1
        for r in tenant.table(TABLE).values()
        if r["_scope"] == project and last_state(r, now)["status"] not in TERMINAL
    )


def _get(request: Request, invocation_id: str) -> dict:
    tenant, project = request.state.tenant, project_of(request)
    return record_of(tenant, TABLE, invocation_id, "invocation", gone=lambda r: r["_scope"] != project)


def _served(request: Request, app_name: str, version: str) -> dict:
    tenant: Tenant = request.state.tenant
    serving = deployments.running(tenant, project_of(request))
    if not any(d["app_name"] == app_name for d in serving):
        raise not_found("app", app_name)
    for deployment in serving:
        if (deployment["app_name"], deployment["version"]) == (app_name, version):
            return deployment
    raise ApiError(404, "not_found", f"version {version!r} of app {app_name!r} is not deployed")


def _created_body(record: dict, moment: datetime) -> dict:
    current = view(record, moment)
    body = {"id": current["id"], "action_name": current["action_name"], "status": current["status"]}
    for key in ("status_reason", "output"):
        if current[key] is not None:
            body[key] = current[key]
    return body


# Endpoints ---------------------------------------------------------------------------------------


def _required_string(value, context: Context) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Bad("required (a non-empty string)")
    return value.strip()


def _payload(value, context: Context) -> str | None:
    if value is not None:
        if not isinstance(value, str):
            raise Bad('must be a JSON-encoded string, e.g. "{\\"url\\": \\"...\\"}"')
        try:
            json.loads(value)
        except ValueError as exc:
            raise Bad(f"is not valid JSON: {exc}") from None
    return value


def _timeout(value, context: Context) -> int | None:
    if value is not None and (
        not isinstance(value, int) or isinstance(value, bool) or not 10 <= value <= 3600
    ):
        raise Bad("an integer from 10 to 3600")
    return value


# ``POST /invocations`` (notes §13): which action of which deployed app, its payload, sync or async.
INVOKE = Body(
    message="the invocation request is not valid",
    complete=True,
    fields=(
        Field("app_name", _required_string),
        Field("action_name", _required_string),
        Field("version", _required_string),
        Field("payload", _payload),
        Field("async", boolean, default=False),
        Field("async_timeout_seconds", _timeout),
    ),
)


@endpoint
async def create_invocation(request: Request):
    tenant: Tenant = request.state.tenant
    fields = INVOKE.validate(await read_json(request))
    app_name, action, version = fields["app_name"], fields["action_name"], fields["version"]
    payload_text, run_async, timeout = fields["payload"], fields["async"], fields["async_timeout_seconds"]
    deployment = _served(request, app_name, version)
    names = [a["name"] for a in deployment["_actions"]]
    if action not in names:
        raise invalid(
            f"{app_name}@{version} has no action {action!r}",
            action_name=f"not an action of {app_name}@{version} (actions: {', '.join(names)})",
        )
    caps.check_invocations(tenant, project_of(request), lambda: _in_flight(tenant, project_of(request)))
    record = create(
        tenant, project_of(request), deployment, action, payload_text or None, timeout_seconds=timeout
    )
    if run_async:
        return ok(_created_body(record, tenant.now()), status=202)
    deadline = time.monotonic() + SYNC_WAIT_SECONDS
    # The outcome lies on the tenant clock, which tests may move: look again each tick.
    while time.monotonic() < deadline and last_state(record, tenant.now())["status"] not in TERMINAL:  # noqa: ASYNC110
        await asyncio.sleep(deployments.TICK_SECONDS)
    finished = last_state(record, tenant.now())["status"] in TERMINAL
    return ok(_created_body(record, tenant.now()), status=200 if finished else 202)


@endpoint
async def list_invocations(request: Request):
    tenant: Tenant = request.state.tenant
    params = request.query_params
    now = tenant.now()
    project = project_of(request)
    mine = [r for r in tenant.table(TABLE).values() if r["_scope"] == project]
    items = sorted(mine, key=lambda r: r["_created"], reverse=True)
    for name in ("app_name", "action_name", "version"):
        if params.get(name):
            items = [r for r in items if r[name] == params[name]]
    if params.get("deployment_id"):
        items = [r for r in items if r["_deployment"] == params["deployment_id"]]
    status = params.get("status")
    if status:
        if status not in STATUSES:
            raise invalid("status is not valid", status=f"one of {', '.join(STATUSES)}")
        items = [r for r in items if last_state(r, now)["status"] == status]
    since = parse_since(params.get("since"), now)
    if since is not None:
        items = [r for r in items if r["_created"] >= since]
    query = (params.get("query") or "").strip().casefold()
    if query:
        items = [
            r
            for r in items
            if r["id"] == query or query in r["app_name"].casefold() or query in r["action_name"].casefold()
        ]
    return paginate(request, items, render=lambda r: view(r, now))


@endpoint
async def get_invocation(request: Request):
    return ok(view(_get(request, request.path_params["id"]), request.state.tenant.now()))


@endpoint
async def update_invocation(request: Request):
    tenant: Tenant = request.state.tenant
    record = _get(request, request.path_params["id"])
    body = await read_json(request)
    status = body.get("status")
    if status not in TERMINAL:
        raise invalid("status is required", status="succeeded, or failed to cancel")
    output = body.get("output")
    if output is not None:
        if not isinstance(output, str):
            raise invalid("output must be a JSON string", output="a JSON-encoded string")
        try:
            json.loads(output)
        except ValueError as exc:
            raise invalid("output is not valid JSON", output=f"is not valid JSON: {exc}") from None
    now = tenant.now()
    current = last_state(record, now)["status"]
    if current in TERMINAL:
        raise conflict(f"invocation {record['id']} already {current}", code="invocation_finished")
    if status == "failed":
        entries = [
            log_entry(now, "Invocation cancelled"),
            state_entry(now, "failed", "cancelled", output=output),
        ]
    else:
        entries = [
            log_entry(now, "Invocation marked succeeded"),
            state_entry(now, "succeeded", output=output),
        ]
    interrupt(record, now, entries)
    return ok(view(record, now))


@endpoint
async def invocation_events(request: Request):
    record = _get(request, request.path_params["id"])
    return timeline_events(request, record, TABLE, view, "invocation_state", TERMINAL)


@endpoint
async def list_invocation_browsers(request: Request):
    record = _get(request, request.path_params["id"])
    browsers = _browsers_of(request.state.tenant, record["id"])
    return ok({"browsers": [_render_browser(request, b) for b in browsers]})


@endpoint
async def delete_invocation_browsers(request: Request):
    tenant: Tenant = request.state.tenant
    record = _get(request, request.path_params["id"])
    for browser in _browsers_of(tenant, record["id"]):
        _end_browser(tenant, browser, "deleted")
    return no_content()


# Demo data ---------------------------------------------------------------------------------------

DEMO_PAYLOADS = {
    "get-page-title": [{"url": "https://example.com"}, {"url": "https://news.ycombinator.com"}],
    "extract-links": [{"url": "https://docs.python.org/3/", "max_links": 5}, {"url": "https://example.com"}],
    "place-order": [
        {"sku": "ABC-1234", "quantity": 2, "shipping": "express"},
        {"sku": "OUT-0000", "quantity": 1},
    ],
    "check-stock": [{"sku": "ABC-1234"}],
    "build-report": [{"format": "json", "rows": 120}, {"format": "csv", "rows": 10}],
    "run-query": [{"sql": "select 42 as answer"}],
}


def _end_browsers(tenant: Tenant, record: dict) -> None:
    for browser in _browsers_of(tenant, record["id"]):
        _end_browser(tenant, browser, "ended", at=last_state(record, tenant.now())["at"])


def seed(tenant: Tenant) -> None:
    project = tenant.default_project_id
    now = tenant.now()
    serving = {(d["app_name"], d["version"]): d for d in deployments.running(tenant, project)}
    if not serving:
        return
    versions = sorted(serving)

    def run(key, action, payload, when, **timing):
        return create(tenant, project, serving[key], action, json.dumps(payload), at=when, **timing)

    # A history of finished runs over the last two days, some of them failed.
    for n, hours in enumerate(range(2, 48, 2)):
        key = versions[n % len(versions)]
        actions = [a["name"] for a in serving[key]["_actions"]]
        action = actions[n % len(actions)]
        payloads = DEMO_PAYLOADS.get(action, [{}])
        payload = dict(payloads[n % len(payloads)])
        if n % 7 == 3:
            payload["fail"] = True
        record = run(key, action, payload, now - timedelta(hours=hours, minutes=n * 7 % 60))
        _end_browsers(tenant, record)  # their sessions ended long ago
    scraper = ("web-scraper", "1.2.0")
    if scraper in serving:
        # Still running for a while, with its browser open; and one waiting for a worker.
        run(
            scraper,
            "extract-links",
            {"url": "https://docs.python.org/3/", "max_links": 200},
            now - timedelta(minutes=3),
            queue_seconds=4,
            run_seconds=3600,
        )
        run(
            scraper,
            "get-page-title",
            {"url": "https://example.com"},
            now - timedelta(seconds=20),
            queue_seconds=1800,
            queue_reason=SLOT_REASON,
        )
        # Finished a minute ago, its browser left open: "delete its browsers" has something to do.
        run(scraper, "get-page-title", {"url": "https://example.com"}, now - timedelta(minutes=2))
    checkout = ("checkout-bot", "1.0.0")
    if checkout in serving:
        cancelled = run(
            checkout,
            "place-order",
            {"sku": "ABC-1234", "quantity": 1},
            now - timedelta(minutes=30),
            run_seconds=600,
        )
        at = now - timedelta(minutes=25)
        interrupt(
            cancelled, at, [log_entry(at, "Invocation cancelled"), state_entry(at, "failed", "cancelled")]
        )
        _end_browsers(tenant, cancelled)


routes = [
    Route("/invocations", list_invocations, methods=["GET"]),
    Route("/invocations", create_invocation, methods=["POST"]),
    Route("/invocations/{id}", get_invocation, methods=["GET"]),
    Route("/invocations/{id}", update_invocation, methods=["PATCH"]),
    Route("/invocations/{id}/events", invocation_events, methods=["GET"]),
    Route("/invocations/{id}/browsers", list_invocation_browsers, methods=["GET"]),
    Route("/invocations/{id}/browsers", delete_invocation_browsers, methods=["DELETE"]),
]
