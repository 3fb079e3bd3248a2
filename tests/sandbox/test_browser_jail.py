"""browser_jail.give: the browser's directories change hands without ever following a symlink; and the
network namespace of a browser process of a session's own (confine.Network, browser_jail.join_network)."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from console.sandbox.chromium import browser_jail, confine

NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")


def test_it_hands_a_directory_and_everything_in_it_to_the_user(tmp_path):
    top = tmp_path / "profile"
    (top / "Default" / "Cache").mkdir(parents=True)
    (top / "Default" / "Cookies").write_text("x")
    browser_jail.give(str(top), NOBODY, NOBODY)
    for path in (top, top / "Default", top / "Default" / "Cache", top / "Default" / "Cookies"):
        assert path.stat().st_uid == NOBODY


def test_it_never_follows_a_symlink_the_user_left_inside(tmp_path):
    outside = tmp_path / "root-owned"
    outside.mkdir()
    (outside / "secret").write_text("root's")
    top = tmp_path / "profile"
    top.mkdir()
    (top / "link-to-dir").symlink_to(outside)
    (top / "link-to-file").symlink_to(outside / "secret")
    browser_jail.give(str(top), NOBODY, NOBODY)
    assert outside.stat().st_uid == 0 and (outside / "secret").stat().st_uid == 0
    assert (top / "link-to-dir").lstat().st_uid == NOBODY  # the link itself changed hands


def test_it_refuses_a_top_directory_that_is_a_symlink(tmp_path):
    outside = tmp_path / "root-owned"
    outside.mkdir()
    (tmp_path / "profile").symlink_to(outside)
    with pytest.raises(OSError):
        browser_jail.give(str(tmp_path / "profile"), NOBODY, NOBODY)
    assert outside.stat().st_uid == 0


def test_it_keeps_a_port_of_the_browsers_network_namespace_for_whoever_joins_it():
    network = confine.Network.create()
    try:
        listening = network.socket()
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        network.connect(port).close()  # the sandbox reaches it (its loopback is up)
        with pytest.raises(ConnectionRefusedError):  # the host's loopback has no such port
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        # The wrapper joins the namespace by its path before it drops root: then the port is its own.
        joined = subprocess.run(
            [
                sys.executable,
                "-c",
                "import socket, sys; from console.sandbox.chromium import browser_jail; "
                "browser_jail.join_network(sys.argv[1]); "
                "socket.create_connection(('127.0.0.1', int(sys.argv[2])), timeout=5).close(); "
                "print(open('/proc/net/dev').read().count(':'))",
                network.path,
                str(port),
            ],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=Path(__file__).resolve().parents[2],
        )
        assert joined.returncode == 0, joined.stderr
        assert joined.stdout.split() == ["1"]  # its loopback alone
        listening.close()
    finally:
        network.close()
