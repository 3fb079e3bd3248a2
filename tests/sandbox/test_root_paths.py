"""Root never writes or reads through a path the browser's user could have changed.

A session's own browser process runs jailed as an unprivileged user that owns the session's directory
(``browser_jail.give``): its profile, its downloads. A compromised browser can put a symlink or a FIFO
anywhere in it between a standby and the next wake. The sandbox (root) must then neither unpack the
session's extensions where such a link points, nor remove or read ``DevToolsActivePort`` through one,
nor block on a FIFO planted in its place.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import stat
import threading
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from console.sandbox.chromium import engine, rooted
from console.sandbox.core.errors import ApiError
from console.sandbox.resources import browser_files
from tests.sandbox.test_chromium import create, pixel
from tests.sandbox_fixtures import new_tenant, start_sandbox, stop_sandbox, temporary_folder

PORT_FILE = "1234\n/devtools/browser/0f6c2d1e-1111-4a2b-9c3d-abcdefabcdef\n"


@pytest.fixture
def session_dir(tmp_path):
    """A session's directory as the browser leaves it: ``profile`` in it."""
    directory = tmp_path / "browser-x"
    (directory / "profile").mkdir(parents=True)
    return directory


@pytest.fixture
def outside(tmp_path):
    """A host directory no browser should ever make root read or write in."""
    folder = tmp_path / "host"
    folder.mkdir()
    folder.chmod(0o700)
    return folder


def test_it_reads_the_devtools_port_chromium_wrote(session_dir):
    (session_dir / "profile" / "DevToolsActivePort").write_text(PORT_FILE)
    assert engine.devtools_endpoint(session_dir) == (
        "ws://127.0.0.1:1234/devtools/browser/0f6c2d1e-1111-4a2b-9c3d-abcdefabcdef"
    )


@pytest.mark.parametrize(
    "content",
    [
        "1234",  # not written yet to its end
        "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n",
        "99999\n/devtools/browser/abc\n",
        "1234\n/devtools/browser/abc\nsomething more\n",
        "1234\n/devtools/page/abc?x=1\n",
        "1234\n/devtools/browser/" + "a" * 5000 + "\n",
    ],
)
def test_it_takes_nothing_but_a_port_and_a_browser_path_from_the_file(session_dir, content):
    (session_dir / "profile" / "DevToolsActivePort").write_text(content)
    assert engine.devtools_endpoint(session_dir) is None


def test_it_never_reads_the_devtools_port_through_a_link(session_dir, outside):
    (outside / "secret").write_text(PORT_FILE)
    (session_dir / "profile" / "DevToolsActivePort").symlink_to(outside / "secret")
    assert engine.devtools_endpoint(session_dir) is None
    # The profile itself a link to a directory holding such a file: not read, not removed either.
    (outside / "DevToolsActivePort").write_text(PORT_FILE)
    (session_dir / "profile" / "DevToolsActivePort").unlink()
    (session_dir / "profile").rmdir()
    (session_dir / "profile").symlink_to(outside)
    assert engine.devtools_endpoint(session_dir) is None
    engine.forget_devtools_port(session_dir)
    assert (outside / "DevToolsActivePort").read_text() == PORT_FILE


def test_it_forgets_the_previous_runs_devtools_port(session_dir):
    (session_dir / "profile" / "DevToolsActivePort").write_text(PORT_FILE)
    engine.forget_devtools_port(session_dir)
    assert not (session_dir / "profile" / "DevToolsActivePort").exists()
    engine.forget_devtools_port(session_dir)  # nothing there: nothing to do


def test_it_never_blocks_on_a_fifo_in_place_of_the_devtools_port(session_dir):
    fifo = session_dir / "profile" / "DevToolsActivePort"
    os.mkfifo(fifo)
    outcome: list = []
    reader = threading.Thread(target=lambda: outcome.append(engine.devtools_endpoint(session_dir)))
    reader.start()
    reader.join(timeout=20)
    if reader.is_alive():  # blocked in open(): a writer releases it, and the test fails below
        with open(fifo, "w") as writer:
            writer.write(PORT_FILE)
        reader.join()
    assert outcome == [None]


def test_it_removes_a_session_directory_without_following_what_was_planted_in_it(session_dir, outside):
    (outside / "keep").write_text("root's")
    (session_dir / "profile" / "Default").mkdir()
    (session_dir / "profile" / "Default" / "Cookies").write_text("x")
    (session_dir / "profile" / "host").symlink_to(outside)
    (session_dir / "downloads").symlink_to(outside)
    os.mkfifo(session_dir / "profile" / "pipe")
    rooted.remove_beneath(session_dir.parent, session_dir.name)
    assert not os.path.lexists(session_dir)
    assert (outside / "keep").read_text() == "root's"
    # A link in the session's own place goes as a link.
    session_dir.symlink_to(outside)
    rooted.remove_beneath(session_dir.parent, session_dir.name)
    assert not os.path.lexists(session_dir)
    assert (outside / "keep").read_text() == "root's"


def test_it_opens_only_regular_files_below_a_directory_without_links(tmp_path, outside):
    (outside / "secret").write_text("root's")
    (tmp_path / "downloads").mkdir()
    (tmp_path / "downloads" / "plain").write_text("data")
    (tmp_path / "downloads" / "link").symlink_to(outside / "secret")
    os.mkfifo(tmp_path / "downloads" / "fifo")
    (tmp_path / "elsewhere").symlink_to(outside)
    assert rooted.read_regular(tmp_path, ("downloads", "plain"), 100) == b"data"
    assert rooted.read_regular(tmp_path, ("downloads", "plain"), 2) == b"da"
    assert rooted.read_regular(tmp_path, ("downloads", "link"), 100) is None
    assert rooted.read_regular(tmp_path, ("downloads", "fifo"), 100) is None
    assert rooted.read_regular(tmp_path, ("elsewhere", "secret"), 100) is None
    assert rooted.read_regular(tmp_path, ("downloads", "missing"), 100) is None


def save_download_of(source: Path) -> list:
    """``save_download`` of ``source`` on a thread (a FIFO blocking its open is released and fails the
    test), and what it raised."""
    outcome: list = []

    def run() -> None:
        record = {"session_id": "ses-rootpaths-" + str(time.monotonic_ns())}
        try:
            asyncio.run(browser_files.save_download(record, "report.csv", str(source), 0.0))
        except ApiError as exc:
            outcome.append(exc.status)
        else:
            outcome.append("saved")

    saver = threading.Thread(target=run)
    saver.start()
    saver.join(timeout=20)
    if saver.is_alive():
        with open(source, "w") as writer:
            writer.write("released")
        saver.join()
        outcome.append("blocked")
    return outcome


def test_it_never_blocks_on_a_fifo_or_follows_a_link_in_place_of_a_download(tmp_path, outside):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    os.mkfifo(downloads / "guid-1")
    assert save_download_of(downloads / "guid-1") == [400]
    (outside / "guid-2").write_text("root's")
    (downloads / "guid-2").symlink_to(outside / "guid-2")
    assert save_download_of(downloads / "guid-2") == [400]
    # The downloads folder itself made a link: not followed either.
    (tmp_path / "linked").symlink_to(outside)
    assert save_download_of(tmp_path / "linked" / "guid-2") == [400]
    (downloads / "guid-3").write_text("a,b\n")
    assert save_download_of(downloads / "guid-3") == ["saved"]


# A real browser, woken after the browser's user changed its directory ------------------------------


def extension_zip() -> bytes:
    manifest = {
        "manifest_version": 3,
        "name": "Paint it",
        "version": "1.0",
        "content_scripts": [{"matches": ["<all_urls>"], "js": ["paint.js"], "run_at": "document_end"}],
    }
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("paint-it/manifest.json", json.dumps(manifest))
        zipped.writestr("paint-it/paint.js", "document.body.style.background = 'rgb(18, 52, 86)';")
    return archive.getvalue()


@pytest.fixture
def idle_sandbox():
    """A Chromium sandbox whose sessions go to standby after two idle seconds, its TMPDIR the test's."""
    owner = "sandbox-test-rootpaths-" + str(time.monotonic_ns())
    with temporary_folder() as tmp:
        url, process = start_sandbox(
            SANDBOX_ENGINE="chromium",
            SANDBOX_BROWSER_IDLE_SECONDS="2",
            SANDBOX_BROWSER_OWNER=owner,
            TMPDIR=str(tmp),
        )
        try:
            yield new_tenant(url), tmp
        finally:
            stop_sandbox(process)


def wait_for_standby(tenant, sid: str) -> None:
    deadline = time.monotonic() + 30
    state = None
    while time.monotonic() < deadline:
        state = tenant.call("GET", f"/browsers/{sid}").json()["sandbox"]["browser"]
        if state == "standby":
            return
        time.sleep(0.2)
    raise AssertionError(f"the session did not go to standby ({state})")


def painted(tenant, sid: str) -> bool:
    deadline, colour = time.monotonic() + 15, None
    while time.monotonic() < deadline and colour != (18, 52, 86):
        shot = tenant.call("POST", f"/browsers/{sid}/computer/screenshot", json={}, timeout=60)
        if shot.status_code == 200:
            colour = pixel(shot.content, 300, 200)
        time.sleep(0.2)
    return colour == (18, 52, 86)


def remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return
    for entry in sorted(path.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        entry.rmdir() if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    path.rmdir()


@pytest.mark.chromium
def test_it_never_unpacks_extensions_or_removes_a_port_file_through_the_browsers_links(idle_sandbox, outside):
    tenant, tmp = idle_sandbox
    status = httpx.get(tenant.url + "/").json()["browsers"]
    assert status["confinement"] == "bubblewrap, as an unprivileged user"
    uploaded = tenant.call(
        "POST", "/extensions", files={"file": ("paint.zip", extension_zip())}, data={"name": "paint"}
    )
    assert uploaded.status_code == 201, uploaded.text
    extension_id = uploaded.json()["id"]
    session = create(tenant, start_url="https://lab.example.com/", extensions=[{"name": "paint"}])
    sid = session["session_id"]
    assert painted(tenant, sid)
    (root,) = tmp.glob("sandbox-browsers-*")
    (directory,) = root.glob("browser-*")
    # The browser's user owns the session's directory (the jail gave it): it can plant anything in it.
    assert directory.stat().st_uid != os.getuid()
    assert (directory / "profile").stat().st_uid == directory.stat().st_uid

    # Unpacked by root where the browser reads and cannot write: root's own, nothing writable by others.
    unpacked = root / "extensions" / sid / extension_id
    assert (unpacked / "paint-it" / "manifest.json").is_file()
    for path in [unpacked, *unpacked.rglob("*")]:
        st = path.lstat()
        assert st.st_uid == os.getuid(), path
        assert not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH), path
    assert not (directory / "extensions").exists()

    # In standby, the browser's user makes its directory's `extensions` a link to a host directory
    # (as it could have before: it owned the folder the extensions were unpacked in).
    wait_for_standby(tenant, sid)
    planted = directory / "extensions"
    if os.path.lexists(planted):
        remove(planted)
    planted.symlink_to(outside)
    woken = painted(tenant, sid)
    assert list(outside.iterdir()) == []  # nothing unpacked where the link points
    assert woken  # and the extension still loaded

    # Then its profile a link to a host directory holding a DevToolsActivePort: the wake neither removes
    # it nor reads it (it fails: the jail refuses a linked profile; nothing of the file in the answer).
    wait_for_standby(tenant, sid)
    remove(directory / "profile")
    secret = "4321\n/devtools/browser/the-hosts-own-secret-text\n"
    (outside / "DevToolsActivePort").write_text(secret)
    (directory / "profile").symlink_to(outside)
    answer = tenant.call("POST", f"/browsers/{sid}/computer/screenshot", json={}, timeout=90)
    assert "the-hosts-own-secret-text" not in answer.text
    assert (outside / "DevToolsActivePort").read_text() == secret
    assert sorted(p.name for p in outside.iterdir()) == ["DevToolsActivePort"]

    # The session ended: its directories are gone, the host directory its links named untouched.
    assert tenant.call("DELETE", f"/browsers/{sid}", timeout=60).status_code == 204
    deadline = time.monotonic() + 15
    left = [directory, root / "extensions" / sid]
    while any(os.path.lexists(path) for path in left) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not os.path.lexists(directory)
    assert not (root / "extensions" / sid).exists()
    assert (outside / "DevToolsActivePort").read_text() == secret
