"""The programs a browser feeds run neither as root nor as the browsers' user (docs/security.md §8).

A replay's ffmpeg decodes the JPEG frames of the page's screencast, which the (possibly compromised)
browser sends: a root sandbox runs it as ``SANDBOX_HELPER_USER`` (``confine.helper_identity``), without
groups or capabilities, in a jail without network where only the frames (read-only) and its output folder
(writable) are the host's; the sandbox then copies its video out by descriptor, a regular file only. These
tests run the recorder's real encoding on frames written here (no browser needed) and read the identity
of the ffmpeg process while it runs. Xvfb's identity is checked in ``test_displays.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest

from console.sandbox.chromium import confine, displays, rooted
from console.sandbox.core.errors import ApiError
from console.sandbox.resources import browser_replays

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="no ffmpeg")


@pytest.fixture
def replay_directory():
    """A replay's directory as the engine makes it: below a folder root's own that others pass through."""
    top = Path(tempfile.mkdtemp(prefix="sandbox-test-replays-"))
    top.chmod(0o711)
    directory = top / "replay"
    directory.mkdir()
    yield directory
    rooted.remove_beneath(top.parent, top.name)


def jpeg(size: str = "64x48") -> bytes:
    return subprocess.run(
        [
            *("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", f"color=c=red:s={size}"),
            *("-frames:v", "1", "-f", "image2", "-c:v", "mjpeg", "-"),
        ],
        capture_output=True,
        check=True,
    ).stdout


def recorder_of(directory: Path, frames: list[bytes], seconds: float) -> browser_replays.Recorder:
    """A recorder that held ``frames`` over ``seconds`` (as the screencast would have written them)."""
    recorder = browser_replays.Recorder(None, directory, 20)
    for index, data in enumerate(frames):
        recorder._write(data, index * seconds / len(frames))
    recorder.stopped = seconds
    return recorder


def status_of(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def ffmpeg_of(directory: Path) -> int | None:
    """The pid of the ffmpeg encoding in ``directory`` (its command line names the listing there)."""
    listing = str(directory / "frames.txt").encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"ffmpeg") and listing in argv:
            return int(entry.name)
    return None


async def test_it_runs_a_replays_ffmpeg_as_the_helpers_user_jailed_without_network(replay_directory):
    # Ten minutes of video at 20 frames a second: long enough an encoding to look at the process.
    recorder = recorder_of(replay_directory, [jpeg()] * 3, 600.0)
    encoding = asyncio.get_running_loop().create_task(recorder._encode())
    seen = None
    while seen is None and not encoding.done():
        pid = ffmpeg_of(replay_directory)
        if pid is not None:
            with contextlib.suppress(OSError):  # it ended meanwhile
                namespaces = [os.readlink(f"/proc/{pid}/ns/{kind}") for kind in ("net", "mnt")]
                seen = (status_of(pid), *namespaces)
        await asyncio.sleep(0.005)
    output = await encoding
    assert seen is not None, "ffmpeg ended before it was seen"
    status, network, mounts = seen
    helper = confine.helper_identity()
    if helper is None:  # a sandbox that is not root keeps its uid
        assert status["Uid"].split() == [str(os.getuid())] * 4
    else:
        assert status["Uid"].split() == [str(helper[0])] * 4
        assert status["Gid"].split() == [str(helper[1])] * 4
        assert helper[0] not in (0, confine.identity()[0])
    assert status["Groups"] == ""
    for capabilities in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(status[capabilities], 16) == 0, capabilities
    if confine.unavailable() is None:  # jailed: no network of the host's, a mount namespace of its own
        assert network != os.readlink("/proc/self/ns/net")
        assert mounts != os.readlink("/proc/self/ns/mnt")
        assert status["NoNewPrivs"] == "1"
    # The video is the sandbox's own regular file; ffmpeg's folder and the frames are gone.
    info = output.lstat()
    assert output == replay_directory / "replay.mp4" and info.st_uid == os.getuid() and info.st_size > 0
    assert sorted(path.name for path in replay_directory.iterdir()) == ["frames.txt", "replay.mp4"]
    probe = subprocess.run(  # noqa: ASYNC221 - the encoding is over
        ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(output)],
        capture_output=True,
        check=True,
        text=True,
    )
    assert float(probe.stdout) >= 599.0  # the frames' video (the listing repeats the last frame)


async def test_it_answers_a_frame_ffmpeg_cannot_decode_with_its_message_bounded_and_printable(
    replay_directory,
):
    hostile = b"\x1b[2J\x1b]0;owned\x07" + os.urandom(64) + b"\r\n" * 10_000
    recorder = recorder_of(replay_directory, [hostile], 1.0)
    with pytest.raises(ApiError) as failed:
        await recorder._encode()
    assert failed.value.code == "replay_encoding_failed"
    message = failed.value.inner_error["message"]
    assert message and len(message) <= 200
    assert all(c.isprintable() or c == "\n" for c in message), message
    assert not (replay_directory / browser_replays.ENCODING).exists()
    assert not (replay_directory / "replay.mp4").exists()


def test_it_never_copies_out_a_link_or_a_fifo_ffmpeg_left_in_place_of_its_video(replay_directory):
    """ffmpeg's folder is the helper's: what it leaves there is opened without following a link and only
    as a regular file (a link to /etc/shadow would have had root copy it into the replay)."""
    work = replay_directory / browser_replays.ENCODING
    work.mkdir()
    output = replay_directory / "replay.mp4"
    (work / "replay.mp4").symlink_to("/etc/shadow")
    assert browser_replays._copy_out(replay_directory, output) is False
    (work / "replay.mp4").unlink()
    os.mkfifo(work / "replay.mp4")
    assert browser_replays._copy_out(replay_directory, output) is False  # without blocking
    assert not output.exists()
    (work / "replay.mp4").unlink()
    (work / "replay.mp4").write_bytes(b"video")
    assert browser_replays._copy_out(replay_directory, output) is True
    assert output.read_bytes() == b"video" and not output.is_symlink()


def test_it_says_which_user_the_helpers_run_as(sandbox_url):
    helpers = httpx.get(sandbox_url + "/").json()["browsers"]["helpers"]
    if os.geteuid() == 0:
        uid, gid = confine.helper_identity()
        assert helpers == f"uid {uid}, gid {gid}, no groups, no capabilities"
    else:
        assert helpers == "the sandbox's own user (the sandbox is not root)"


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root sandbox changes the helpers' identity")
@pytest.mark.parametrize("value", ["0", "root", "nobody", "65534"])
def test_it_refuses_root_or_the_browsers_user_as_the_helpers(monkeypatch, value):
    monkeypatch.setenv("SANDBOX_EXEC_USER", "nobody")
    monkeypatch.setenv("SANDBOX_HELPER_USER", value)
    confine.identity.cache_clear()
    confine.helper_identity.cache_clear()
    try:
        with pytest.raises(LookupError):
            confine.helper_identity()
        assert confine.helper_user().startswith("none: SANDBOX_HELPER_USER=")
        assert "never run as root" in displays.Display.unavailable()
    finally:
        monkeypatch.undo()
        confine.identity.cache_clear()
        confine.helper_identity.cache_clear()
    assert confine.helper_identity()[0] not in (0, confine.identity()[0])
