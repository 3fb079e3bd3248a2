"""The Xvfb displays of headful sessions (console/sandbox/chromium/displays.py ``Display``) as another jail
meets them.

A display listens on its socket file alone: never on TCP, and never on the abstract Unix socket
(``@/tmp/.X11-unix/X<n>``), which every process of the host's network namespace (the shared browsers'
jails among them) could reach; each jail binds only its own display's socket file. Every display asks
for a cookie of its own (MIT-MAGIC-COOKIE-1), and a client without it is refused. The sandbox picks the
display number itself and Xvfb's lock file holds it, so a new display never takes a running one's socket
file. The clients here speak the X11 connection setup themselves (``x11_setup``): no X library between
the test and the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import stat
import struct
import tempfile
from pathlib import Path

import pytest

from console.sandbox.chromium import confine, displays
from tests.sandbox_fixtures import socket_inodes

pytestmark = pytest.mark.skipif(displays.Display.unavailable() is not None, reason="no Xvfb")
OWNER = "sandbox-test-displays"  # the SANDBOX_BROWSER_OWNER its Xvfb servers carry


def unix_sockets(pid: int) -> list[str]:
    """The addresses of the listening Unix sockets process ``pid`` holds (abstract ones start with @)."""
    inodes = socket_inodes([pid])
    found = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        # Listening only (__SO_ACCEPTCON in the flags): a connection the server accepted carries the same
        # path, and Display.start's own probe may still be one when this looks (a full run saw it twice).
        if len(fields) >= 8 and fields[6] in inodes and int(fields[3], 16) & 0x10000:
            found.append(fields[7])
    return found


def x11_connect(address: str, name: bytes = b"", data: bytes = b"") -> tuple[socket.socket, bytes]:
    """Open an X11 connection to ``address`` (a socket file, or an abstract socket as ``@path``) with the
    authorization ``name`` and ``data``: the socket and the server's whole answer to the setup, whose first
    byte is 0 (failed), 1 (success) or 2 (authenticate)."""

    def padded(value: bytes) -> bytes:
        return value + b"\0" * (-len(value) % 4)

    # Byte order 'l' (little-endian), protocol 11.0, the lengths of the name and data, then both padded.
    request = struct.pack("<BxHHHHxx", ord("l"), 11, 0, len(name), len(data)) + padded(name) + padded(data)
    target = "\0" + address[1:] if address.startswith("@") else address
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(10)
        client.connect(target)
        client.sendall(request)
        head = receive(client, 8)
        # Every answer's 8-byte head ends with the length of what follows, in 4-byte units.
        (more,) = struct.unpack_from("<H", head, 6)
        return client, head + receive(client, 4 * more)
    except BaseException:
        client.close()
        raise


def receive(client: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = client.recv(size - len(data))
        assert chunk, "the X server closed the connection"
        data += chunk
    return data


def x11_setup(address: str, name: bytes = b"", data: bytes = b"") -> int:
    """The first byte of the server's answer to a connection setup: 0 failed, 1 success, 2 authenticate."""
    client, answer = x11_connect(address, name, data)
    client.close()
    return answer[0]


def x11_windows(address: str, cookie: bytes) -> int:
    """How many top-level windows the display's first screen holds (QueryTree on its root window)."""
    client, answer = x11_connect(address, b"MIT-MAGIC-COOKIE-1", cookie)
    with client:
        assert answer[0] == 1, "the display refused the cookie"
        vendor, screens, formats = struct.unpack_from("<H2xBB", answer, 24)
        root_at = 40 + vendor + (-vendor % 4) + 8 * formats
        assert screens >= 1
        (root,) = struct.unpack_from("<I", answer, root_at)
        client.sendall(struct.pack("<BxHI", 15, 2, root))  # QueryTree, 2 units long
        reply = receive(client, 32)
        assert reply[0] == 1, f"QueryTree failed: {reply[:2]!r}"
        (more,) = struct.unpack_from("<I", reply, 4)
        receive(client, 4 * more)
        (children,) = struct.unpack_from("<H", reply, 16)
        return children


def cookie_of(authority: Path) -> bytes:
    """The MIT-MAGIC-COOKIE-1 data of the first entry of an Xauthority file."""
    raw, fields, at = authority.read_bytes(), [], 2
    for _ in range(4):  # address, display number, name, data
        (length,) = struct.unpack_from(">H", raw, at)
        fields.append(raw[at + 2 : at + 2 + length])
        at += 2 + length
    assert fields[2] == b"MIT-MAGIC-COOKIE-1"
    return fields[3]


def uid_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError(f"no Uid line for {pid}")


def abstract_x_sockets() -> set[str]:
    """Every abstract X socket of the host's network namespace (``@/tmp/.X11-unix/X<n>``), any server's."""
    found = set()
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[7].startswith("@/tmp/.X11-unix/"):
            found.add(fields[7])
    return found


async def test_it_refuses_a_client_without_the_displays_cookie():
    first = await displays.Display.start({"width": 64, "height": 48}, owner=OWNER)
    second = await displays.Display.start({"width": 64, "height": 48}, owner=OWNER)
    folders = [first.authority.parent, second.authority.parent]
    try:
        cookie = cookie_of(first.authority)
        assert len(cookie) == 16 and cookie != cookie_of(second.authority)
        # Xvfb's copy is its user's alone, the browser's copy the browser's user's, in a directory of
        # the sandbox's own that nobody else lists.
        server = displays.server_authority(first.authority)
        assert cookie_of(server) == cookie
        browser_uid = (confine.identity() or (os.getuid(),))[0]
        for path, mode, owner in (
            (server, 0o600, uid_of(first.process.pid)),
            (first.authority, 0o600, browser_uid),
            (first.authority.parent, 0o711, os.getuid()),
        ):
            info = path.lstat()
            assert stat.S_IMODE(info.st_mode) == mode, path
            assert info.st_uid == owner, path
        address = f"/tmp/.X11-unix/X{first.name.lstrip(':')}"
        assert x11_setup(address) == 0  # no authorization at all
        assert x11_setup(address, b"MIT-MAGIC-COOKIE-1", cookie_of(second.authority)) == 0
        assert x11_setup(address, b"MIT-MAGIC-COOKIE-1", bytes(16)) == 0
        assert x11_setup(address, b"MIT-MAGIC-COOKIE-1", cookie) == 1
        assert x11_windows(address, cookie) == 0  # nothing shows on it yet
    finally:
        await first.stop()
        await second.stop()
    assert [folder for folder in folders if folder.exists()] == []  # the cookies go with their displays


def status_of(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


async def test_it_runs_xvfb_as_the_helpers_user_without_groups_or_capabilities():
    """A root sandbox's Xvfb (which parses what a jailed browser sends it) runs neither as root nor as
    the browsers' user: as ``SANDBOX_HELPER_USER``, without groups or capabilities, killed with its
    parent; its files are that user's, and another user (a browser's) still connects with the cookie."""
    display = await displays.Display.start({"width": 64, "height": 48}, owner=OWNER)
    try:
        status = status_of(display.process.pid)
        assert status["Name"] == "Xvfb"
        helper = confine.helper_identity()
        if helper is None:  # a sandbox that is not root has nothing to drop
            assert status["Uid"].split() == [str(os.getuid())] * 4
            return
        assert status["Uid"].split() == [str(helper[0])] * 4
        assert status["Gid"].split() == [str(helper[1])] * 4
        assert helper[0] not in (0, confine.identity()[0])
        assert status["Groups"] == ""
        for capabilities in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
            assert int(status[capabilities], 16) == 0, capabilities
        assert status["NoNewPrivs"] == "1"
        number = display.name.lstrip(":")
        for path in (display.socket_file, Path(f"/tmp/.X{number}-lock")):
            assert path.lstat().st_uid == helper[0], path
        # The browsers' user (another uid, without the helper's group) connects with its copy of the cookie.
        cookie = cookie_of(display.authority)
        browser_uid, browser_gid = confine.identity()
        probe = (
            "import socket,struct,sys\n"
            "c=bytes.fromhex(sys.argv[2]);s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1])\n"
            "s.sendall(struct.pack('<BxHHHHxx',108,11,0,18,16)+b'MIT-MAGIC-COOKIE-1\\0\\0'+c)\n"
            "print(s.recv(1)[0])\n"
        )
        process = await asyncio.create_subprocess_exec(
            "setpriv",
            f"--reuid={browser_uid}",
            f"--regid={browser_gid}",
            "--clear-groups",
            "--",
            "/usr/bin/python3",
            "-c",
            probe,
            str(display.socket_file),
            cookie.hex(),
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await process.communicate()
        assert out.strip() == b"1"
    finally:
        await display.stop()


async def test_it_listens_on_its_socket_file_and_never_on_tcp_nor_an_abstract_socket():
    display = await displays.Display.start({"width": 64, "height": 48}, owner=OWNER)
    try:
        listening = unix_sockets(display.process.pid)
        number = display.name.lstrip(":")
        assert listening == [f"/tmp/.X11-unix/X{number}"]
        # Nobody's abstract socket of this display: not a connection's way in.
        assert f"@/tmp/.X11-unix/X{number}" not in abstract_x_sockets()
        with pytest.raises(ConnectionRefusedError):
            x11_setup(f"@/tmp/.X11-unix/X{number}")
        tcp = "".join(Path(f"/proc/net/{name}").read_text() for name in ("tcp", "tcp6"))  # noqa: ASYNC240
        port = f":{6000 + int(number):04X} "
        assert not [line for line in tcp.splitlines()[1:] if port in line and " 0A " in line]
        # Its number is held by Xvfb's lock file, as any X server's.
        lock = Path(f"/tmp/.X{number}-lock")
        assert int(lock.read_text().strip()) == display.process.pid  # noqa: ASYNC240
    finally:
        await display.stop()
    # Its lock goes with it (another worker's display may take the free number at once: then it is theirs).
    try:
        held = int(lock.read_text().strip())  # noqa: ASYNC240
    except FileNotFoundError:
        held = None
    assert held != display.process.pid


async def test_it_never_takes_the_socket_file_of_a_running_display():
    first = await displays.Display.start({"width": 64, "height": 48}, owner=OWNER)
    made = displays._stamp(first.socket_file)
    started = await asyncio.gather(
        *(displays.Display.start({"width": 64, "height": 48}, owner=OWNER) for _ in range(2))
    )
    try:
        numbers = {first.number, *(display.number for display in started)}
        assert len(numbers) == 3
        # The first display keeps its socket file, and it still answers its own cookie there.
        assert displays._stamp(first.socket_file) == made
        assert x11_setup(str(first.socket_file), b"MIT-MAGIC-COOKIE-1", cookie_of(first.authority)) == 1
        for display in started:
            assert unix_sockets(display.process.pid) == [str(display.socket_file)]
    finally:
        for display in (first, *started):
            await display.stop()


async def test_it_moves_on_when_another_server_locks_the_number_first(monkeypatch):
    """Between the look at a number and Xvfb's start, another server may lock it: the next one is taken."""
    free = displays._free_displays(set())
    taken = next(free)
    lock = Path(f"/tmp/.X{taken}-lock")
    # A live process holds it (this test's), written as an X server writes its lock file.
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{os.getpid():10d}\n")
    offered = iter([taken, *free])
    monkeypatch.setattr(displays, "_free_displays", lambda starting: offered)
    try:
        display = await displays.Display.start({"width": 64, "height": 48}, owner=OWNER)
        try:
            assert display.number != taken
            assert not Path(f"/tmp/.X11-unix/X{taken}").exists()  # noqa: ASYNC240
        finally:
            await display.stop()
        assert lock.read_text() == f"{os.getpid():10d}\n"  # noqa: ASYNC240 - left to its owner
    finally:
        lock.unlink()  # noqa: ASYNC240


@pytest.fixture
def reachable(tmp_path):
    """A folder the servers' user can reach (a root sandbox drops to the helpers' user; pytest's own
    temporary folders are the test user's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="displays-test-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def _xvfb_wrapper(folder: Path, script: str) -> str:
    """An Xvfb stand-in that runs ``script`` (a shell script) in ``folder``."""
    wrapper = folder / "Xvfb"
    wrapper.write_text(f"#!/bin/sh\n{script}\n")
    wrapper.chmod(0o755)
    return str(wrapper)


async def test_it_moves_on_when_a_server_exits_with_no_lock_to_explain_it(monkeypatch, reachable):
    """Another process's server may hold a number and stop before the look at its lock: the exit is
    taken as that race, and the next number is tried."""
    free = displays._free_displays(set())
    first = next(free)
    wrapper = _xvfb_wrapper(
        reachable, f'[ "$1" = ":{first}" ] && exit 1\nexec {displays.Display.binary()} "$@"'
    )
    monkeypatch.setenv("SANDBOX_XVFB", wrapper)
    offered = iter([first, *free])
    monkeypatch.setattr(displays, "_free_displays", lambda starting: offered)
    display = await displays.Display.start({"width": 64, "height": 48}, owner=OWNER)
    try:
        assert display.number != first
    finally:
        await display.stop()


async def test_a_server_that_always_exits_is_given_up_on_after_a_few_numbers(monkeypatch, reachable):
    monkeypatch.setenv("SANDBOX_XVFB", _xvfb_wrapper(reachable, "exit 1"))
    tried = []
    real = displays._free_displays

    def offered(starting):
        for number in real(starting):
            tried.append(number)
            yield number

    monkeypatch.setattr(displays, "_free_displays", offered)
    with pytest.raises(RuntimeError, match=r"Xvfb did not start: Xvfb exited with 1 on display :\d+"):
        await displays.Display.start({"width": 64, "height": 48}, owner=OWNER)
    # Given up after a few (numbers other workers' servers took meanwhile do not count), not all 64.
    assert displays.UNEXPLAINED_EXITS <= len(tried) < 16


async def test_it_removes_what_a_display_it_had_to_kill_left_behind():
    display = await displays.Display.start({"width": 64, "height": 48}, owner=OWNER)
    assert f"/tmp/.X11-unix/X{display.number}" in unix_sockets(display.process.pid)
    os.kill(display.process.pid, signal.SIGSTOP)  # deaf to SIGTERM: stop() has to kill it
    await display.stop()
    assert display.process.returncode == -signal.SIGKILL
    assert displays._stamp(display.socket_file) is None  # its number is free to take again
    assert not Path(f"/tmp/.X{display.number}-lock").exists()  # noqa: ASYNC240


async def test_it_takes_a_number_a_killed_server_left_its_files_on():
    """A killed sandbox's displays leave their lock and socket files: the number is free again (Xvfb
    replaces a dead process's lock, then the socket file nothing listens on)."""
    ended = await asyncio.create_subprocess_exec("true")
    await ended.wait()
    for _attempt in range(10):
        number = next(displays._free_displays(set()))
        lock = Path(f"/tmp/.X{number}-lock")
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        except FileExistsError:
            continue  # another test's display took the number meanwhile (parallel workers): the next free one
        break
    else:
        pytest.fail("no free display number stayed free long enough to be taken")
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{ended.pid:10d}\n")
    left = Path(f"/tmp/.X11-unix/X{number}")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(left))  # the file stays when the socket closes; nothing listens on it
    if (ids := confine.helper_identity()) is not None:
        for path in (lock, left):  # as Xvfb's user left them (/tmp is sticky: only their owner removes them)
            os.chown(path, *ids)
    try:
        display = await displays.Display.start({"width": 64, "height": 48}, owner=OWNER)
        try:
            if display.number != number:
                # Another worker's display took the freed number first (parallel workers): free again all
                # the same. Its lock names that live Xvfb now, not the dead process, or is gone with it when
                # that display has stopped already.
                with contextlib.suppress(FileNotFoundError):
                    assert int(lock.read_text().strip()) != ended.pid  # noqa: ASYNC240
            else:
                holder = int(lock.read_text().strip())  # noqa: ASYNC240
                assert holder == display.process.pid
                assert unix_sockets(display.process.pid) == [str(left)]
                assert x11_setup(str(left), b"MIT-MAGIC-COOKIE-1", cookie_of(display.authority)) == 1
        finally:
            await display.stop()
    finally:
        # The files the test made, if still the dead process's (not another worker's display's).
        with contextlib.suppress(FileNotFoundError, ValueError):
            if int(lock.read_text().strip()) == ended.pid:  # noqa: ASYNC240
                lock.unlink()  # noqa: ASYNC240
                left.unlink(missing_ok=True)  # noqa: ASYNC240
