"""The replays of a session (notes §2): the pane lists them (started, duration, state), operators start
and stop recordings, everyone who reads downloads them; a player page shows one replay beside the
session's telemetry of its time window.

The video reaches the browser through the console (``video``): the service's ``replay_view_url`` is a
capability and never leaves the server, nor does the API key. ``<video>`` seeks with HTTP range requests:
a range is passed upstream, and a service that sends the whole file anyway is cut to the range here.

The player: ``?t=<seconds>`` (the position) and ``?event=<seq>`` (the selected event) make a link to one
moment of one replay; static/js/replay.js keeps them in the URL while playing and clicking.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.browsers import presenters
from console.browsers.panes import common
from console.service import Conflict, Invalid, NotFound, ServiceError, browser_replays, telemetry
from console.service.browser_replays import MAX_DURATION, MAX_FRAMERATE, MAX_GPU_FRAMERATE
from console.service.contract import CATEGORIES
from console.service.records import parse_datetime
from console.web import downloads
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.render import render

DEFAULT_FRAMERATE = 10
DEFAULT_DURATION = 300
# The player lists at most this many events of the window, read this many per service page.
MAX_EVENTS = 500
EVENTS_PAGE = 100
# The service's clocks and the recorder's do not tick together: the window reads a little wider.
WINDOW_SLACK = timedelta(seconds=1)
# The screenshot category would bury the rest (a picture a second); the video shows the screen anyway.
WINDOW_CATEGORIES = tuple(c for c in CATEGORIES if c != "screenshot")
NAVIGATION = ("page_navigation",)
# At most 15 digits a side (a petabyte): a longer number is no range of a video, and Python refuses to
# read a number of more than 4300 digits (a 500, before this bound).
RANGE = re.compile(r"bytes=(\d{0,15})-(\d{0,15})")
CONTENT_RANGE = re.compile(r"bytes (\d{1,15})-(\d{1,15})/(\d{1,15}|\*)")
CHUNK = 64 * 1024


class ReplayForm(forms.Form):
    framerate = forms.IntegerField(
        label="Frames per second",
        initial=DEFAULT_FRAMERATE,
        min_value=1,
        help_text=f"1 to {MAX_FRAMERATE} ({MAX_GPU_FRAMERATE} on a GPU session).",
    )
    max_duration_in_seconds = forms.IntegerField(
        label="Stop after (seconds)",
        initial=DEFAULT_DURATION,
        min_value=1,
        max_value=MAX_DURATION,
        help_text=f"The recording stops by itself then; at most {MAX_DURATION} s.",
    )
    record_audio = forms.BooleanField(label="Record audio", required=False)

    def __init__(self, *args, gpu: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.highest = MAX_GPU_FRAMERATE if gpu else MAX_FRAMERATE
        self.fields["framerate"].max_value = self.highest
        self.fields["framerate"].widget.attrs["max"] = self.highest

    def clean_framerate(self) -> int:
        value = self.cleaned_data["framerate"]
        if value > self.highest:
            why = "" if self.highest == MAX_GPU_FRAMERATE else ": above that needs a GPU session"
            raise forms.ValidationError(f"At most {self.highest} frames per second{why}.")
        return value


def _video_url(request, session_id: str, replay_id: str, *, download: bool = False) -> str:
    url = common.url(request, "replay-video", session_id, replay_id=replay_id)
    return f"{url}?download=1" if download else url


def _rows(request, session_id: str, items: list[browser_replays.Replay]) -> list[dict]:
    rows = []
    for replay in sorted(items, key=lambda r: str(r.started_at or ""), reverse=True):
        rid = replay.replay_id
        rows.append(
            {
                "replay": replay,
                "duration": presenters.duration(replay.duration) if replay.duration is not None else "",
                "player_url": common.url(request, "replay", session_id, replay_id=rid),
                "download_url": _video_url(request, session_id, rid, download=True),
                "stop_url": common.url(request, "replay-stop", session_id, replay_id=rid),
            }
        )
    return rows


async def _pane(request, session, form: ReplayForm | None = None, error: str = "") -> dict:
    sid = session.session_id
    items: list[browser_replays.Replay] = []
    try:
        items = await browser_replays.list_replays(request.service, sid)
    except NotFound:
        error = error or "The service has no replays of this session."
    rows = _rows(request, sid, items)
    return {
        "session": session,
        "pane_label": "Replays",
        "pane_url": common.url(request, "replays", sid),
        "rows": rows,
        "recording": any(r["replay"].recording for r in rows),
        "form": form or ReplayForm(gpu=bool(session.gpu)),
        "start_url": common.url(request, "replay-start", sid),
        "error": error,
        "live": not session.ended,
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def replay_list(request, session_id: str):
    session = await common.get_session(request, session_id)
    return render(
        request, "browsers/panes/replays.html", await _pane(request, session), partial="replays-pane"
    )


@require_http_methods(["POST"])
@org_view("operator")
async def replay_start(request, session_id: str):
    session = await common.get_session(request, session_id)
    form = ReplayForm(request.POST, gpu=bool(session.gpu))
    error = ""
    if form.is_valid():
        data = form.cleaned_data
        detail = f"{data['framerate']} frames/s, at most {data['max_duration_in_seconds']} s"
        try:
            async with audited(request, "browser.replay.start", target_id=session_id, detail=detail) as entry:
                started = await browser_replays.start(
                    request.service,
                    session_id,
                    framerate=data["framerate"],
                    max_duration_in_seconds=data["max_duration_in_seconds"],
                    record_audio=data["record_audio"] or None,
                )
                entry.detail = f"{started.replay_id}: {detail}"
        except Invalid as exc:
            apply_service_errors(form, exc)
        except NotFound:
            raise Http404("No such browser session") from None
        except Conflict as exc:
            # Already recording, a session that ended, or a service that cannot record this session.
            error = exc.message
        else:
            messages.success(request, f"Recording {started.replay_id}.")
            if not request.htmx:
                return common.redirect(request, common.session_url(request, session_id, "replays"))
            form = None
    context = await _pane(request, session, form, error)
    return render(request, "browsers/panes/replays.html", context, partial="replays-pane")


@require_http_methods(["POST"])
@org_view("operator")
async def replay_stop(request, session_id: str, replay_id: str):
    session = await common.get_session(request, session_id)
    error = ""
    try:
        async with audited(request, "browser.replay.stop", target_id=session_id, detail=replay_id):
            await browser_replays.stop(request.service, session_id, replay_id)
    except NotFound:
        raise Http404("No such replay") from None
    except Conflict as exc:
        error = exc.message
    else:
        messages.success(request, f"Replay {replay_id} stopped and kept.")
        if not request.htmx:
            return common.redirect(request, common.session_url(request, session_id, "replays"))
    context = await _pane(request, session, error=error)
    return render(request, "browsers/panes/replays.html", context, partial="replays-pane")


# The video -----------------------------------------------------------------------------------------


def _asked_range(request) -> tuple[int | None, int | None] | None:
    """One ``bytes=first-last`` range (either end may be open; ``-n`` is the last n bytes), else None:
    several ranges, a malformed header or a position of more than 15 digits get the whole file, as RFC 9110
    allows."""
    match = RANGE.fullmatch(request.headers.get("Range", "").strip())
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first = int(match.group(1)) if match.group(1) else None
    last = int(match.group(2)) if match.group(2) else None
    if first is not None and last is not None and last < first:
        return None
    return first, last


def _header(asked: tuple[int | None, int | None]) -> str:
    first, last = asked
    if first is None:
        return f"bytes=-{last}"
    return f"bytes={first}-{'' if last is None else last}"


def _resolve(asked: tuple[int | None, int | None], total: int) -> tuple[int, int] | None:
    """The inclusive byte positions of ``asked`` in a file of ``total`` bytes (None: unsatisfiable)."""
    first, last = asked
    if first is None:
        if not last:
            return None
        return max(total - last, 0), total - 1
    if first >= total:
        return None
    return first, min(total - 1, last if last is not None else total - 1)


async def _cut(chunks, first: int, last: int):
    """The bytes ``first``..``last`` (inclusive) of a stream that starts at byte 0."""
    position = 0
    async for chunk in chunks:
        end = position + len(chunk)
        if end > first and position <= last:
            yield chunk[max(first - position, 0) : last + 1 - position]
        position = end
        if position > last:
            break


def _sent_range(value: str, asked: tuple[int | None, int | None] | None, length: int | None):
    """The (first, last) of a service's 206 if its Content-Range is one range that starts where the
    range asked for does and agrees with its Content-Length; else None (the service's word is not passed
    on to a browser when it does not add up)."""
    match = CONTENT_RANGE.fullmatch(value.strip())
    if match is None or asked is None:
        return None
    first, last = int(match.group(1)), int(match.group(2))
    total = None if match.group(3) == "*" else int(match.group(3))
    if last < first or (total is not None and last >= total):
        return None
    if asked[0] is not None and first != asked[0]:
        return None
    if length is not None and length != last - first + 1:
        return None
    return first, last


async def _at_most(chunks, length: int):
    """No more than ``length`` bytes of ``chunks`` (a service may send more than it declared)."""
    left = length
    async for chunk in chunks:
        if left <= 0:
            break
        yield chunk[:left]
        left -= len(chunk)


def _filename(replay_id: str) -> str:
    return (re.sub(r"[^A-Za-z0-9._-]+", "-", replay_id).strip("-") or "replay") + ".mp4"


@require_http_methods(["GET"])
@org_view("viewer")
async def video(request, session_id: str, replay_id: str):
    asked = _asked_range(request)
    byte_range = _header(asked) if asked else None
    try:
        clip, stack = await downloads.opened(
            browser_replays.download(request.service, session_id, replay_id, byte_range=byte_range), "replay"
        )
    except Conflict as exc:
        return HttpResponse(exc.message, status=409, content_type="text/plain; charset=utf-8")
    except ServiceError as exc:
        if exc.status != 416:
            raise
        return HttpResponse(status=416)

    status, length, content_range, chunks = 200, clip.content_length, None, clip.chunks
    if clip.status == 206:
        sent = _sent_range(clip.content_range or "", asked, clip.content_length)
        if sent is None:
            await stack.aclose()
            return HttpResponse(
                "The service sent a part of the replay other than the one asked for.",
                status=502,
                content_type="text/plain; charset=utf-8",
            )
        status, content_range, length = 206, clip.content_range.strip(), sent[1] - sent[0] + 1
    elif asked is not None and clip.content_length is not None:
        # The service sent the whole file: the range is cut here.
        span = _resolve(asked, clip.content_length)
        if span is None:
            await stack.aclose()
            response = HttpResponse(status=416)
            response["Content-Range"] = f"bytes */{clip.content_length}"
            return response
        first, last = span
        status, length = 206, last - first + 1
        content_range = f"bytes {first}-{last}/{clip.content_length}"
        chunks = _cut(clip.chunks, first, last)

    if length is not None:
        chunks = _at_most(chunks, length)

    # A service that says "octet-stream" sends the MP4 the notes describe; a browser plays it as such.
    kind = "video/mp4" if clip.content_type == "application/octet-stream" else clip.content_type
    response = downloads.attachment(
        chunks,
        stack,
        filename=_filename(replay_id),
        content_type=kind,
        length=length,
        disposition="attachment" if request.GET.get("download") else "inline",
        status=status,
    )
    if content_range:
        response["Content-Range"] = content_range
    response["Accept-Ranges"] = "bytes"
    # No Cache-Control of its own: SecurityHeadersMiddleware marks every signed-in answer "no-store, private"
    # (a replay is the org's pictures, kept off a shared computer's disk), so a seek fetches its range again.
    return response


# The player ----------------------------------------------------------------------------------------


def _rfc3339(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


async def _window(request, session_id: str, start: datetime, end: datetime) -> tuple[list, bool]:
    """The session's events from ``start`` to ``end``, oldest first: at most MAX_EVENTS, and whether
    there were more."""
    found: list[telemetry.Envelope] = []
    cursor = None
    seen: set = set()
    # As many pages as the cap needs: a service that kept saying "more" with empty pages (or the same
    # offset again) kept the page loading, and asking, for as long as it liked.
    for _ in range(MAX_EVENTS // EVENTS_PAGE + 1):
        page = await telemetry.list_events(
            request.service,
            session_id,
            limit=EVENTS_PAGE,
            offset=cursor,
            since=_rfc3339(start - WINDOW_SLACK),
            until=_rfc3339(end + WINDOW_SLACK),
            categories=WINDOW_CATEGORIES,
        )
        found += page.items
        cursor = page.next_offset if page.has_more else None
        if len(found) > MAX_EVENTS:
            return found[:MAX_EVENTS], True
        if cursor is None:
            return found, False
        if cursor in seen:
            return found, True
        seen.add(cursor)
    return found[:MAX_EVENTS], True


def _marker(row: presenters.Row) -> str:
    if row.type == "console_error":
        return "error"
    if row.type in NAVIGATION:
        return "navigation"
    if row.type in ("network_loading_failed", "proxy_error", "network_response") and row.severity in (
        "warn",
        "error",
    ):
        return "failed"
    return ""


def _seconds(value: str | None) -> float | None:
    try:
        seconds = float(value) if value else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds < 10**7 else None


def _player_events(rows, base: str, started: float, length: float, selected: str) -> list[dict]:
    """Each event with its moment in the video (its time minus the replay's start, within the video)."""
    events = []
    for row in rows:
        if row.time is None or row.seq is None:
            continue
        offset = min(max(row.time.timestamp() - started, 0.0), length)
        at = f"{offset:.3f}"
        events.append(
            {
                "row": row,
                "offset": at,
                "clock": f"{int(offset // 60)}:{offset % 60:06.3f}",
                "marker": _marker(row),
                "x": f"{max(offset / length * 1000 - 2.5, 0):.1f}" if length else "0",
                "url": f"{base}?{urlencode({'t': at, 'event': row.seq})}",
                "selected": str(row.seq) == selected,
            }
        )
    return events


@require_http_methods(["GET"])
@org_view("viewer")
async def player(request, session_id: str, replay_id: str):
    session = await common.get_session(request, session_id)
    items = await browser_replays.list_replays(request.service, session_id)
    replay = next((r for r in items if r.replay_id == replay_id), None)
    if replay is None:
        raise Http404("No such replay")
    started = parse_datetime(replay.started_at)
    context = {
        "session": session,
        "replay": replay,
        "pane_label": "Replays",
        "pane_url": common.session_url(request, session_id, "replays"),
        "player_url": common.url(request, "replay", session_id, replay_id=replay_id),
        "video_url": _video_url(request, session_id, replay_id),
        "download_url": _video_url(request, session_id, replay_id, download=True),
        "events": [],
        "capped": False,
        "max_events": MAX_EVENTS,
        "position": _seconds(request.GET.get("t")),
        "selected": request.GET.get("event", ""),
        "playable": isinstance(started, datetime) and isinstance(replay.finished_at, datetime),
    }
    if context["playable"]:
        length = replay.duration.total_seconds() if replay.duration else 0.0
        found, capped = await _window(request, session_id, replay.started_at, replay.finished_at)
        rows = [presenters.row(e) for e in found]
        events = _player_events(rows, context["player_url"], started.timestamp(), length, context["selected"])
        context.update(
            events=events,
            capped=capped,
            length=f"{length:.3f}",
            duration=presenters.duration(replay.duration),
            markers=[e for e in events if e["marker"]],
            telemetry_on=bool(session.telemetry_enabled),
        )
    return render(request, "browsers/panes/replay.html", context)
