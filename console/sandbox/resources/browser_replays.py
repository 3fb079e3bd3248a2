"""Replays of a browser session (notes §2): start, stop, list, download, and a page that plays one.

Choices where the notes leave room (the lead copies them into the docs):

- Only real sessions (the Chromium engine) record: a replay is the page's screencast (CDP
  ``Page.startScreencast``, JPEG frames with their timestamps) encoded at stop to MP4 (H.264, yuv420p,
  ``+faststart``, so a browser's ``<video>`` plays it) by Debian's ``ffmpeg`` at the requested
  ``framerate``. Chromium sends a frame only when the page changes, so each frame is held until the next
  one: the video lasts as long as the recording did. A simulated session, or a sandbox without
  ``ffmpeg``, answers 409 ``replays_unavailable``.
- ``framerate``: 1 to 20 (default 10; above 20 needs a GPU, which the plan lacks: 400).
  ``max_duration_in_seconds``: 1 to 3600 (default 300); the recording stops by itself then.
  ``record_audio`` is accepted; the sandbox's browsers have no audio, so the video has no audio track.
- One recording at a time per session (409 ``replay_in_progress``). A recording keeps its session running
  (never in standby). Stopping waits for the encoding; stopping a finished replay is 204 again. A
  recording follows the page it started on: if that page crashes, or the session moves to a process of
  its own (a CDP client connects), the rest of the recording holds the last frame.
- Deleting the session stops its recordings; replays stay downloadable for the plan's retention
  (``browser_replays.retention_days``, 30 days, on the tenant clock) while the sandbox runs:
  ``GET /browsers/{id}/replays[/{replay_id}]`` find deleted sessions too. The download of a replay still
  recording is 409 ``replay_in_progress``. Past the retention a replay is deleted, its video and its
  record: by the read that finds it expired (the list, the download, the stop, its link) and by a sweep
  of every tenant every ``SWEEP_SECONDS`` (``app.lifespan``); never within the retention, and never while
  it records or encodes.
- ``replay_view_url`` is a sandbox page with a ``<video>`` of the replay, its own token in the URL.
- A managed-auth login of a connection with ``record_session`` runs in a real session of its own
  (``login_browser``) and is recorded from the flow's start to its finish by this recorder (``begin``);
  its ``replay_id`` is on the login's timeline entry. Under the simulated engine a login runs no browser
  and has no replay: nothing is drawn in place of a browser.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import html
import logging
import os
import secrets
import shutil
import time
from datetime import timedelta
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

from console.sandbox.chromium import confine, engine, rooted
from console.sandbox.core.errors import ApiError, conflict, not_found
from console.sandbox.core.fields import Bad, Body, Context, Field, optional_boolean
from console.sandbox.core.http import endpoint, no_content, ok, read_json
from console.sandbox.core.state import Tenant, new_id, registry, rfc3339
from console.sandbox.resources import sessions

log = logging.getLogger("console.sandbox")

FFMPEG = "ffmpeg"
DEFAULT_FRAMERATE, MAX_FRAMERATE = 10, 20
DEFAULT_DURATION, MAX_DURATION = 300, 3600
RETENTION = timedelta(days=30)
ENCODE_TIMEOUT = 300


SWEEP_SECONDS = 600


def _replays(record: dict) -> dict[str, dict]:
    return record.setdefault("_replays", {})


def expired(tenant: Tenant, replay: dict) -> bool:
    return tenant.now() - replay["started_at"] > RETENTION


def expire(tenant: Tenant, record: dict) -> int:
    """Delete the session's replays past the retention (their video, then their record); how many.

    A replay still recording or encoding is left to the next read or sweep: its recorder owns the files.
    """
    replays = record.get("_replays") or {}
    gone = [
        replay_id
        for replay_id, replay in replays.items()
        if expired(tenant, replay) and replay.get("_recorder") is None
    ]
    for replay_id in gone:
        _remove_video(replays.pop(replay_id))
    return len(gone)


def _remove_video(replay: dict) -> None:
    """The replay's directory (``<root>/replays/<replay_id>``: the video and what encoding left)."""
    path = replay.get("_file")
    if path is None:
        return
    directory = Path(path).parent
    # Only the replay's own directory: a record that names another place is never followed.
    if directory.name == replay["replay_id"] and directory.parent.name == "replays":
        rooted.remove_beneath(directory.parent, directory.name)  # encoding/ was the helper user's
    else:
        Path(path).unlink(missing_ok=True)


def after_restart(tenant: Tenant) -> None:
    """A recording in progress when the sandbox stopped is finished at the restart, without a video
    (``store.after_load``)."""
    now = tenant.now()
    for record in tenant.table("browsers").values():
        for replay in (record.get("_replays") or {}).values():
            if replay.get("finished_at") is None:
                replay["finished_at"] = now


def sweep(tenants) -> int:
    """``expire`` over every session of every tenant (the periodic cleanup); how many replays went."""
    count = 0
    for tenant in list(tenants):
        for record in list(tenant.table("browsers").values()):
            if record.get("_replays"):
                count += expire(tenant, record)
    return count


async def sweep_periodically() -> None:
    while True:
        await asyncio.sleep(SWEEP_SECONDS)
        try:
            sweep(registry.tenants.values())
        except Exception:  # the next sweep tries again; the sweeper never ends on one failure
            log.exception("could not sweep the expired replays")


def render(request: Request, record: dict, replay: dict) -> dict:
    body = {"replay_id": replay["replay_id"], "started_at": rfc3339(replay["started_at"])}
    if replay.get("finished_at") is not None:
        body["finished_at"] = rfc3339(replay["finished_at"])
        base = str(request.base_url).rstrip("/")
        body["replay_view_url"] = f"{base}/_sandbox/replays/{replay['replay_id']}?token={replay['token']}"
    return body


def _session(request: Request, *, active: bool):
    return sessions.get_session(request, request.path_params["id"], include_deleted=not active)


def _replay(request: Request, record: dict) -> dict:
    expire(request.state.tenant, record)
    replay = _replays(record).get(request.path_params["replay_id"])
    if replay is None or expired(request.state.tenant, replay):
        raise not_found("replay", request.path_params["replay_id"])
    return replay


def _int(default: int, high: int, why: str = ""):
    """An integer from 1 to ``high``; ``default`` when null."""

    def check(value, context: Context) -> int:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            raise Bad(f"must be an integer from 1 to {high}{why}")
        return value

    return check


# ``POST /browsers/{id}/replays``: the recording's frame rate and longest duration.
START = Body(
    message="the replay settings are not valid",
    unknown="not a replay field",
    complete=True,
    fields=(
        Field("framerate", _int(DEFAULT_FRAMERATE, MAX_FRAMERATE, " (above 20 needs a GPU)")),
        Field("max_duration_in_seconds", _int(DEFAULT_DURATION, MAX_DURATION)),
        Field("record_audio", optional_boolean),
    ),
)


# Recording -----------------------------------------------------------------------------------------


class Recorder:
    """The screencast of one session's page, as JPEG files and their timestamps, then an MP4."""

    def __init__(self, live, directory: Path, framerate: int):
        self.live = live
        self.directory = directory
        self.framerate = framerate
        self.frames: list[tuple[float, Path]] = []
        self.cdp = None
        self.started = time.monotonic()
        self.stopped: float | None = None
        self.timer: asyncio.TimerHandle | None = None

    async def start(self) -> None:
        """Screencast the session's page from now. A session moved as the recording starts (a CDP client
        came: the sandbox moves it to a browser of its own, its page closed under the start) is asked
        once more on its new page; a move later is followed (``Live.woken``)."""
        page = self.live.page
        try:
            await self._attach(self.live)
        except ApiError:
            if self.live.page is page and self.live.state == "running":
                raise
            log.info(
                "session %s moved as its recording started; recording its new page", self.live.session_id
            )
            await self._attach(await engine.get().live(self.live.tenant, self.live.record))
        self.live.woken.append(self._woken)

    async def _attach(self, live) -> None:
        """A screencast of ``live``'s page, and its first frame now, even if the page never changes."""
        page = live.page
        cdp = await engine.guarded(live.context.new_cdp_session(page), "the recording")
        cdp.on("Page.screencastFrame", lambda params: self._frame(cdp, params))
        size = live.record["viewport"]
        await engine.guarded(
            cdp.send(
                "Page.startScreencast",
                {"format": "jpeg", "quality": 80, "maxWidth": size["width"], "maxHeight": size["height"]},
            ),
            "the recording",
        )
        self.cdp = cdp
        first = await engine.guarded(page.screenshot(type="jpeg", quality=80), "the recording")
        if self.stopped is None:
            self._write(first, time.monotonic())

    async def _woken(self, live) -> None:
        """The session woke on a new page (moved to a browser of its own, or back from standby or a
        crash): the recording goes on there. Until then the video holds the last frame."""
        if self.stopped is not None:
            return
        try:
            await self._attach(live)
        except ApiError as exc:
            log.warning(
                "session %s: its recording could not follow it to its new page: %s", live.session_id, exc
            )

    def _frame(self, cdp, params: dict) -> None:
        if self.stopped is None:
            self._write(base64.b64decode(params["data"]), time.monotonic())
        asyncio.get_running_loop().create_task(self._ack(cdp, params["sessionId"]))

    async def _ack(self, cdp, frame_session: int) -> None:
        with contextlib.suppress(Exception):
            await cdp.send("Page.screencastFrameAck", {"sessionId": frame_session})

    def _write(self, data: bytes, at: float) -> None:
        path = self.directory / f"frame-{len(self.frames):06d}.jpg"
        path.write_bytes(data)
        self.frames.append((at, path))

    async def stop(self) -> Path:
        self.stopped = time.monotonic()
        if self.timer is not None:
            self.timer.cancel()
        with contextlib.suppress(ValueError):
            self.live.woken.remove(self._woken)
        with contextlib.suppress(Exception):
            await self.cdp.send("Page.stopScreencast")
            await self.cdp.detach()
        return await self._encode()

    async def _encode(self) -> Path:
        """The MP4 of the frames, made by ffmpeg as the helpers' user (``confine.helper_command``: not
        root, not the browsers' user; jailed without network where bubblewrap confines), which decodes
        JPEG the page's browser sent. It reads the frames and the listing read-only and writes in
        ``encoding/`` (its own) alone; the sandbox then copies the video out by descriptor, a regular
        file only (``rooted.open_regular``), and removes that directory without following a link."""
        # The concat demuxer holds each frame until the next one; the last one until the stop.
        lines = []
        ends = [at for at, _ in self.frames[1:]] + [self.stopped]
        for (at, path), end in zip(self.frames, ends, strict=True):
            lines.append(f"file '{path.name}'\nduration {max(end - at, 0.001):.3f}")
        lines.append(f"file '{self.frames[-1][1].name}'")
        listing = self.directory / "frames.txt"
        listing.write_text("\n".join(lines) + "\n")
        try:
            helper = confine.helper_identity()
        except LookupError as exc:  # never as root nor as the browsers' user
            raise ApiError(503, "replay_encoding_failed", f"the replay could not be encoded: {exc}") from None
        if helper is not None:  # the frames' folder: root's and the helper's group's (no one else's)
            os.chown(self.directory, -1, helper[1], follow_symlinks=False)
            self.directory.chmod(0o750)
        rooted.remove_beneath(self.directory, ENCODING)  # an earlier attempt's
        work = self.directory / ENCODING
        work.mkdir(mode=0o700)
        confine.own_helper(work)
        argv = [
            shutil.which(FFMPEG) or FFMPEG,
            *("-hide_banner", "-nostdin", "-loglevel", "error", "-y"),
            *("-f", "concat", "-safe", "0", "-i", str(listing)),
            *("-vf", "scale=trunc(iw/2)*2:trunc(ih/2)*2,format=yuv420p", "-r", str(self.framerate)),
            *("-c:v", "libx264", "-preset", "veryfast", "-movflags", "+faststart"),
            str(work / "replay.mp4"),
        ]
        process = await asyncio.create_subprocess_exec(
            *confine.helper_command(argv, readable=[self.directory], writable=[work]),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": confine.PATH, "LANG": "C.UTF-8"},
        )
        try:
            async with asyncio.timeout(ENCODE_TIMEOUT):
                errors = await _tail(process.stderr, STDERR_KEPT)
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()
            rooted.remove_beneath(self.directory, ENCODING)
            raise ApiError(503, "replay_encoding_failed", "encoding the replay took too long") from None
        try:
            if process.returncode != 0:
                raise ApiError(
                    503,
                    "replay_encoding_failed",
                    "the replay could not be encoded",
                    inner_error={"code": "ffmpeg", "message": _printable(errors)[-200:]},
                )
            output = self.directory / "replay.mp4"
            if not _copy_out(self.directory, output):
                raise ApiError(503, "replay_encoding_failed", "the replay could not be encoded")
        finally:
            rooted.remove_beneath(self.directory, ENCODING)
        for _, path in self.frames:
            path.unlink(missing_ok=True)
        return output


ENCODING = "encoding"  # ffmpeg's own folder in a replay's directory, writable by it alone
STDERR_KEPT = 4096  # the end of what ffmpeg says: the rest is read and dropped


async def _tail(stream: asyncio.StreamReader, limit: int) -> bytes:
    """The last ``limit`` bytes of ``stream``, read to its end (at most that and one chunk in memory)."""
    kept = b""
    while chunk := await stream.read(65536):
        kept = (kept + chunk)[-limit:]
    return kept


def _printable(data: bytes) -> str:
    """ffmpeg's message, as text without control characters (it may quote what the frames held)."""
    text = data.decode(errors="replace")
    return "".join(c if c.isprintable() or c == "\n" else "\N{REPLACEMENT CHARACTER}" for c in text).strip()


def _copy_out(directory: Path, output: Path) -> bool:
    """Copy ffmpeg's video (``encoding/replay.mp4``, a file of the helpers' user) to ``output`` (root's
    own, replaced if there): opened by descriptor, no link followed, a regular file only."""
    source = rooted.open_regular(directory, [ENCODING, "replay.mp4"])
    if source is None:
        return False
    try:
        output.unlink(missing_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(output, flags, 0o644), "wb") as target, os.fdopen(source, "rb") as handle:
            source = None
            shutil.copyfileobj(handle, target, 1 << 20)
    finally:
        if source is not None:
            os.close(source)
    return True


async def finish(tenant: Tenant, record: dict, replay: dict) -> None:
    """Stop a recording (if it still runs) and keep its video; every caller waits for the same encoding."""
    if replay.get("_finishing") is None and replay.get("_recorder") is not None:
        replay["_finishing"] = asyncio.get_running_loop().create_task(_finish(tenant, replay))
    if replay.get("_finishing") is not None:
        await asyncio.shield(replay["_finishing"])


async def _finish(tenant: Tenant, replay: dict) -> None:
    recorder: Recorder = replay["_recorder"]
    try:
        replay["_file"] = await recorder.stop()
    finally:
        # The moment the recording stopped, not the end of the encoding: the video ends there.
        encoding = time.monotonic() - (recorder.stopped or time.monotonic())
        replay["finished_at"] = tenant.now() - timedelta(seconds=encoding)
        replay["_recorder"] = None
        recorder.live.attached -= 1
        recorder.live.recording -= 1


def stop_all(tenant: Tenant, record: dict) -> None:
    """The session ended: its recordings stop (in the background) and stay downloadable."""
    for replay in _replays(record).values():
        if replay.get("_recorder") is not None:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().create_task(_quietly(finish(tenant, record, replay)))


async def _quietly(coroutine) -> None:
    with contextlib.suppress(Exception):
        await coroutine


async def begin(tenant: Tenant, record: dict, live, framerate: int, duration: int) -> dict:
    """Start recording the running session ``live`` (its page's screencast): the new replay."""
    replay_id = new_id("rep")
    directory = engine.get().root() / "replays" / replay_id
    directory.mkdir(parents=True)
    recorder = Recorder(live, directory, framerate)
    live.attached += 1
    live.recording += 1
    try:
        await recorder.start()
    except ApiError:
        live.attached -= 1
        live.recording -= 1
        rooted.remove_beneath(directory.parent, directory.name)
        raise
    replay = {
        "replay_id": replay_id,
        "started_at": tenant.now(),
        "finished_at": None,
        "token": secrets.token_urlsafe(24),
        "_recorder": recorder,
    }
    _replays(record)[replay_id] = replay
    recorder.timer = asyncio.get_running_loop().call_later(
        duration, lambda: asyncio.ensure_future(_quietly(finish(tenant, record, replay)))
    )
    return replay


def available(record: dict) -> bool:
    """Whether the session can record: a real browser, and ffmpeg to encode its screencast."""
    return record.get("_engine") == "chromium" and shutil.which(FFMPEG) is not None


# Endpoints -----------------------------------------------------------------------------------------


@endpoint
async def list_replays(request: Request):
    record = _session(request, active=False)
    tenant = request.state.tenant
    expire(tenant, record)
    replays = [r for r in _replays(record).values() if not expired(tenant, r)]
    return ok([render(request, record, r) for r in sorted(replays, key=lambda r: r["started_at"])])


@endpoint
async def start_replay(request: Request):
    tenant = request.state.tenant
    record = _session(request, active=True)
    fields = START.validate(await read_json(request))
    framerate, duration = fields["framerate"], fields["max_duration_in_seconds"]
    if not available(record):
        raise conflict(
            "replays need a real browser and ffmpeg; this session is simulated or ffmpeg is missing",
            code="replays_unavailable",
        )
    if any(r.get("_recorder") is not None for r in _replays(record).values()):
        raise conflict("this session is already recording a replay", code="replay_in_progress")
    live = await engine.get().live(tenant, record)
    replay = await begin(tenant, record, live, framerate, duration)
    sessions.touch(tenant, record)
    return ok(render(request, record, replay), status=201)


@endpoint
async def stop_replay(request: Request):
    record = _session(request, active=False)
    replay = _replay(request, record)
    await finish(request.state.tenant, record, replay)
    return no_content()


@endpoint
async def download_replay(request: Request):
    record = _session(request, active=False)
    replay = _replay(request, record)
    return _video(replay)


def _video(replay: dict) -> Response:
    if replay.get("_recorder") is not None:
        raise conflict("the replay is still recording or encoding: stop it first", code="replay_in_progress")
    path = replay.get("_file")
    if path is None or not Path(path).exists():
        raise not_found("replay video", replay["replay_id"])
    return FileResponse(path, media_type="video/mp4", filename=f"{replay['replay_id']}.mp4")


def _by_token(request: Request) -> dict | None:
    """The replay its ``replay_view_url`` token names, within the retention of its tenant, like the API."""
    replay_id, token = request.path_params["replay_id"], request.query_params.get("token", "")
    # As bytes: compare_digest raises on a str holding non-ASCII characters (``?token=é`` was a 500).
    given = token.encode(errors="replace")
    for tenant in registry.tenants.values():
        for record in tenant.table("browsers").values():
            replay = (record.get("_replays") or {}).get(replay_id)
            if replay is None or not token or not secrets.compare_digest(given, replay["token"].encode()):
                continue
            # The link outlived the replay: past the retention it is gone for the API and the link alike.
            if expired(tenant, replay):
                expire(tenant, record)
                return None
            return replay
    return None


async def view_replay(request: Request):
    """``replay_view_url``: a page that plays the replay (its token is the key)."""
    replay = _by_token(request)
    if replay is None or replay.get("_file") is None:
        return HTMLResponse("<!doctype html><p>This replay is not available.</p>", status_code=404)
    source = html.escape(f"{request.url.path}/video?token={request.query_params['token']}")
    return HTMLResponse(
        "<!doctype html><html><head><meta charset=utf-8><title>Replay</title></head>"
        "<body style='margin:0;background:#111;display:grid;place-items:center;height:100vh'>"
        f"<video controls autoplay muted src='{source}' style='max-width:100%;max-height:100%'></video>"
        "</body></html>"
    )


async def view_replay_video(request: Request):
    replay = _by_token(request)
    if replay is None:
        return Response(status_code=404)
    try:
        return _video(replay)
    except ApiError as error:
        return Response(error.message, status_code=error.status)


def seed(tenant: Tenant) -> None:
    """Replays are recorded from real pages only; the demo data has none."""


routes = [
    Route("/browsers/{id}/replays", list_replays, methods=["GET"]),
    Route("/browsers/{id}/replays", start_replay, methods=["POST"]),
    Route("/browsers/{id}/replays/{replay_id}/stop", stop_replay, methods=["POST"]),
    Route("/browsers/{id}/replays/{replay_id}", download_replay, methods=["GET"]),
    Route("/_sandbox/replays/{replay_id}", view_replay, methods=["GET"]),
    Route("/_sandbox/replays/{replay_id}/video", view_replay_video, methods=["GET"]),
]
