"""Browser sessions: list, create, the session page with its panes, delete; the telemetry pane's history
and its live stream relayed through ``console.live`` (notes §2, §6).

The telemetry pane opens with the newest events (a ``desc`` page, shown oldest first), then follows the
live stream. The stream URL carries ``last_event_id`` = the newest seq of that history, so the relay
resumes the upstream right after it: nothing is lost between the page load and the stream, and the pane's
JavaScript drops any row whose seq it already shows. Filters live in the URL: ``category`` goes to the
service; ``type`` (the service has no such parameter) is applied here for history and in the browser for
live rows (one upstream per session serves every viewer, whatever their filter).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from urllib.parse import quote, urlencode, urlsplit

from django.contrib import messages
from django.http import HttpResponseRedirect
from django.views.decorators.http import require_http_methods
from django_htmx.http import trigger_client_event

from console import capacity
from console.accounts.audit import audited
from console.browsers import network, presenters
from console.browsers.finding import LEVELS, TARGET, VIEWS, WINDOWS, Finding
from console.browsers.forms import FIELD_MAP, SessionForm
from console.browsers.panes import common, head
from console.live import Channel, Frame, relay_response, service_stream
from console.service import (
    CapReached,
    Invalid,
    NotFound,
    ServiceError,
    browser_replays,
    browsers,
    extensions,
    profiles,
    proxies,
    telemetry,
)
from console.service.contract import CATEGORIES, EVENT_TYPES, SESSION_STATUSES
from console.service.http import Service
from console.service.sse import ServerEvent
from console.usage import refusals
from console.web import bulk, deferred
from console.web.decorators import org_view, require_role
from console.web.forms import apply_service_errors
from console.web.pages import org_reverse
from console.web.paging import pager, paging
from console.web.render import done, render

HISTORY_ROWS = 50  # rows the pane opens with, and each "load older" adds
HISTORY_PAGES = 5  # service pages read at most to fill them (filters may thin pages out)
WINDOW_ROWS = 500  # rows a window with a start shows at most (read forwards from its start)
WINDOW_PAGES = 10  # service pages read at most to fill them
MAX_ROWS = 1000  # rows the browser keeps before trimming the oldest
# A cursor is the service's opaque X-Next-Offset: we only know it is a short token, never free text.
CURSOR = re.compile(r"[A-Za-z0-9._~-]{1,200}")
BAD_CURSOR = (
    "That link is not a position in this session's history (or it has expired); showing the newest events."
)
# A tag filter: the key up to the first ":" or "=", the value after it.
TAG_FILTER = re.compile(r"^(?P<key>[^:=]*[^:=\s][^:=]*)[:=](?P<value>.*)$", re.S)


def _tag_filters(request) -> dict[str, str]:
    """``?tag=team:checkout`` or ``?tag=team=checkout`` (repeatable; the create form and the tag chips
    write ``key=value``) → ``{"team": "checkout"}``; one it cannot read is left out, and a page said so."""
    tags = {}
    for item in request.GET.getlist("tag"):
        found = TAG_FILTER.match(item)
        if found:
            tags[found["key"].strip()] = found["value"].strip()
        elif item.strip() and not request.htmx:  # said once, on the page itself, not on each refresh
            messages.warning(
                request, f"Tag filter “{item}” is not key=value (or key:value): it was left out."
            )
    return tags


def _with(request, **changes) -> str:
    """The current list URL with some parameters changed (None removes one); paging restarts."""
    params = request.GET.copy()
    for key in ("offset", deferred.PART_PARAM, deferred.WAIT_PARAM):
        params.pop(key, None)
    for key, value in changes.items():
        params.pop(key, None)
        if value is not None:
            params.setlist(key, value if isinstance(value, list) else [value])
    query = urlencode(sorted(params.lists()), doseq=True)
    return f"{request.path}?{query}" if query else request.path


@require_http_methods(["GET"])
@org_view("viewer")
async def session_list(request):
    page_params = paging(request)
    query = request.GET.get("q", "").strip()
    status = request.GET.get("status", "active")
    if status not in SESSION_STATUSES:
        status = "active"
    tags = _tag_filters(request)
    chosen = [f"{k}:{v}" for k, v in tags.items()]
    context = {
        "query": query,
        "status": status,
        "statuses": SESSION_STATUSES,
        "active_tags": [
            {"key": k, "value": v, "remove_url": _with(request, tag=[t for t in chosen if t != f"{k}:{v}"])}
            for k, v in tags.items()
        ],
    }

    async def load() -> dict:
        page = await browsers.list_sessions(
            request.service,
            limit=page_params.limit,
            offset=page_params.offset,
            query=query or None,
            status=status,
            tags=tags,
        )
        rows = [
            {
                "session": s,
                "uptime": presenters.duration(s.uptime),
                # One line each (the full text on hover): the list keeps a row per line.
                "browser": presenters.browser_summary(s),
                "uses": presenters.uses_summary(s),
                "more_tags": max(0, len(s.tags or {}) - 2),
                "tags": [
                    {"key": k, "value": v, "url": _with(request, tag=sorted({*chosen, f"{k}:{v}"}))}
                    for k, v in (s.tags or {}).items()
                ],
            }
            for s in page.items
        ]
        return {"page": page, "pager": pager(request, page_params, page), "rows": rows}

    return await deferred.list_page(request, "browsers/list.html", "browsers-table", context, load)


# Create -------------------------------------------------------------------------------------------


async def _choices(svc: Service) -> dict:
    """Profiles, proxies and extensions to pick from (one page each; the form still works without)."""
    found: dict = {"profiles": [], "proxies": [], "extensions": []}
    for key, call in (
        ("profiles", profiles.list_profiles),
        ("proxies", proxies.list_proxies),
        ("extensions", extensions.list_extensions),
    ):
        with contextlib.suppress(ServiceError):
            found[key] = (await call(svc, limit=100)).items
    return found


@require_http_methods(["GET", "POST"])
@org_view("operator")
async def session_create(request):
    choices = await _choices(request.service)
    form = SessionForm(**choices)
    if request.method == "POST":
        form = SessionForm(request.POST, **choices)
        if form.is_valid():
            try:
                async with audited(request, "browser.create") as entry:
                    session = await browsers.create_session(request.service, **form.body())
                    entry.target_id = session.session_id
                    entry.detail = (
                        f"name={session.name or ''} headless={session.headless} region={session.region}"
                    )
            except Invalid as exc:
                apply_service_errors(form, exc, FIELD_MAP)
            except CapReached as exc:
                form.add_error(None, await refusals.explain(request, exc))
            except ServiceError as exc:
                if exc.status != 409:
                    raise
                form.add_error("name", exc.message)
            else:
                messages.success(request, f"Browser session “{session.label}” started.")
                return done(request, org_reverse(request, "browsers:detail", session_id=session.session_id))
    # What a new session takes from: the same figures and words as the overview and the pools page.
    context = {
        "form": form,
        "use": await capacity.measure_quietly(request),
        "capacity_links": capacity.links(request),
    }
    return render(request, "browsers/create.html", context, partial="browser-create")


# Session page -------------------------------------------------------------------------------------


async def _history(
    svc: Service, session_id: str, finding: Finding, before: str | None
) -> tuple[list[presenters.Row], str | None, bool]:
    """Up to HISTORY_ROWS matching rows ending at ``before`` (or the window's end, or the newest), oldest
    first, the cursor for older ones, and whether the read stopped at its bound with more to read. The
    service filters by category and type (SDK 0.131) within each page, the console by the rest
    (console/browsers/finding.py), so pages may be thin.

    A window with a start is read forwards from it (a descending read takes no ``since``): its first
    WINDOW_ROWS matching rows, no "load older"."""
    found: list[presenters.Row] = []
    forwards = finding.service_since is not None and before is None
    cursor = before
    cut = False
    for _ in range(WINDOW_PAGES if forwards else HISTORY_PAGES):
        page = await telemetry.list_events(
            svc,
            session_id,
            order="asc" if forwards else "desc",
            limit=100,
            offset=cursor,
            since=finding.service_since if forwards else None,
            until=finding.service_until,
            categories=finding.service_categories or None,
            types=finding.types or None,
        )
        for envelope in page.items:
            row = presenters.row(envelope)
            if not finding.local or finding.keeps(envelope, row):
                found.append(row)
        cursor = page.next_offset if page.has_more else None
        if cursor is None:
            break
        if len(found) >= (WINDOW_ROWS if forwards else HISTORY_ROWS):
            cut = forwards
            break
    else:
        cut = forwards and cursor is not None
    if forwards:
        return found[:WINDOW_ROWS], None, cut or len(found) > WINDOW_ROWS
    # A page may take the count past HISTORY_ROWS: all of it is shown, since the next cursor only
    # reaches below the whole page.
    return list(reversed(found)), (str(cursor) if cursor is not None else None), False


def _chips(finding: Finding, base: str) -> list[dict]:
    chips = []
    for category in CATEGORIES:
        on = category in finding.categories
        toggled = (
            tuple(c for c in finding.categories if c != category) if on else (*finding.categories, category)
        )
        chips.append({"name": category, "on": on, "url": finding.url(base, categories=toggled, event=None)})
    return chips


def _level_chips(finding: Finding, base: str) -> list[dict]:
    return [
        {
            "name": level,
            "on": finding.level == level,
            "url": finding.url(base, level="" if finding.level == level else level, event=None),
        }
        for level in LEVELS
    ]


def _views(finding: Finding, base: str) -> list[dict]:
    labels = {"events": "Events", "network": "Network", "console": "Console"}
    return [
        {
            "name": view,
            "label": labels[view],
            "on": finding.view == view,
            "url": finding.url(base, view=view, event=None),
        }
        for view in VIEWS
    ]


async def _tabs(svc: Service, session_id: str, chosen: str) -> list[dict]:
    """The browser tabs (CDP page targets) the session's recent page events name, newest first, with the
    last URL each navigated to and the title it opened with; the chosen one is listed even when the read did
    not reach it. None when the events cannot be read (the filter still applies)."""
    try:
        page = await telemetry.list_events(
            svc, session_id, order="desc", limit=100, types=["page_navigation", "page_tab_opened"]
        )
    except ServiceError:
        page = None
    tabs: dict[str, dict] = {}
    for envelope in page.items if page else []:
        data = envelope.event.fields if envelope.event else {}
        target = data.get("target_id")
        if not isinstance(target, str) or not TARGET.fullmatch(target):
            continue
        tab = tabs.setdefault(target, {"id": target, "url": "", "title": ""})
        tab["url"] = tab["url"] or str(data.get("url") or "")
        if envelope.kind == "page_tab_opened":
            tab["title"] = str(data.get("title") or "")
    if chosen and chosen not in tabs:
        tabs[chosen] = {"id": chosen, "url": "", "title": ""}
    return list(tabs.values())


async def _nothing() -> list:
    return []


async def _replays(svc: Service, session_id: str) -> list[dict]:
    """The session's finished replays and their times, for "open in replay" (none if they cannot be read)."""
    try:
        found = await browser_replays.list_replays(svc, session_id)
    except ServiceError:
        return []
    return [
        {"id": r.replay_id, "start": r.started_at.isoformat(), "end": r.finished_at.isoformat()}
        for r in found
        if r.started_at is not None and r.finished_at is not None
    ]


def _where(url: str) -> dict:
    """A request's URL split for its row: the host (muted) and the path, the part that tells rows apart."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return {}
    if not parts.netloc:
        return {}
    path = parts.path or "/"
    return {"host": parts.netloc, "path": path + (f"?{parts.query}" if parts.query else "")}


async def _network_context(request, session: browsers.Session, finding: Finding) -> dict:
    requests, cut = await network.read(request.service, session, finding)
    shown = network.keep(requests, finding)
    placed, span = network.bars(shown)
    sid = session.session_id
    detail = org_reverse(request, "browsers:request", session_id=sid, request_key="KEY")
    query = finding.query(view=None, event=None)
    return {
        "requests": [
            {
                "r": r,
                "bar": bar,
                "size": network.size_label(r.size),
                "duration": network.ms_label(r.duration_ms),
                "url": detail.replace("KEY", quote(r.key, safe="")) + (f"?{query}" if query else ""),
                **_where(r.url),
            }
            for r, bar in placed
        ],
        "request_count": len(requests),
        "network_cut": cut,
        "span": network.ms_label(span),
        "har_url": finding.url(
            org_reverse(request, "browsers:telemetry-har", session_id=sid), view=None, event=None
        ),
    }


async def _pane_context(request, session: browsers.Session, before: str | None = None) -> dict:
    finding = Finding.from_request(request)
    cursor_notice = ""
    if before is not None and not CURSOR.fullmatch(before):
        before, cursor_notice = None, BAD_CURSOR
    sid = session.session_id
    base = org_reverse(request, "browsers:detail", session_id=sid)
    rows: list[presenters.Row] = []
    older = None
    window_cut = False
    extra: dict = {}
    # The tabs and the replays are read beside the events (each says nothing when it cannot be read): the
    # screen pane loads once this part is in, so the part waits for the slowest read, not for their sum.
    side = asyncio.gather(
        _tabs(request.service, sid, finding.target),
        _replays(request.service, sid) if finding.view != "network" else _nothing(),
    )
    try:
        if finding.view == "network":
            extra = await _network_context(request, session, finding)
        else:
            try:
                rows, older, window_cut = await _history(request.service, sid, finding, before)
            except Invalid:
                if before is None:
                    raise
                # The cursor is opaque: only the service can tell it is not one of its own (or has expired).
                before, cursor_notice = None, BAD_CURSOR
                rows, older, window_cut = await _history(request.service, sid, finding, None)
        extra["tabs"], replays = await side
    finally:
        side.cancel()
    extra["replays_json"] = json.dumps(replays)
    live = not session.ended and not before and not finding.windowed and finding.view != "network"
    last_seq = max((r.seq for r in rows if r.seq is not None), default=None)
    stream_url = org_reverse(request, "browsers:telemetry-stream", session_id=sid)
    if last_seq is not None:
        stream_url += f"?last_event_id={last_seq}"
    older_url = None
    if older is not None:
        older_url = org_reverse(
            request,
            "browsers:telemetry",
            session_id=sid,
            query=urlencode([("before", older), *finding.params(event=None)]),
        )
    return {
        "session": session,
        "finding": finding,
        "rows": rows,
        "older_url": older_url,
        "older_page_url": older_url and older_url.replace("/telemetry/?", "/?", 1),
        "stream_url": stream_url,
        "live": live,
        "categories": finding.categories,
        "types": finding.types,
        "all_types": list(EVENT_TYPES),
        "chips": _chips(finding, base),
        "level_chips": _level_chips(finding, base),
        "views": _views(finding, base),
        "windows": WINDOWS,
        "page_url": base,
        "live_url": finding.url(base, window="", since=None, until=None, event=None),
        "clear_filters_url": finding.url(
            base,
            categories=(),
            types=(),
            text="",
            errors=False,
            level="",
            target="",
            window="",
            since=None,
            until=None,
            event=None,
        ),
        "filtered": finding.filtered,
        "window_cut": window_cut,
        "window_rows": WINDOW_ROWS,
        "max_rows": MAX_ROWS,
        "before": before,
        "cursor_notice": cursor_notice,
        **extra,
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def session_detail(request, session_id: str):
    """The session page: its frame at once, the session and its telemetry after (console/web/deferred.py);
    with ``HX-Target: telemetry-pane`` (filters changed) the pane alone. The screen is the console's own
    (console/browsers/panes/screen.py): the service's live-view URLs never reach the page."""

    async def detail() -> dict:
        session = await common.get_session(request, session_id)
        pane = await _pane_context(request, session, request.GET.get("before") or None)
        return {**pane, **head.context(session)}

    if request.htmx and request.htmx.target == "telemetry-pane":
        session = await common.get_session(request, session_id)
        pane = await _pane_context(request, session, request.GET.get("before") or None)
        return render(request, "browsers/_telemetry.html#telemetry-pane", pane)
    parts = [deferred.Part("session-detail", detail)]
    return await deferred.page(request, "browsers/detail.html", {"session_id": session_id}, parts)


@require_http_methods(["GET"])
@org_view("viewer")
async def telemetry_history(request, session_id: str):
    """Older rows for "load older" (``before`` = the cursor); without htmx, the page ending there."""
    if not request.htmx:
        return HttpResponseRedirect(
            org_reverse(request, "browsers:detail", session_id=session_id) + _query(request)
        )
    session = await common.get_session(request, session_id)
    context = await _pane_context(request, session, request.GET.get("before") or None)
    return render(request, "browsers/_telemetry.html#telemetry-older", context)


def _query(request) -> str:
    return f"?{request.GET.urlencode()}" if request.GET else ""


# Live stream --------------------------------------------------------------------------------------


def _render_event(event) -> Frame | None:
    if not isinstance(event, ServerEvent):
        return None
    envelope = telemetry.envelope_from_event(event)
    if envelope is None:
        return None
    return Frame(html=presenters.row(envelope).markup(), event="telemetry", id=envelope.seq)


@require_http_methods(["GET"])
@org_view("viewer")
async def telemetry_stream(request, session_id: str):
    # A plain Service (not the request's lazy object): the upstream outlives this request.
    svc: Service = request.service.with_project(request.service.project)

    async def still_running() -> bool:
        # A clean close means the session ended, unless it is still there (then a proxy cut us off).
        try:
            return not (await browsers.get_session(svc, session_id)).ended
        except ServiceError:
            return False

    channel = Channel(
        key=("telemetry", request.org.pk, svc.project, session_id),
        open=service_stream(svc, telemetry.stream_path(session_id)),
        render=_render_event,
        resumable=True,
        should_reconnect=still_running,
        ended_message="The session has ended: no more events will arrive.",
    )
    return relay_response(request, channel)


# Actions ------------------------------------------------------------------------------------------


@require_http_methods(["POST"])
@org_view("operator")
async def telemetry_enable(request, session_id: str):
    """Turn capture on (operational categories plus console, network and page) for a session without it."""
    session = await common.get_session(request, session_id, include_deleted=False)
    body = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}
    try:
        async with audited(request, "browser.telemetry", target_id=session_id, detail="enabled"):
            await browsers.update_session(request.service, session_id, telemetry=body)
    except (Invalid, NotFound) as exc:
        messages.error(request, f"Telemetry could not be turned on: {exc.message}")
    else:
        messages.success(request, f"Telemetry is on for “{session.label}”.")
    return done(request, org_reverse(request, "browsers:detail", session_id=session_id))


@require_http_methods(["GET", "POST"])
@org_view("operator")
async def session_delete(request, session_id: str):
    session = await common.get_session(request, session_id)
    if request.method == "POST":
        require_role(request, "operator")
        async with audited(request, "browser.delete", target_id=session_id, detail=session.name or ""):
            if not session.ended:
                # NotFound: it ended on its own meanwhile, the outcome the operator wanted.
                with contextlib.suppress(NotFound):
                    await browsers.delete_session(request.service, session_id)
        messages.success(request, f"Browser session “{session.label}” ended.")
        return done(request, org_reverse(request, "browsers:list"))
    return render(request, "browsers/delete.html", {"session": session})


# Delete several -----------------------------------------------------------------------------------


async def _check_for_delete(request, selection: bulk.Selection) -> None:
    """Each chosen id as the service knows it in this project: only those are ever sent a DELETE."""

    async def check(row: bulk.Row) -> None:
        try:
            session = await browsers.get_session(request.service, row.id, include_deleted=True)
        except NotFound:
            row.state, row.message = bulk.SKIPPED, "Not a session of this project: nothing was sent."
            return
        except ServiceError as exc:
            row.state, row.message = bulk.FAILED, f"Could not be checked: {exc.message}"
            return
        if session.session_id != row.id:  # the service also finds sessions by name: ids only here
            row.state, row.message = bulk.SKIPPED, "Not a session of this project: nothing was sent."
            return
        row.label, row.record = session.label, session
        if session.ended:
            row.state, row.message = bulk.SKIPPED, "Already ended: nothing to do."

    await bulk.each(selection.todo, check)


async def _delete_one(request, row: bulk.Row) -> None:
    try:
        detail = f"{row.label} (bulk)"
        async with audited(request, "browser.delete", target_id=row.id, detail=detail) as entry:
            try:
                await browsers.delete_session(request.service, row.id)
            except NotFound:
                # It ended on its own since it was checked: the outcome the operator wanted.
                entry.detail = f"{row.label} (bulk; had already ended)"
                row.state, row.message = bulk.OK, "Had already ended."
                return
    except ServiceError as exc:
        row.state, row.message = bulk.FAILED, exc.message or f"The service answered {exc.status}."
    else:
        row.state, row.message = bulk.OK, "Ended."


@require_http_methods(["POST"])
@org_view("operator")
async def session_delete_selected(request):
    """The ticked sessions of the list: a confirmation naming each, then one DELETE (and audit row) each."""
    selection = bulk.chosen(request.POST.getlist("session_id"), "session")
    confirmed = False
    if not selection.error:
        await _check_for_delete(request, selection)
        if bulk.is_confirmed(request) and selection.todo:
            await bulk.each(selection.todo, lambda row: _delete_one(request, row))
            confirmed = True
    context = {
        "selection": selection,
        "confirmed": confirmed,
        "list_url": org_reverse(request, "browsers:list"),
    }
    response = render(request, "browsers/delete_selected.html", context, partial="sessions-bulk-delete")
    if confirmed and selection.done:
        trigger_client_event(response, "sessions-changed")
    return response
