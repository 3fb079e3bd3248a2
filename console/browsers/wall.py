"""The session wall: live thumbnails of many sessions at once (``/o/<org>/browsers/wall/``).

Filters as in the sessions list (status, tags, search) plus pool and profile, which the service cannot
filter on: they are applied here to the page read (``WALL_SCAN`` sessions at most). The thumbnails come
from the same one-upstream-per-session relay as the session page's screen (console.browsers.panes.screen),
at most ``THUMBNAIL_FPS`` frames a second each, all in ONE event stream per wall (browsers open at most six
connections per host: one stream per tile would starve the rest). Sessions the console cannot relay
(simulated, no usable ``cdp_ws_url``) show their name and status without a picture.

A live tile holds a CDP connection, and a session with one keeps its browser awake (at the service, a
browser slot): the wall keeps live only what its viewer needs. The page asks for the tiles on screen (and
none while its tab is hidden), at most ``WALL_LIVE_TILES``; the stream grants at most that many sessions
per viewer (all their walls together) and ``WALL_LIVE_TILES_PER_ORG`` per org (``relay.Allowance``, per
console process). A paused tile keeps its last picture and says why; one the service refused, or that
ended, says so in words, with a retry.

Badges: a tile is flagged when its session's telemetry has a console error or a failed request in the
last minute. The badges part asks the service once per tile (one page of the newest error-like events,
filtered by type on the service) and refreshes every ``BADGE_SECONDS`` while the tab is visible.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.http import Http404
from django.views.decorators.http import require_http_methods

from console import capacity
from console.browsers import presenters
from console.browsers.panes import screen
from console.browsers.views import _tag_filters
from console.live import screen as relay
from console.service import ServiceError, browsers, telemetry
from console.service.contract import SESSION_STATUSES
from console.web.decorators import org_view
from console.web.pages import org_reverse
from console.web.render import render

MAX_TILES = 24
WALL_SCAN = 100
THUMBNAIL_FPS = 1.0
BADGE_SECONDS = 15
BADGE_TIMEOUT = 5.0
RECENT_SECONDS = 60

allowance = relay.Allowance()
WALL_KEY = re.compile(r"[A-Za-z0-9]{8,40}")  # a page's name for itself (static/js/screen.js)


def live_tiles() -> tuple[int, int]:
    """(live tiles per viewer, per org) of this process's walls."""
    return int(getattr(settings, "WALL_LIVE_TILES", 4)), int(getattr(settings, "WALL_LIVE_TILES_PER_ORG", 8))


def _matches(session: browsers.Session, pool: str, profile: str) -> bool:
    if pool and not (session.pool and pool in (session.pool.id, session.pool.name)):
        return False
    return not profile or bool(session.profile and profile in (session.profile.id, session.profile.name))


async def _sessions(request) -> tuple[list[browsers.Session], dict, bool]:
    status = request.GET.get("status", "active")
    if status not in SESSION_STATUSES:
        status = "active"
    query = request.GET.get("q", "").strip()
    pool = request.GET.get("pool", "").strip()
    profile = request.GET.get("profile", "").strip()
    tags = _tag_filters(request)
    page = await browsers.list_sessions(
        request.service, limit=WALL_SCAN, status=status, query=query or None, tags=tags
    )
    found = [s for s in page.items if _matches(s, pool, profile)]
    filters = {"status": status, "q": query, "pool": pool, "profile": profile, "tags": tags}
    return found[:MAX_TILES], filters, len(found) > MAX_TILES or page.has_more


def _why(session: browsers.Session, use: capacity.Capacity | None) -> str:
    """What a tile says before its stream does: a session in standby shows nothing until it wakes, and
    waking it takes a running browser (its screen wakes it when the tile goes live)."""
    if session.ended or session.sandbox is None or session.sandbox.browser != "standby":
        return ""
    running = f": {use.running} of this project's browsers running" if use is not None else ""
    return f"In standby{running}. Its browser wakes when the tile goes live."


async def _relayable(request, session: browsers.Session) -> bool:
    return (await screen.mode(request, session))[0] == "relay"


@require_http_methods(["GET"])
@org_view("viewer")
async def wall(request):
    sessions, filters, more = await _sessions(request)
    # After the tiles' list, whose failure is the page's; the capacity line is left out when unread.
    use = await capacity.measure_quietly(request)
    tiles = []
    for session in sessions:
        relay_tile, why = await _relayable(request, session), _why(session, use)
        sid = session.session_id
        tiles.append(
            {
                "session": session,
                "relay": relay_tile,
                "url": org_reverse(request, "browsers:detail", session_id=sid) + "#pane-screen",
                "why": why,
                # Every awake tile shows its session at once (the console's screenshot, loaded by the page
                # when the tile is on screen), live or not: at most ``WALL_LIVE_TILES`` are live, and a live
                # one's first frame waits for its CDP connection. Not of a browser in standby (it would wake).
                "still": org_reverse(request, "browsers:panes:screenshot", session_id=sid)
                if relay_tile and not why
                else "",
            }
        )
    stream_url = org_reverse(request, "browsers:wall-stream") if any(t["relay"] for t in tiles) else ""
    badges_url = org_reverse(request, "browsers:wall-badges") + (
        f"?{request.GET.urlencode()}" if request.GET else ""
    )
    context = {
        "tiles": tiles,
        "filters": filters,
        "statuses": SESSION_STATUSES,
        "more": more,
        "max_tiles": MAX_TILES,
        "stream_url": stream_url,
        "badges_url": badges_url,
        "badge_seconds": BADGE_SECONDS,
        "tag_values": [f"{k}:{v}" for k, v in filters["tags"].items()],
        "fps": THUMBNAIL_FPS,
        "live_max": live_tiles()[0],
        "use": use,
        "capacity_links": capacity.links(request),
    }
    return render(request, "browsers/wall.html", context)


@require_http_methods(["GET"])
@org_view("viewer")
async def wall_stream(request):
    """One event stream for the tiles asked (``id``, in the page's order): each live session's frames at
    most THUMBNAIL_FPS a second; those beyond the bounds (``Allowance``) a "paused" status saying why."""
    ids = list(dict.fromkeys(request.GET.getlist("id")))[:MAX_TILES]
    if not ids:
        raise Http404("No sessions to watch")
    # Every id must be a session of this organization (as the one-session stream checks it).
    found = await asyncio.gather(
        *(browsers.get_session(request.service, i, include_deleted=True) for i in ids), return_exceptions=True
    )
    for result in found:
        if isinstance(result, BaseException):
            if isinstance(result, ServiceError) and result.status == 404:
                raise Http404("No such browser session")
            raise result
    per_viewer, per_org = live_tiles()
    connection = relay.Ticket()
    wall = request.GET.get("wall", "")
    live, paused = allowance.claim(
        connection,
        request.org.pk,
        request.user.pk,
        ids,
        per_viewer=per_viewer,
        per_org=per_org,
        wall=wall if WALL_KEY.fullmatch(wall) else "",
    )
    before = b"".join(relay.status_event("paused", why, sid) for sid, why in paused.items())
    return screen.stream_response(
        request,
        [screen.source(request, i) for i in live],
        THUMBNAIL_FPS,
        before=before,
        also_ended=list(paused),
        on_close=lambda: allowance.release(connection),
    )


async def _flagged(svc, session_id: str) -> list[str]:
    """What went wrong in the last minute (console errors, failed requests), most recent first."""
    try:
        async with asyncio.timeout(BADGE_TIMEOUT):
            # The newest first (the service takes no ``since`` with ``desc``): the last minute is cut here.
            page = await telemetry.list_events(
                svc, session_id, order="desc", limit=100, types=list(presenters.ERROR_TYPES)
            )
    except (TimeoutError, ServiceError):
        return []
    recent = datetime.now(UTC) - timedelta(seconds=RECENT_SECONDS)
    rows = [presenters.row(e) for e in page.items if e.kind in presenters.ERROR_TYPES]
    return [r.type for r in rows if r.severity == "error" and r.time is not None and r.time >= recent]


@require_http_methods(["GET"])
@org_view("viewer")
async def wall_badges(request):
    sessions, _, _ = await _sessions(request)
    active = [s for s in sessions if not s.ended]
    found = await asyncio.gather(*(_flagged(request.service, s.session_id) for s in active))
    # Every tile's badge slot is swapped (out of band), so a badge also goes away after a quiet minute.
    badges = [
        {"session_id": s.session_id, "count": len(flags), "kinds": sorted(set(flags))}
        for s, flags in zip(active, found, strict=True)
    ]
    context = {
        "badges": badges,
        "badges_url": request.get_full_path(),
        "badge_seconds": BADGE_SECONDS,
        "refreshed": True,  # its next refresh is the next poll (templates/browsers/wall.html)
    }
    return render(request, "browsers/wall.html#wall-badges", context)
