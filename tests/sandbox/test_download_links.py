"""A session's downloads land in its own directory, never through a link a command of the session left there.

The session's commands own its directory (it is their ``/``); the sandbox saves a page's downloads into
its ``/home/kernel/Downloads`` itself, as root when it runs as root. A symlink planted there by a command
(``ln -s /etc/cron.d/x report.csv``, or ``Downloads`` itself made a link to a host directory) must not
turn a download into a write of the sandbox's user anywhere on the host.
"""

from __future__ import annotations

import time

import pytest

from tests.sandbox.test_chromium import create, real  # noqa: F401 - the fixture

pytestmark = pytest.mark.chromium


def run(tenant, sid: str, command: str, *args: str) -> dict:
    response = tenant.call(
        "POST", f"/browsers/{sid}/process/exec", json={"command": command, "args": list(args)}, timeout=60
    )
    assert response.status_code == 200, response.text
    return response.json()


def download_report(tenant, sid: str) -> None:
    """Click the lab's link that downloads ``report.csv``."""
    click = tenant.call("POST", f"/browsers/{sid}/computer/click_mouse", json={"x": 60, "y": 120})
    assert click.status_code == 204, click.text


def saved_in_session(tenant, sid: str) -> bool:
    """``report.csv`` is a plain file (no link) in the session's Downloads."""
    check = "test -f /home/kernel/Downloads/report.csv && test ! -L /home/kernel/Downloads/report.csv"
    return run(tenant, sid, "sh", "-c", check)["exit_code"] == 0


@pytest.fixture
def outside(tmp_path):
    """A host directory no session should ever write in (root's own, 0700)."""
    folder = tmp_path / "host"
    folder.mkdir()
    folder.chmod(0o700)
    return folder


def wait_for(condition, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_it_never_saves_a_download_through_a_planted_file_link(real, outside):  # noqa: F811
    sid = create(real, start_url="https://lab.example.com/")["session_id"]
    target = outside / "report.csv"
    run(real, sid, "ln", "-s", str(target), "/home/kernel/Downloads/report.csv")
    download_report(real, sid)
    saved = wait_for(lambda: target.exists() or saved_in_session(real, sid))
    assert not target.exists(), "the download was written through the session's symlink onto the host"
    assert saved
    body = real.call(
        "GET", f"/browsers/{sid}/fs/read_file", params={"path": "/home/kernel/Downloads/report.csv"}
    )
    assert body.content == b"day,orders\n2026-11-23,42\n"


def test_it_never_saves_a_download_into_a_directory_link(real, outside):  # noqa: F811
    sid = create(real, start_url="https://lab.example.com/")["session_id"]
    run(real, sid, "rmdir", "/home/kernel/Downloads")
    run(real, sid, "ln", "-s", str(outside), "/home/kernel/Downloads")
    download_report(real, sid)
    wait_for(lambda: (outside / "report.csv").exists(), seconds=10)
    assert list(outside.iterdir()) == [], "the download was written into the host directory the link named"
