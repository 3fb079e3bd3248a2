"""Replays of a browser session (notes §2): list, start, stop, and the video's bytes.

``replay_view_url`` is a capability (whoever holds it plays the replay): the console never hands it to a
browser; it streams the video itself (``download``). A download may ask for a byte range: the range is
passed on, and ``Video.status`` says whether the service honoured it (206) or sent the whole file (200).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from console.service import errors
from console.service.collection import BrowserPart
from console.service.contract import REPLAY_VIDEO_TYPES
from console.service.http import Service, list_max_bytes, path_segment, request, stream_bytes
from console.service.records import Record

__all__ = [
    "MAX_DURATION",
    "MAX_FRAMERATE",
    "MAX_GPU_FRAMERATE",
    "Replay",
    "Video",
    "download",
    "list_replays",
    "start",
    "stop",
]

# notes §2: above 20 frames/s needs a GPU session. The notes give no ceiling for the duration: an hour is
# the console's (and the sandbox's) choice, long enough for any session an operator watches.
MAX_FRAMERATE = 20
MAX_GPU_FRAMERATE = 60
MAX_DURATION = 3600
# What a replay download may be; anything else (an HTML error page, JSON) is not passed to a browser.


class Replay(Record):
    replay_id: str
    started_at: datetime | None = None
    finished_at: datetime | None = None
    replay_view_url: str | None = None

    @property
    def recording(self) -> bool:
        return self.finished_at is None

    @property
    def duration(self) -> timedelta | None:
        if isinstance(self.started_at, datetime) and isinstance(self.finished_at, datetime):
            return max(self.finished_at - self.started_at, timedelta(0))
        return None


@dataclass(frozen=True)
class Video:
    """An open replay download: ``chunks`` yields its bytes."""

    status: int  # 200 (the whole file) or 206 (the range asked for)
    content_type: str  # as the service sent it, checked against REPLAY_VIDEO_TYPES
    content_length: int | None
    content_range: str | None  # the service's Content-Range on a 206
    chunks: AsyncIterator[bytes]


# Seconds a recording's start may take: a recorder on the display, perhaps a move of the session to a browser
# of its own, queued behind other browsers' starts (the sandbox admits them one at a time for up to 120 s).
START_TIMEOUT = 150.0


REPLAYS = BrowserPart("replays")


async def list_replays(svc: Service, session_id: str) -> list[Replay]:
    return Replay.list_from_json(
        (await request(svc, "GET", REPLAYS.at(session_id), max_bytes=list_max_bytes())).data
    )


async def start(
    svc: Service,
    session_id: str,
    *,
    framerate: int | None = None,
    max_duration_in_seconds: int | None = None,
    record_audio: bool | None = None,
) -> Replay:
    """Start recording (POST is not retried: a retry could start a second recording). It may take a while:
    the service starts a recorder on the session's display (the sandbox may first move the session to a
    browser of its own), so it waits up to ``START_TIMEOUT``, not the usual write's 15 s."""
    body = {
        "framerate": framerate,
        "max_duration_in_seconds": max_duration_in_seconds,
        "record_audio": record_audio,
    }
    body = {key: value for key, value in body.items() if value is not None}
    reply = await request(svc, "POST", REPLAYS.at(session_id), json=body, timeout=START_TIMEOUT)
    return Replay.from_json(reply.data)


async def stop(svc: Service, session_id: str, replay_id: str) -> None:
    """Stop and persist; the service answers once the video is kept (encoding may take a while)."""
    path = REPLAYS.at(session_id, path_segment(replay_id), "stop")
    await request(svc, "POST", path, expect="none", timeout=120)


def _length(value: str | None) -> int | None:
    try:
        length = int(value) if value is not None else None
    except ValueError:
        return None
    return length if length is not None and length >= 0 else None


@asynccontextmanager
async def download(
    svc: Service, session_id: str, replay_id: str, *, byte_range: str | None = None
) -> AsyncIterator[Video]:
    """``async with download(svc, sid, rid, byte_range="bytes=0-") as video:`` the replay's bytes.

    A body that is not a video (by its content type) raises ``BadResponse`` before anything is read.
    """
    headers = {"Accept": ", ".join(REPLAY_VIDEO_TYPES)}
    if byte_range:
        headers["Range"] = byte_range
    path = REPLAYS.at(session_id, path_segment(replay_id))
    async with stream_bytes(svc, "GET", path, headers=headers) as (reply, chunks):
        content_type = (reply.headers.get("content-type") or "").split(";")[0].strip().lower()
        if content_type not in REPLAY_VIDEO_TYPES:
            raise errors.BadResponse(
                f"the service sent a replay that is not a video ({content_type or 'no content type'})",
                status=reply.status,
                request_id=reply.request_id,
            )
        yield Video(
            status=reply.status,
            content_type=content_type,
            content_length=_length(reply.headers.get("content-length")),
            content_range=reply.headers.get("content-range") if reply.status == 206 else None,
            chunks=chunks,
        )
