"""One evaluation round's reads: what the service says now, turned into findings per rule.

Everything is read through the service client (console/service/), at a bounded cost: each list at most
``ALERTS_MAX_PAGES`` pages of 100, the telemetry of at most ``ALERTS_TELEMETRY_SESSIONS`` sessions (one page
each, those read longest ago first; where each session's next read starts is kept in ``TelemetryMark``),
every read shared by the rules that need it, and the whole round under ``ALERTS_ROUND_SECONDS``.

A rule's ``Outcome`` is either its findings (the subjects whose condition holds, with the values seen) or
``None`` with a note: its data could not be read, so its alerts stay as they are (a round that cannot see
never resolves anything). ``seen`` bounds what may resolve when a list was cut at its page bound: a subject
the round did not see is left alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from console.alerts import kinds
from console.alerts.models import Rule, TelemetryMark
from console.service import (
    ServiceError,
    api_keys,
    audit_logs,
    auth_connections,
    browsers,
    deployments,
    invocations,
    pools,
    projects,
    proxies,
)
from console.service import telemetry as telemetry_service
from console.service.contract import (
    AWAITING_EXTERNAL_ACTION,
    AWAITING_INPUT,
    FLOW_IN_PROGRESS,
    NEEDS_AUTH,
    TERMINAL_INVOCATION_STATUSES,
)
from console.service.errors import Forbidden, RateLimited, Unauthorized
from console.service.http import Service

log = logging.getLogger("console.alerts")

PAGE = 100
# Failed logins that only a human can get past (service notes §9).
HUMAN_ERRORS = frozenset({"credentials_invalid", "bot_detected", "captcha_blocked"})
CRASH_TYPES = frozenset({"service_crashed", "system_oom_kill"})
ERROR_TYPES = frozenset({"console_error"})
FAILED_TYPES = frozenset({"network_loading_failed"})
# Telemetry counts and crashes are kept this long (the longest window a rule may ask for).
TELEMETRY_KEEP_MINUTES = 24 * 60
# A session's first read looks back this far (later reads continue from where the last one stopped).
FIRST_READ_MINUTES = 15


@dataclass
class Finding:
    key: str
    label: str
    summary: str
    subject_kind: str = ""
    subject_id: str = ""
    values: dict = field(default_factory=dict)


@dataclass
class Outcome:
    findings: list[Finding] | None
    seen: set[str] | None = None  # None: the read covered everything
    note: str = ""


class Unreadable(Exception):
    """A read this rule needs failed: the rule is undecided this round."""


@dataclass
class Listed:
    items: list
    complete: bool


def words(exc: BaseException) -> str:
    if isinstance(exc, ServiceError):
        status = f"HTTP {exc.status} " if exc.status else ""
        code = f"{exc.code}: " if exc.code else ""
        return f"{status}{code}{exc.message}"[:300]
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return type(exc).__name__


class Reader:
    """The reads of one round for one organization, each made once and shared (per project)."""

    def __init__(self, base: Service, org_id: int, now: datetime):
        self.base = base
        self.org_id = org_id
        self.now = now
        self.requests = 0
        self.notes: list[str] = []  # what could not be read: the round is incomplete
        self.remarks: list[str] = []  # what was read in part by design (bounds, backlogs)
        self._cache: dict[tuple, asyncio.Future] = {}
        self.max_pages = max(1, settings.ALERTS_MAX_PAGES)

    def svc(self, project: str) -> Service:
        return self.base.with_project(project) if project else self.base

    async def shared(self, key: tuple, read: Callable[[], Awaitable]):
        """``read()`` once per key per round; every rule awaiting the same key gets its answer or error."""
        if key not in self._cache:
            self._cache[key] = asyncio.ensure_future(read())
        try:
            return await asyncio.shield(self._cache[key])
        except (ServiceError, TimeoutError) as exc:
            raise Unreadable(f"could not read {key[0]}: {words(exc)}") from exc

    async def listed(self, name: str, project: str, fetch: Callable[[Service, int], Awaitable]) -> Listed:
        async def read() -> Listed:
            items, offset = [], 0
            for _ in range(self.max_pages):
                self.requests += 1
                page = await fetch(self.svc(project), offset)
                items += page.items
                if not page.has_more or not isinstance(page.next_offset, int):
                    return Listed(items, True)
                offset = page.next_offset
            self.notes.append(
                f"{name}: read the first {len(items)} (ALERTS_MAX_PAGES={self.max_pages} pages); "
                "the rest waits, and nothing beyond them resolves"
            )
            return Listed(items, False)

        return await self.shared((name, project), read)

    # --- the lists rules read -----------------------------------------------------------------------

    def connections(self, project: str) -> Awaitable[Listed]:
        return self.listed(
            "auth connections",
            project,
            lambda svc, offset: auth_connections.list_connections(svc, limit=PAGE, offset=offset),
        )

    def sessions(self, project: str) -> Awaitable[Listed]:
        return self.listed(
            "browser sessions",
            project,
            lambda svc, offset: browsers.list_sessions(svc, limit=PAGE, offset=offset, status="active"),
        )

    def pools(self, project: str) -> Awaitable[Listed]:
        return self.listed(
            "browser pools", project, lambda svc, offset: pools.list_pools(svc, limit=PAGE, offset=offset)
        )

    def proxies(self) -> Awaitable[Listed]:
        return self.listed(
            "proxies", "", lambda svc, offset: proxies.list_proxies(svc, limit=PAGE, offset=offset)
        )

    def api_keys(self) -> Awaitable[Listed]:
        return self.listed(
            "API keys", "", lambda svc, offset: api_keys.list_api_keys(svc, limit=PAGE, offset=offset)
        )

    def invocations(self, project: str, minutes: int) -> Awaitable[Listed]:
        return self.listed(
            f"invocations of the last {minutes} min",
            project,
            lambda svc, offset: invocations.list_invocations(
                svc, limit=PAGE, offset=offset, since=f"{minutes}m"
            ),
        )

    def deployments(self, project: str) -> Awaitable[Listed]:
        return self.listed(
            "deployments",
            project,
            lambda svc, offset: deployments.list_deployments(svc, limit=PAGE, offset=offset),
        )

    async def call(self, key: tuple, make: Callable[[], Awaitable]):
        async def read():
            self.requests += 1
            return await make()

        return await self.shared(key, read)


# --- the service itself ---------------------------------------------------------------------------


async def probe(reader: Reader) -> Outcome:
    """The built-in rule: one cheap call; a refusal of the key or no answer is a finding."""
    try:
        await reader.call(("the service",), lambda: projects.get_auth_context(reader.base))
    except Unreadable as exc:
        cause = exc.__cause__
        if isinstance(cause, Unauthorized | Forbidden):
            summary = f"The service refuses the organization's API key ({words(cause)})."
            problem = "refused"
        elif isinstance(cause, RateLimited):
            return Outcome(None, note=f"the service asked to slow down: {words(cause)}")
        else:
            summary = f"The service did not answer: {words(cause)}."
            problem = "unreachable"
        finding = Finding(
            key="service",
            label="The service",
            summary=summary,
            subject_kind="settings",
            values={"problem": problem, "error": words(cause), "base_url": reader.base.base_url},
        )
        return Outcome([finding])
    return Outcome([])


# --- one function per kind: (reader, rule) -> Outcome ------------------------------------------------


def _project(rule: Rule) -> str:
    return rule.project_id if rule.spec.project_scoped else ""


def _seen(listed: Listed, keys: set[str]) -> set[str] | None:
    return None if listed.complete else keys


def _per_record(listed: Listed, kind: str, check: Callable[[Any], dict | None]) -> Outcome:
    """A finding keyed ``<kind>:<id>`` for each record of ``listed`` that ``check(record)`` finds wrong: it
    gives the finding's ``label``, ``summary`` and ``values`` (None: all is well). Every record is seen,
    so an alert whose record is well again resolves. A record without an id (a proxy may have none) cannot
    be a subject: it is passed over."""
    findings, keys = [], set()
    for record in listed.items:
        if not record.id:
            continue
        key = f"{kind}:{record.id}"
        keys.add(key)
        if found := check(record):
            findings.append(Finding(key=key, subject_kind=kind, subject_id=record.id, **found))
    return Outcome(findings, _seen(listed, keys))


async def auth_needs_human(reader: Reader, rule: Rule) -> Outcome:
    def check(c) -> dict | None:
        if c.flow_status == FLOW_IN_PROGRESS and c.flow_step == AWAITING_INPUT:
            why = "A login is waiting for input."
        elif c.flow_status == FLOW_IN_PROGRESS and c.flow_step == AWAITING_EXTERNAL_ACTION:
            why = (
                f"A login is waiting for an external action: {c.external_action_message or 'see the login'}."
            )
        elif c.flow_status == "FAILED" and (c.error_code or "") in HUMAN_ERRORS:
            why = f"The last login failed: {c.error_code}."
        elif c.status == NEEDS_AUTH and c.flow_status != FLOW_IN_PROGRESS:
            why = "The connection needs to log in again."
        else:
            return None
        values = {
            "status": c.status,
            "flow_status": c.flow_status,
            "flow_step": c.flow_step,
            "error_code": c.error_code,
            "can_reauth_reason": c.can_reauth_reason,
        }
        return {"label": f"{c.profile_name or c.id} on {c.domain or '?'}", "summary": why, "values": values}

    return _per_record(await reader.connections(_project(rule)), "auth", check)


async def pool_exhausted(reader: Reader, rule: Rule) -> Outcome:
    def check(pool) -> dict | None:
        if not (pool.size and pool.available_count <= 0 and pool.acquired_count >= pool.size):
            return None
        values = {"size": pool.size, "acquired": pool.acquired_count, "available": pool.available_count}
        summary = f"All {pool.size} browsers are leased; acquires wait."
        return {"label": f"Pool {pool.label}", "summary": summary, "values": values}

    return _per_record(await reader.pools(_project(rule)), "pool", check)


async def proxy_unhealthy(reader: Reader, rule: Rule) -> Outcome:
    def check(proxy) -> dict | None:
        if proxy.status != "unavailable":
            return None
        checked = proxy.last_checked.isoformat() if proxy.last_checked else None
        return {
            "label": f"Proxy {proxy.name or proxy.id}",
            "summary": "The last health check found the proxy unavailable.",
            "values": {"status": proxy.status, "type": proxy.type, "last_checked": checked},
        }

    return _per_record(await reader.proxies(), "proxy", check)


async def api_key_expiring(reader: Reader, rule: Rule) -> Outcome:
    horizon = reader.now + timedelta(days=rule.effective_threshold or 0)

    def check(key_record) -> dict | None:
        expires = key_record.expires_at
        if key_record.deleted_at or not isinstance(expires, datetime) or expires > horizon:
            return None
        left = (expires - reader.now).total_seconds() / 86400
        summary = "The key has expired." if left <= 0 else f"The key expires in {max(1, round(left))} day(s)."
        values = {"expires_at": expires.isoformat(), "days_left": round(left, 1)}
        return {"label": f"API key {key_record.label}", "summary": summary, "values": values}

    return _per_record(await reader.api_keys(), "api_key", check)


async def invocation_failed(reader: Reader, rule: Rule) -> Outcome:
    minutes = rule.effective_window or 60
    listed = await reader.invocations(_project(rule), minutes)
    latest: dict[tuple, object] = {}
    failures: dict[tuple, int] = {}
    for inv in listed.items:  # newest first
        if inv.status not in TERMINAL_INVOCATION_STATUSES:
            continue
        action = (inv.app_name or "?", inv.action_name or "?")
        latest.setdefault(action, inv)
        failures[action] = failures.get(action, 0) + (inv.status == "failed")
    findings = []
    keys = {f"invocation:{app}/{action}" for app, action in latest}
    for (app, action), inv in latest.items():
        if inv.status != "failed":
            continue
        reason = inv.status_reason or "no reason given"
        findings.append(
            Finding(
                key=f"invocation:{app}/{action}",
                label=f"{app} · {action}",
                summary=f"The latest invocation failed: {reason}.",
                subject_kind="invocation",
                subject_id=inv.id,
                values={
                    "invocation": inv.id,
                    "status_reason": reason,
                    "failed_in_window": failures[(app, action)],
                },
            )
        )
    return Outcome(findings, _seen(listed, keys))


async def deployment_failed(reader: Reader, rule: Rule) -> Outcome:
    listed = await reader.deployments(_project(rule))
    since = reader.now - timedelta(minutes=rule.effective_window or 1440)
    latest: dict[str, object] = {}
    for d in listed.items:  # newest first
        app = d.app_name or d.entrypoint_rel_path or d.id
        latest.setdefault(app, d)
    findings, keys = [], {f"deployment:{app}" for app in latest}
    for app, d in latest.items():
        when = d.updated_at or d.created_at
        if d.status != "failed" or (isinstance(when, datetime) and when < since):
            continue
        findings.append(
            Finding(
                key=f"deployment:{app}",
                label=f"Deployment of {app}",
                summary=f"The latest deployment failed: {d.status_reason or 'no reason given'}.",
                subject_kind="deployment",
                subject_id=d.id,
                values={"deployment": d.id, "version": d.version, "status_reason": d.status_reason},
            )
        )
    return Outcome(findings, _seen(listed, keys))


async def capacity(reader: Reader, rule: Rule) -> Outcome:
    project = rule.project_id
    svc = reader.svc(project)
    percent = rule.effective_threshold or 90
    org_limits = await reader.call(("org limits",), lambda: projects.get_org_limits(reader.base))
    limits = None
    if svc.project:
        limits = await reader.call(
            ("project limits", svc.project), lambda: projects.get_limits(svc, svc.project)
        )
    sessions, pool_list = await asyncio.gather(reader.sessions(project), reader.pools(project))
    on_demand = sum(1 for s in sessions.items if not getattr(s, "pool", None))
    reserved = sum(p.size for p in pool_list.items)
    used = on_demand + reserved
    cap = (
        limits.max_concurrent_sessions if limits else None
    ) or org_limits.default_project_max_concurrent_sessions
    project_label = svc.project or "the default project"
    findings = []
    floor = "" if sessions.complete and pool_list.complete else " at least"
    if cap and used * 100 >= percent * cap:
        findings.append(
            Finding(
                key=f"capacity:project:{svc.project or ''}",
                label=f"Capacity of {project_label}",
                summary=f"{used}{floor} of {cap} browsers in use ({round(100 * used / cap)}%).",
                subject_kind="project",
                subject_id=svc.project or "",
                values={"used": used, "cap": cap, "sessions": on_demand, "pool_reservations": reserved},
            )
        )
    org_cap, org_used = org_limits.max_concurrent_sessions, org_limits.concurrent_sessions_used
    if org_cap and org_used is not None and org_used * 100 >= percent * org_cap:
        findings.append(
            Finding(
                key="capacity:org",
                label="Capacity of the organization",
                summary=f"{org_used} of the organization's {org_cap} browsers in use.",
                subject_kind="projects",
                values={"used": org_used, "cap": org_cap},
            )
        )
    minutes = rule.effective_window or 10
    start = reader.now - timedelta(minutes=minutes)
    try:
        entries = await reader.call(
            ("audit log 429s", minutes),
            lambda: audit_logs.list_entries(
                reader.base, start=start, end=reader.now, limit=PAGE, method="POST"
            ),
        )
    except Unreadable as exc:
        reader.notes.append(f"creates refused with 429 not counted: {exc}")
        entries = None
    if entries is not None:
        refused = [e for e in entries.items if e.status == 429]
        if refused:
            more = "+" if entries.has_more else ""
            findings.append(
                Finding(
                    key="capacity:refused",
                    label="Creates refused at the cap",
                    summary=f"{len(refused)}{more} creates refused with 429 in the last {minutes} min.",
                    subject_kind="audit_logs",
                    values={
                        "refused": len(refused),
                        "window_minutes": minutes,
                        "paths": sorted({e.path or "" for e in refused})[:5],
                    },
                )
            )
    return Outcome(findings)


# --- telemetry: crashes and error counts, from marks that rounds keep --------------------------------


def _minute(ts_us: int) -> int:
    return int(ts_us // 60_000_000)


def _prune(mark: TelemetryMark, now: datetime) -> None:
    oldest = int(now.timestamp() // 60) - TELEMETRY_KEEP_MINUTES
    mark.minutes = {k: v for k, v in mark.minutes.items() if int(k) >= oldest}
    mark.crashes = [c for c in mark.crashes if c.get("minute", 0) >= oldest][-50:]


def absorb(mark: TelemetryMark, envelopes: list) -> None:
    """Add a page of events to a session's mark: crashes kept, errors and failures counted per minute."""
    for envelope in envelopes:
        event = envelope.event
        if event is None or not isinstance(event.ts, int | float):
            continue
        kind, minute = event.type or "", _minute(event.ts)
        if kind in CRASH_TYPES:
            data = event.fields
            mark.crashes.append(
                {
                    "type": kind,
                    "minute": minute,
                    "ts": int(event.ts),
                    "seq": envelope.seq,
                    "what": str(data.get("service_name") or data.get("process_name") or "")[:100],
                }
            )
        failed = kind in FAILED_TYPES or (
            kind == "network_response"
            and isinstance(event.fields.get("status"), int)
            and event.fields["status"] >= 500
        )
        if kind in ERROR_TYPES or failed:
            counts = mark.minutes.setdefault(str(minute), [0, 0])
            counts[0 if kind in ERROR_TYPES else 1] += 1


async def scan_telemetry(reader: Reader, project_key: str, categories: list[str]) -> dict[str, TelemetryMark]:
    """Read one page of telemetry for the sessions read longest ago (at most ALERTS_TELEMETRY_SESSIONS),
    continue each from its saved cursor, and save the marks. Every active session's mark is returned."""

    async def read() -> dict[str, TelemetryMark]:
        listed = await reader.sessions(project_key)
        active = {s.session_id: s for s in listed.items if s.session_id}
        marks = await sync_to_async(_load_marks)(reader.org_id, project_key, list(active))
        budget = max(0, settings.ALERTS_TELEMETRY_SESSIONS)
        order = sorted(
            active, key=lambda sid: (marks[sid].read_at is not None, marks[sid].read_at or reader.now)
        )
        chosen, behind = order[:budget], []
        svc = reader.svc(project_key)

        async def one(session_id: str) -> None:
            mark = marks[session_id]
            reader.requests += 1
            page = await telemetry_service.list_events(
                svc,
                session_id,
                limit=PAGE,
                offset=mark.offset or None,
                since=None if mark.offset else f"{FIRST_READ_MINUTES}m",
                categories=categories,
            )
            absorb(mark, page.items)
            if page.next_offset not in (None, ""):
                mark.offset = str(page.next_offset)[:200]
            if page.has_more:
                behind.append(session_id)
            mark.read_at = reader.now

        results = await asyncio.gather(*(one(sid) for sid in chosen), return_exceptions=True)
        failed = [(sid, r) for sid, r in zip(chosen, results, strict=True) if isinstance(r, BaseException)]
        for mark in marks.values():
            _prune(mark, reader.now)
        await sync_to_async(_save_marks)(reader.org_id, project_key, marks, list(active))
        if len(active) > len(chosen):
            reader.remarks.append(
                f"telemetry: read {len(chosen)} of {len(active)} sessions this round "
                f"(ALERTS_TELEMETRY_SESSIONS); the others are read in the next rounds"
            )
        if behind:
            reader.remarks.append(
                f"telemetry: {len(behind)} session(s) have more events than one page; read on next round"
            )
        if failed:
            reader.notes.append(
                f"telemetry of {len(failed)} session(s) could not be read: {words(failed[0][1])}"
            )
        if not listed.complete:
            reader.notes.append("telemetry: sessions beyond the page bound were not read")
        return marks

    return await reader.shared(("telemetry", project_key, tuple(categories)), read)


def _load_marks(org_id: int, project_key: str, session_ids: list[str]) -> dict[str, TelemetryMark]:
    found = {
        m.session_id: m
        for m in TelemetryMark.objects.filter(
            org_id=org_id, project_key=project_key, session_id__in=session_ids
        )
    }
    return {
        sid: found.get(sid) or TelemetryMark(org_id=org_id, project_key=project_key, session_id=sid)
        for sid in session_ids
    }


def _save_marks(org_id: int, project_key: str, marks: dict[str, TelemetryMark], active: list[str]) -> None:
    for mark in marks.values():
        if mark.pk is None:
            TelemetryMark.objects.update_or_create(
                org_id=org_id,
                project_key=project_key,
                session_id=mark.session_id,
                defaults={
                    "offset": mark.offset,
                    "read_at": mark.read_at,
                    "crashes": mark.crashes,
                    "minutes": mark.minutes,
                },
            )
        else:
            mark.save(update_fields=["offset", "read_at", "crashes", "minutes"])
    # Sessions that ended are forgotten once nothing they said is within the kept span.
    TelemetryMark.objects.filter(org_id=org_id, project_key=project_key).exclude(
        session_id__in=active
    ).delete()


def telemetry_categories(rules: list[Rule], project_key: str) -> list[str]:
    wanted = {"system"}
    if any(r.kind == kinds.TELEMETRY_ERRORS and r.project_id == project_key for r in rules):
        wanted |= {"console", "network"}
    return sorted(wanted)


async def session_crashed(reader: Reader, rule: Rule, categories: list[str]) -> Outcome:
    marks = await scan_telemetry(reader, rule.project_id, categories)
    since = int(reader.now.timestamp() // 60) - (rule.effective_window or 15)
    findings = []
    for sid, mark in marks.items():
        crashes = [c for c in mark.crashes if c.get("minute", 0) >= since]
        if not crashes:
            continue
        last = crashes[-1]
        what = "was killed for lack of memory" if last["type"] == "system_oom_kill" else "crashed"
        findings.append(
            Finding(
                key=f"session:{sid}",
                label=f"Session {sid}",
                summary=f"The browser {what} ({last['what'] or last['type']}); {len(crashes)} in the window.",
                subject_kind="session",
                subject_id=sid,
                values={"crashes": len(crashes), "last": last["type"], "what": last["what"]},
            )
        )
    return Outcome(findings)


async def telemetry_errors(reader: Reader, rule: Rule, categories: list[str]) -> Outcome:
    marks = await scan_telemetry(reader, rule.project_id, categories)
    window = rule.effective_window or 5
    threshold = rule.effective_threshold or 1
    since = int(reader.now.timestamp() // 60) - window
    errors = failed = 0
    for mark in marks.values():
        for minute, (e, f) in mark.minutes.items():
            if int(minute) > since:
                errors, failed = errors + e, failed + f
    if errors + failed < threshold:
        return Outcome([])
    project_label = rule.project_id or "the default project"
    return Outcome(
        [
            Finding(
                key=f"errors:{rule.project_id}",
                label=f"Sessions of {project_label}",
                summary=(
                    f"{errors} console errors and {failed} failed requests in {window} min "
                    f"(threshold {threshold})."
                ),
                subject_kind="sessions",
                values={"errors": errors, "failed": failed, "window_minutes": window, "threshold": threshold},
            )
        ]
    )


SIMPLE = {
    kinds.AUTH_NEEDS_HUMAN: auth_needs_human,
    kinds.POOL_EXHAUSTED: pool_exhausted,
    kinds.PROXY_UNHEALTHY: proxy_unhealthy,
    kinds.API_KEY_EXPIRING: api_key_expiring,
    kinds.INVOCATION_FAILED: invocation_failed,
    kinds.DEPLOYMENT_FAILED: deployment_failed,
    kinds.CAPACITY: capacity,
}
TELEMETRY = {kinds.SESSION_CRASHED: session_crashed, kinds.TELEMETRY_ERRORS: telemetry_errors}


async def observe(
    base: Service, org_id: int, rules: list[Rule], now: datetime
) -> tuple[dict[int, Outcome], Reader]:
    """Every enabled rule's outcome this round (by rule id), and the reader (requests made, notes)."""
    reader = Reader(base, org_id, now)
    outcomes: dict[int, Outcome] = {}
    service = await probe(reader)
    down = bool(service.findings)
    for rule in rules:
        if rule.kind == kinds.SERVICE:
            outcomes[rule.pk] = service
    others = [r for r in rules if r.kind != kinds.SERVICE]
    if down:
        for rule in others:
            outcomes[rule.pk] = Outcome(
                None, note="not evaluated: the service is unreachable or refuses the key"
            )
        return outcomes, reader

    async def one(rule: Rule) -> Outcome:
        try:
            if rule.kind in TELEMETRY:
                read = TELEMETRY[rule.kind](reader, rule, telemetry_categories(rules, rule.project_id))
            else:
                read = SIMPLE[rule.kind](reader, rule)
            return await asyncio.wait_for(read, settings.ALERTS_ROUND_SECONDS)
        except Unreadable as exc:
            return Outcome(None, note=str(exc))
        except ServiceError as exc:
            return Outcome(None, note=words(exc))
        except TimeoutError:
            return Outcome(
                None, note=f"not decided: its reads took more than {settings.ALERTS_ROUND_SECONDS:g} s"
            )

    results = await asyncio.gather(*(one(rule) for rule in others))
    outcomes.update({rule.pk: result for rule, result in zip(others, results, strict=True)})
    return outcomes, reader
