"""The displays of headful browsers: an Xvfb server per headful browser process, with an X authority
of its own (a cookie only that browser is given), out of the engine (``engine`` starts and stops them).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import socket
import tempfile
from pathlib import Path

from console.sandbox.chromium import confine, rooted

# Seconds Xvfb may take to accept connections (as long as the engine gives a browser to start).
START_TIMEOUT = 30.0
# Room a headful (non-kiosk) display leaves above the viewport for the browser's own UI (tabs, toolbar):
# the window is the viewport plus that UI, so its page area is the session's viewport.
UI_ALLOWANCE = 200


class Display:
    """An Xvfb server for one headful browser process, as the helpers' user (``confine.helper_identity``:
    neither root nor the browsers' user): of the viewport's size for a kiosk window, taller by
    ``UI_ALLOWANCE`` for a window with the browser's UI.

    Every display has an X authentication cookie of its own (MIT-MAGIC-COOKIE-1, 16 random bytes): Xvfb
    starts with ``-auth`` on its own copy of an Xauthority file holding it (0600, owned by the user Xvfb
    runs as), and only the browser it serves is given the other copy (0600, its user's; ``XAUTHORITY``,
    bound read-only into its jail), both in a private directory removed when the display stops. A client
    without the cookie is refused. The display listens on its socket file alone (``/tmp/.X11-unix/X<n>``,
    which only its browser's jail binds): no TCP, and no abstract socket, which every process of the
    host's network namespace could reach. Its number is chosen by the sandbox (``_free_displays``, from
    ``FIRST_DISPLAY``) and held by Xvfb's lock file."""

    _starting: set[int] = set()  # display numbers this process is starting a server on

    def __init__(self, process: asyncio.subprocess.Process, number: int, authority: Path):
        self.process = process
        self.number = number
        self.name = f":{number}"
        self.authority = authority  # the Xauthority file holding the display's cookie
        self.socket_file = Path(f"/tmp/.X11-unix/X{number}")
        self._socket_stamp = _stamp(self.socket_file)  # which file is this server's, should it be killed

    def environment(self) -> dict:
        """What an X client (an unjailed browser) needs to use the display."""
        return {"DISPLAY": self.name, "XAUTHORITY": str(self.authority)}

    @staticmethod
    def binary() -> str:
        return os.environ.get("SANDBOX_XVFB") or shutil.which("Xvfb") or "/usr/bin/Xvfb"

    @staticmethod
    def unavailable() -> str | None:
        binary = Display.binary()
        if not os.access(binary, os.X_OK):
            return f"no Xvfb at {binary} (make run installs Debian's xvfb)"
        try:
            confine.helper_identity()
        except LookupError as exc:  # never as root nor as the browsers' user
            return f"{exc}; Xvfb is never run as root nor as the browsers' user"
        return None

    @classmethod
    async def start(cls, size: dict, *, owner: str = "") -> Display:
        """A display of ``size``, its Xvfb tagged with ``owner`` (``SANDBOX_BROWSER_OWNER``: tests count
        a sandbox's servers by it)."""
        _x11_sockets()
        authority = _new_authority()
        try:
            return await cls._start(size, authority, owner)
        except BaseException:
            rooted.remove_beneath(authority.parent.parent, authority.parent.name)
            raise

    @classmethod
    async def _start(cls, size: dict, authority: Path, owner: str) -> Display:
        """Xvfb on the first display number that looks free, or the next if another server locked it first.

        The number is given explicitly: an explicit display's server takes ``/tmp/.X<n>-lock`` before it
        touches a socket, and gives up if another live server holds it. Asked to pick a number itself
        (``-displayfd`` alone), a server without the abstract socket (``-nolisten local``) would take
        display 0 whatever serves it: it replaces the socket file of a running display, and removes it on
        its way out."""
        problem = "no display number was free"
        unexplained = 0
        for number in _free_displays(cls._starting):
            cls._starting.add(number)
            try:
                display = await cls._try(number, size, authority, owner)
            finally:
                cls._starting.discard(number)
            if isinstance(display, Display):
                return display
            problem, explained = display
            # An exit with no live lock left to explain it is most often a race with another process's
            # server over the same number (it held the lock, then stopped before the look): the next
            # number is tried, a few times, so that a broken Xvfb still fails quickly and says why.
            unexplained += not explained
            if unexplained >= UNEXPLAINED_EXITS:
                break
        raise RuntimeError(f"Xvfb did not start: {problem}")

    @classmethod
    async def _try(cls, number: int, size: dict, authority: Path, owner: str) -> Display | tuple[str, bool]:
        """Xvfb on display ``number`` once it accepts connections; else why not, and whether a live
        server's lock explains it."""
        # One pixel more than the window: Chromium shrinks a window as large as the screen by a pixel.
        screen = f"{size['width'] + 1}x{size['height'] + 1}x24"
        # setpriv: killed with the sandbox, even if the sandbox itself is killed; a root sandbox's Xvfb
        # runs as the helpers' user (``confine.helper_identity``: neither root nor the browsers' user,
        # whose X11 it parses), without groups, capabilities or a way to gain any. setpriv execs Xvfb:
        # the process's id is the one Xvfb writes in its lock file.
        process = await asyncio.create_subprocess_exec(
            *confine.drop_to_helper(no_new_privs=True),
            cls.binary(),
            f":{number}",
            *("-screen", "0", screen, "-noreset"),
            # Only clients holding the display's cookie are accepted (the server's own copy of it).
            *("-auth", str(server_authority(authority))),
            # The socket file only: neither TCP nor the abstract socket (@/tmp/.X11-unix/X<n>), which
            # every process of the host's network namespace could reach (the shared browsers' jails
            # share it). A jail sees only its own display's socket file (docs/security.md).
            *("-nolisten", "tcp", "-nolisten", "local"),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env={"PATH": confine.PATH, "SANDBOX_BROWSER_OWNER": owner},
        )
        try:
            async with asyncio.timeout(START_TIMEOUT):
                while True:
                    if process.returncode is not None:
                        if _lock_owner(number) not in (None, process.pid):
                            return f"display :{number} was taken by another server", True
                        return f"Xvfb exited with {process.returncode} on display :{number}", False
                    if _lock_owner(number) == process.pid and _accepts(f"/tmp/.X11-unix/X{number}"):
                        return cls(process, number, authority)
                    await asyncio.sleep(0.02)
        except BaseException:
            if process.returncode is None:
                process.kill()
                await process.wait()
            raise

    async def stop(self) -> None:
        try:
            if self.process.returncode is None:
                self.process.terminate()
                try:
                    async with asyncio.timeout(5):
                        await self.process.wait()
                except TimeoutError:
                    self.process.kill()
                    await self.process.wait()
                    self._remove_leftovers()
        finally:
            # The folder is the display user's (``_new_authority``): nothing planted in it is followed.
            rooted.remove_beneath(self.authority.parent.parent, self.authority.parent.name)

    def _remove_leftovers(self) -> None:
        """A killed Xvfb leaves its socket and lock files behind: removed, if they are still this server's."""
        if self._socket_stamp is not None and _stamp(self.socket_file) == self._socket_stamp:
            with contextlib.suppress(OSError):
                self.socket_file.unlink()
        if _lock_owner(self.number) == self.process.pid:
            with contextlib.suppress(OSError):
                Path(f"/tmp/.X{self.number}-lock").unlink()


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    return info.st_ino, info.st_ctime_ns


XAUTH_COOKIE = b"MIT-MAGIC-COOKIE-1"
FAMILY_WILD = 0xFFFF  # any address: the entry holds for whatever socket a client reaches the display by


def xauthority_entry(cookie: bytes, number: str = "") -> bytes:
    """One Xauthority entry (libXau's format): family (u16, big-endian), then address, display number,
    authorization name and data, each a u16 big-endian length and its bytes. FamilyWild with an empty
    number matches any address and display; Xvfb accepts every cookie of its ``-auth`` file."""

    def counted(value: bytes) -> bytes:
        return len(value).to_bytes(2, "big") + value

    return (
        FAMILY_WILD.to_bytes(2, "big")
        + counted(b"")
        + counted(number.encode())
        + counted(XAUTH_COOKIE)
        + counted(cookie)
    )


def server_authority(authority: Path) -> Path:
    """The X server's copy of the display's Xauthority file (beside the browser's, ``_new_authority``)."""
    return authority.with_name("Xauthority-server")


def _new_authority() -> Path:
    """A new display's Xauthority file with a fresh random cookie, in a private directory of its own
    (root's, 0711: each user reaches its own file in it, nobody lists it): the browsers' copy
    (``Xauthority``, which the browser's jail binds) owned by their user (``confine.own``) and the
    server's (``server_authority``) by Xvfb's (``confine.own_helper``), both 0600. When the sandbox is not
    root, both are its own."""
    folder = Path(tempfile.mkdtemp(prefix="sandbox-xauth-"))
    try:
        authority = folder / "Xauthority"
        entry = xauthority_entry(secrets.token_bytes(16))
        for path, give in ((authority, confine.own), (server_authority(authority), confine.own_helper)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(entry)
            give(path)
        folder.chmod(0o711)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return authority


def _x11_sockets() -> None:
    """X servers' socket directory, shared by every user (as an X session would have it)."""
    sockets = Path("/tmp/.X11-unix")
    if not sockets.exists():
        sockets.mkdir(mode=0o1777)
        sockets.chmod(0o1777)


FIRST_DISPLAY = 100  # clear of a desktop's :0 and xvfb-run's :99
UNEXPLAINED_EXITS = 3  # Xvfb exits on numbers no live lock explains before a display gives up


def _free_displays(starting: set[int], tries: int = 64):
    """Display numbers from ``FIRST_DISPLAY`` that no server seems to hold: no lock file of a live
    process, no socket file anything listens on, no abstract socket, and none this process is starting.
    A killed server's leftovers do not hold a number: Xvfb replaces a dead process's lock file, and a
    socket file once it holds the lock."""
    abstract = {
        fields[7]
        for line in Path("/proc/net/unix").read_text().splitlines()[1:]
        if len(fields := line.split()) >= 8 and fields[7].startswith("@/tmp/.X11-unix/X")
    }
    number = FIRST_DISPLAY
    while tries > 0:
        taken = (
            number in starting
            or _locked(number)
            or _accepts(f"/tmp/.X11-unix/X{number}")
            or f"@/tmp/.X11-unix/X{number}" in abstract
        )
        if not taken:
            tries -= 1
            yield number
        number += 1


def _lock_owner(number: int) -> int | None:
    """The process id in display ``number``'s lock file (the server holding it), if there is one.

    The file is the X server's (the helpers' user's, ``confine.helper_identity``): read by descriptor, a
    regular file only, never through a link and never blocking on a FIFO, at most 64 bytes."""
    data = rooted.read_regular("/tmp", [f".X{number}-lock"], 64)
    try:
        return int(data.decode("ascii").strip()) if data is not None else None
    except (UnicodeDecodeError, ValueError):
        return None


def _locked(number: int) -> bool:
    """Whether display ``number``'s lock file names a live process (or cannot be read)."""
    if not os.path.lexists(f"/tmp/.X{number}-lock"):
        return False
    owner = _lock_owner(number)
    if owner is None:
        return True
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _accepts(path: str) -> bool:
    """Whether a server listens on the Unix socket file ``path`` (a connection opens; closed at once)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False
    return True
