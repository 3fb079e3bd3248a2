"""One capacity model: what a project and the organization use against their caps (issue 23).

What the service counts against ``max_concurrent_sessions`` (notes §1, docs/service-changes.md "Caps"):
- every active **on-demand** session, running or in standby (a session whose browser sleeps still holds its
  slot: the record keeps it active until it is deleted or times out);
- every pool's **size**, not its leased count: a pool of 40 reserves 40 even while idle. A browser leased
  from a pool is part of its pool's size, so a leased session is never counted a second time.
A project's cap is its own ``max_concurrent_sessions``, else the organization's
``default_project_max_concurrent_sessions``, else the organization's limit ``max_concurrent_sessions``; the
organization's use is ``concurrent_sessions_used`` of ``GET /org/limits`` against that limit. Invocations
(queued and running) count against the project's ``max_concurrent_invocations``.

Every place that shows capacity measures here and says it with the words below (``Capacity.headline``,
``.breakdown``, ``.org_line``, ``.invocations_line``) through ``templates/capacity/``: the overview, the
pools page, each project's page and the projects list, the new-session form, the cap-hit message, the
wall, the metrics and the usage sampler. Whether a session runs or sleeps comes from the record when the
service says it (the sandbox's ``sandbox.browser``); otherwise every active session counts as running.

Lists are walked within bounds (``MAX_PAGES`` pages of 100): past that a figure is a floor, and
``complete`` is False ("at least").
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join

from console.service import CapReached, Service, ServiceError, browsers, invocations, pools, projects
from console.service.pagination import walk

MAX_PAGES = 10
COUNT_LIMIT = 100
# A share of the cap from which the figure is drawn as a warning (and, at the cap, as full).
WARN_AT = 0.8

# Where a project's cap comes from, in words.
CAP_SOURCES = {
    "project": "this project's own cap",
    "default": "the organization's default cap per project",
    "org": "the organization's limit",
    "": "no cap",
}


@dataclass(frozen=True)
class Capacity:
    """One project's use of its concurrency cap, and the organization's of its limit, at one moment."""

    project_id: str | None = None
    project_name: str = ""
    on_demand: int = 0  # active sessions not leased from a pool
    running: int = 0  # of those, with a running browser (or whose state the service does not say)
    standby: int = 0  # of those, in standby (their browser sleeps; the slot stays taken)
    headless: int = 0  # of those, headless ones
    pooled: int = 0  # the sum of the pools' sizes
    pool_acquired: int = 0
    pool_available: int = 0
    pool_count: int = 0
    complete: bool = True  # False: a list was cut at its bound, the figures are floors
    invocations_running: int = 0
    invocations_queued: int = 0
    invocations_complete: bool = True
    cap: int | None = None
    cap_source: str = ""  # project | default | org | "" (no cap)
    invocation_cap: int | None = None
    org_used: int | None = None  # as the service says (None: it does not)
    org_cap: int | None = None
    session_ids: tuple[str, ...] = field(default=(), repr=False)
    pools: tuple[pools.BrowserPool, ...] = field(default=(), repr=False)

    # Figures ------------------------------------------------------------------------------------------

    @property
    def used(self) -> int:
        return self.on_demand + self.pooled

    @property
    def pool_warming(self) -> int:
        return max(0, self.pooled - self.pool_acquired - self.pool_available)

    @property
    def left(self) -> int | None:
        return None if self.cap is None else max(0, self.cap - self.used)

    @property
    def over(self) -> int:
        return 0 if self.cap is None else max(0, self.used - self.cap)

    @property
    def permille(self) -> int:
        return _permille(self.used, self.cap)

    @property
    def pooled_permille(self) -> int:
        """The pools' share of the bar (drawn first), in thousandths of the cap."""
        return _permille(self.pooled, self.cap)

    @property
    def on_demand_permille(self) -> int:
        """The on-demand sessions' share, drawn after the pools' (the two never pass the bar's end)."""
        return max(0, self.permille - self.pooled_permille)

    @property
    def org_permille(self) -> int:
        return _permille(self.org_used or 0, self.org_cap)

    @property
    def state(self) -> str:
        """``ok``, ``warn`` (from 80 % of the cap) or ``full`` (at or over it)."""
        return _state(self.used, self.cap)

    @property
    def org_state(self) -> str:
        return _state(self.org_used or 0, self.org_cap) if self.org_used is not None else "ok"

    @property
    def at_cap(self) -> bool:
        return self.state == "full" or self.org_state == "full"

    @property
    def invocations(self) -> int:
        return self.invocations_running + self.invocations_queued

    # Words (the same everywhere) ----------------------------------------------------------------------

    @property
    def floor(self) -> str:
        return "" if self.complete else "at least "

    @property
    def headline(self) -> str:
        """``52 of 100 concurrent sessions in use in this project``."""
        where = "in this project" if self.project_name == "" else f"in project {self.project_name}"
        if self.cap is None:
            return f"{self.floor}{self.used} concurrent session{_s(self.used)} in use {where} (no cap)"
        return f"{self.floor}{self.used} of {self.cap} concurrent sessions in use {where}"

    @property
    def cap_line(self) -> str:
        """``Cap: this project's own cap; 48 left.``"""
        if self.cap is None:
            return "No concurrency cap applies."
        if self.over:
            return f"Cap: {CAP_SOURCES[self.cap_source]}; over it by {self.over}."
        return (
            f"Cap: {CAP_SOURCES[self.cap_source]}; {'at most ' if not self.complete else ''}{self.left} left."
        )

    @property
    def breakdown(self) -> str:
        """``8 on-demand sessions (5 running, 3 in standby) and 44 reserved by 3 pools (10 acquired, 30
        idle, 4 warming)``."""
        sessions = f"{self.on_demand} on-demand session{_s(self.on_demand)}"
        if self.on_demand:
            sessions += f" ({self.running} running, {self.standby} in standby)"
        pooled = f"{self.pooled} reserved by {self.pool_count} pool{_s(self.pool_count)}"
        if self.pooled:
            pooled += (
                f" ({self.pool_acquired} acquired, {self.pool_available} idle, {self.pool_warming} warming)"
            )
        return f"{sessions} and {pooled}"

    @property
    def org_line(self) -> str:
        """``Organization: 60 of 500 concurrent sessions in use (its limit), every project together.``"""
        if self.org_used is None:
            if self.org_cap is None:
                return "Organization: no limit, and the service does not say how many are in use."
            return f"Organization: a limit of {self.org_cap} concurrent sessions (its use is not known)."
        if self.org_cap is None:
            return f"Organization: {self.org_used} concurrent sessions in use in all projects (no limit)."
        return f"Organization: {self.org_used} of {self.org_cap} concurrent sessions in use in all projects."

    @property
    def invocations_line(self) -> str:
        more = "" if self.invocations_complete else "at least "
        line = f"Invocations: {more}{self.invocations_running} running, {self.invocations_queued} queued"
        if self.invocation_cap:
            return f"{line} (cap {self.invocation_cap})."
        return f"{line} (no project cap)."

    @property
    def short(self) -> str:
        """One line for a bar or a tile: ``52 of 100 in use`` / ``52 in use (no cap)``."""
        if self.cap is None:
            return f"{self.floor}{self.used} in use (no cap)"
        return f"{self.floor}{self.used} of {self.cap} in use"


def _url(request, name: str, query: str = "", **kwargs) -> str:
    # console.web.pages.org_reverse, without its import: the error middleware draws refusals from here,
    # and console.web.pages imports the middleware (through deferred).
    url = reverse(name, kwargs={"org_slug": request.org.slug, **kwargs})
    return f"{url}?{query}" if query else url


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _permille(value: int, of: int | None) -> int:
    return min(1000, round(1000 * value / of)) if of else 0


def _state(value: int, of: int | None) -> str:
    if not of:
        return "ok"
    if value >= of:
        return "full"
    return "warn" if value >= WARN_AT * of else "ok"


async def _none():
    return None


DEFAULT_PROJECT = "default"


async def scope_project(svc: Service) -> str | None:
    """The project calls without a project header work in, so its own cap is the one counted: the key's
    scope (``GET /auth/context``), else the project named "default" (where the service puts what is
    created without a header); None when neither says (then the org's default cap per project applies)."""
    context = await projects.get_auth_context(svc)
    if context.project_id:
        return context.project_id
    named = await projects.list_projects(svc, name=DEFAULT_PROJECT, limit=1)
    return named.items[0].id if named.items else None


async def measure(svc: Service, *, project_name: str = "", invocations_too: bool = True) -> Capacity:
    """Measure the project ``svc`` works in (its ``project``; the default project when None).

    ``project_name``: how to name it ("" for "this project"). Raises what the client raises.
    """
    project = svc.project or await scope_project(svc)
    reads = [
        walk(
            svc,
            "/browsers",
            browsers.Session,
            limit=COUNT_LIMIT,
            max_pages=MAX_PAGES,
            params={"status": "active"},
        ),
        pools.pooled_capacity(svc),
        projects.get_org_limits(svc),
        projects.get_limits(svc, project) if project else _none(),
    ]
    if invocations_too:
        reads += [
            invocations.list_invocations(svc, limit=COUNT_LIMIT, status="running"),
            invocations.list_invocations(svc, limit=COUNT_LIMIT, status="queued"),
        ]
    found = await asyncio.gather(*reads)
    sessions, pooled, org_limits, limits = found[:4]
    on_demand = [s for s in sessions.items if s.pool is None and not s.ended]
    standby = sum(1 for s in on_demand if s.sandbox is not None and s.sandbox.browser == "standby")
    if limits is not None and limits.max_concurrent_sessions:
        cap, source = limits.max_concurrent_sessions, "project"
    elif org_limits.default_project_max_concurrent_sessions:
        cap, source = org_limits.default_project_max_concurrent_sessions, "default"
    elif org_limits.max_concurrent_sessions:
        cap, source = org_limits.max_concurrent_sessions, "org"
    else:
        cap, source = None, ""
    running_inv = queued_inv = None
    if invocations_too:
        running_inv, queued_inv = found[4:]
    return Capacity(
        project_id=project,
        project_name=project_name,
        on_demand=len(on_demand),
        running=len(on_demand) - standby,
        standby=standby,
        headless=sum(1 for s in on_demand if s.headless),
        pooled=pooled.size,
        pool_acquired=pooled.acquired,
        pool_available=pooled.available,
        pool_count=pooled.counted,
        complete=sessions.complete and pooled.complete,
        invocations_running=len(running_inv.items) if running_inv else 0,
        invocations_queued=len(queued_inv.items) if queued_inv else 0,
        invocations_complete=not (
            (running_inv and running_inv.has_more) or (queued_inv and queued_inv.has_more)
        ),
        cap=cap,
        cap_source=source,
        invocation_cap=limits.max_concurrent_invocations if limits is not None else None,
        org_used=org_limits.concurrent_sessions_used,
        org_cap=org_limits.max_concurrent_sessions,
        session_ids=tuple(s.session_id for s in on_demand),
        pools=pooled.pools,
    )


async def measure_projects(svc: Service, project_list, *, at_once: int = 4) -> dict[str, Capacity | None]:
    """Each project's capacity (by id), ``at_once`` projects at a time; None for one that could not be read
    (the others still show). Invocations are left out: a list's bar shows sessions against the cap."""
    gate = asyncio.Semaphore(at_once)

    async def one(project) -> Capacity | None:
        async with gate:
            try:
                return await measure(
                    svc.with_project(project.id),
                    project_name=project.name or project.id,
                    invocations_too=False,
                )
            except ServiceError:  # one project's failure is its row's, not the page's
                return None

    found = await asyncio.gather(*(one(p) for p in project_list))
    return {p.id: c for p, c in zip(project_list, found, strict=True)}


def links(request) -> dict:
    """Where the figures come from, for the words' links: the active sessions, the pools, the limits of the
    project the request works in, the usage over time."""
    try:
        usage = _url(request, "usage:index")
    except NoReverseMatch:
        usage = ""
    return {
        "sessions": _url(request, "browsers:list", "status=active"),
        "pools": _url(request, "pools:list"),
        "limits": limits_url(request),
        "usage": usage,
        "max_items": MAX_PAGES * COUNT_LIMIT,
    }


async def for_page(request, **kwargs) -> dict:
    """What ``templates/capacity/_summary.html`` needs, for the project the request works in."""
    return {"use": await measure(request.service, **kwargs), "capacity_links": links(request)}


def limits_url(request) -> str:
    """The limits panel of the project the request works in (the project list when it is not known)."""
    project = getattr(getattr(request, "service", None), "project", None)
    slug = request.org.slug
    if project:
        return (
            reverse("projects:detail", kwargs={"org_slug": slug, "project_id": project}) + "#project-limits"
        )
    return reverse("projects:list", kwargs={"org_slug": slug})


async def measure_quietly(request) -> Capacity | None:
    """The capacity for a form's side or a refusal's explanation: None when it cannot be read (the form
    and the message still stand without it)."""
    try:
        return await measure(request.service)
    except ServiceError:
        return None


def refusal(request, error: CapReached, use: Capacity | None = None) -> str:
    """Why a create was refused at a cap (safe HTML): one sentence in the model's words (not the service's
    message beside ours), what uses the capacity (links), and what to do."""
    if error.cap == "max_concurrent_invocations":
        said = (
            f" ({use.invocations_line.removeprefix('Invocations: ').rstrip('.')})" if use is not None else ""
        )
        return format_html(
            "This project runs as many invocations as its cap allows{}. Using it: "
            '<a href="{}">running invocations</a> and <a href="{}">queued ones</a>. Wait for one to finish, '
            'or raise the cap on <a href="{}">the project&rsquo;s limits</a>.',
            said,
            _url(request, "invocations:list", "status=running"),
            _url(request, "invocations:list", "status=queued"),
            limits_url(request),
        )
    sessions_url = _url(request, "browsers:list", "status=active")
    pools_url = _url(request, "pools:list")
    if use is None:
        sentence = "This project is at its cap on concurrent sessions."
        using = [(sessions_url, "on-demand sessions"), (pools_url, "pools")]
    else:
        if use.org_state == "full" and use.state != "full":
            sentence = f"The organization is at its limit: {use.org_line.removeprefix('Organization: ')}"
        elif use.state == "full":
            sentence = f"This project is at its cap: {use.short} ({use.breakdown})."
        else:  # what was asked for (a pool's size) is more than what is left
            sentence = f"That would go over this project's cap: {use.short} ({use.breakdown})."
        using = [
            (sessions_url, f"{use.on_demand} on-demand session{_s(use.on_demand)}"),
            (pools_url, f"{use.pool_count} pool{_s(use.pool_count)} reserving {use.pooled}"),
        ]
    return format_html(
        '{} Using it: {}. End a session, shrink or delete a pool, or raise the cap on <a href="{}">the '
        "project&rsquo;s limits</a>.",
        sentence,
        format_html_join(" and ", '<a href="{}">{}</a>', using),
        limits_url(request),
    )
