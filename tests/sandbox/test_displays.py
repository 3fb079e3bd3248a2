"""The Xvfb displays of headful sessions (console/sandbox/engine.py ``Display``) as another jail meets them.

A display never listens on TCP, and each jail binds only its own display's socket file. Jailed browsers
share the host's network namespace (to reach their loopback proxy) and with it the abstract Unix sockets,
where Xvfb also listens (docs/security.md says why that stays for now).
"""

from __future__ import annotations

import contextlib
import os
import types
from pathlib import Path

import pytest

from console.sandbox import engine

pytestmark = pytest.mark.skipif(engine.Display.unavailable() is not None, reason="no Xvfb")


def unix_sockets(pid: int) -> list[str]:
    """The addresses of the listening Unix sockets process ``pid`` holds (abstract ones start with @)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    found = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes:
            found.append(fields[7])
    return found


async def test_it_listens_on_its_socket_file_and_never_on_tcp(monkeypatch):
    monkeypatch.setattr(engine, "get", lambda: types.SimpleNamespace(owner="sandbox-test-displays"))
    display = await engine.Display.start({"width": 64, "height": 48})
    try:
        listening = unix_sockets(display.process.pid)
        number = display.name.lstrip(":")
        assert f"/tmp/.X11-unix/X{number}" in listening
        tcp = "".join(Path(f"/proc/net/{name}").read_text() for name in ("tcp", "tcp6"))  # noqa: ASYNC240
        port = f":{6000 + int(number):04X} "
        assert not [line for line in tcp.splitlines()[1:] if port in line and " 0A " in line]
    finally:
        await display.stop()
