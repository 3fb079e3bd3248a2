"""Confinement of the commands a browser session runs (``browser_processes``), with bubblewrap.

Every command runs under ``bwrap``, never directly: new user, PID, IPC, UTS, cgroup and network
namespaces; no capabilities; its own session; killed with the sandbox. What it sees:

- the session's directory (``browser_files``) as ``/``, read-write: ``/home/kernel`` and ``/tmp`` are the
  paths the files API shows, and the only place a command can write;
- the host's ``/usr`` (with ``/bin``, ``/sbin``, ``/lib*``) read-only, a new ``/proc`` (its own processes
  only) and a minimal ``/dev``;
- an ``/etc`` of its own: a generated ``passwd``/``group`` (the ``kernel`` user), ``hosts`` and
  ``nsswitch.conf``, plus the few host entries programs need (dynamic linker cache, CA certificates,
  alternatives, time zone). Never the console's tree, its database, ``/root``, ``/home`` or ``/work``.

Identity: a sandbox running as root starts bwrap as ``SANDBOX_EXEC_USER`` (default ``nobody``), which owns
the session directories. A sandbox running as an ordinary user cannot change uid: its commands keep that
uid, but in a user namespace where nothing of the host tree but ``/usr`` and the session is mounted, so the
console's files stay out of reach. ``SANDBOX_EXEC_NETWORK=on`` shares the host's network (off by default).

Nothing runs unconfined: ``unavailable()`` checks once (bwrap runs ``true`` with the same confinement)
and, when bwrap is missing or cannot confine, says why; exec and spawn then refuse (503).
"""

from __future__ import annotations

import atexit
import ctypes
import fcntl
import os
import pwd
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
from functools import cache
from pathlib import Path

# Read-only from the host: the system's programs and libraries (merged-/usr symlinks are bound as the
# directories they point to, so nothing is created in the session but empty mount points).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What programs need from the host's /etc; nothing holding credentials (no pip.conf, npmrc, gitconfig,
# ssl/private, shadow).
HOST_ETC = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    "localtime",
    "timezone",
    "os-release",
    "debian_version",
    "mime.types",
    "services",
    "protocols",
    "gai.conf",
    "host.conf",
    "inputrc",
    "bash.bashrc",
    "profile",
    "terminfo",
    "fonts",
)
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
PROBE_TIMEOUT = 10


def _flag(name: str, default: str) -> bool:
    return os.environ.get(name, default).strip().lower() not in ("off", "0", "false", "no", "")


def bwrap() -> str:
    return os.environ.get("SANDBOX_BWRAP") or shutil.which("bwrap") or "/usr/bin/bwrap"


@cache
def identity() -> tuple[int, int] | None:
    """(uid, gid) commands run as when the sandbox is root; None when it cannot change identity."""
    if os.geteuid() != 0:
        return None
    return _unprivileged("SANDBOX_EXEC_USER", _setting("SANDBOX_EXEC_USER", "nobody"))


def _setting(variable: str, default: str) -> str:
    return os.environ.get(variable, default).strip() or default


def _unprivileged(variable: str, name: str) -> tuple[int, int]:
    """(uid, gid) of the user ``name`` (a name, or a uid, which needs no passwd entry) that the environment
    ``variable`` gave; LookupError when that is root or no user at all."""
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
        uid, gid = entry.pw_uid, entry.pw_gid
    except (KeyError, ValueError):
        uid = gid = int(name) if name.isdigit() else -1
    if uid <= 0 or gid <= 0:
        raise LookupError(f"{variable}={name!r} is not an unprivileged user of this machine")
    return uid, gid


# The uid the sandbox's helper programs run as when it is root (``helper_identity``): a fixed uid no user
# of a Debian system has (65534 is ``nobody``, the commands' and browsers' default), no passwd entry needed.
DEFAULT_HELPER_USER = "65533"


@cache
def helper_identity() -> tuple[int, int] | None:
    """(uid, gid) the helpers a browser feeds (Xvfb, ffmpeg) run as when the sandbox is root; None when it
    cannot change identity (they then run as the sandbox does).

    Neither root (an X server or a video decoder reached by a hostile browser would be root on the host)
    nor the browsers' and commands' own ``identity``: a process of the browsers' uid could signal,
    ptrace or read the memory of a helper of that uid it can see, and its files (Xvfb's lock file,
    socket, cookie) would be the browser's to replace. The jails' PID namespaces hide host processes
    from what runs inside them, but not from a process of that uid that escaped its jail, nor from
    bwrap and the jail's wrapper, which run on the host as that user."""
    if os.geteuid() != 0:
        return None
    name = _setting("SANDBOX_HELPER_USER", DEFAULT_HELPER_USER)
    uid, gid = _unprivileged("SANDBOX_HELPER_USER", name)
    if uid == identity()[0]:
        raise LookupError(f"SANDBOX_HELPER_USER={name!r} is the browsers' own user (SANDBOX_EXEC_USER)")
    return uid, gid


def helper_user() -> str:
    """Who the helpers run as, for ``GET /`` of the sandbox."""
    try:
        ids = helper_identity()
    except LookupError as exc:
        return f"none: {exc}"
    if ids is None:
        return "the sandbox's own user (the sandbox is not root)"
    return f"uid {ids[0]}, gid {ids[1]}, no groups, no capabilities"


def drop_to_helper(*, pdeathsig: bool = True, no_new_privs: bool = False) -> list[str]:
    """``setpriv``'s command line (up to its ``--``) that runs a helper as ``helper_identity``: its uid
    and gid, no supplementary groups, no inheritable or ambient capabilities; killed with the sandbox
    (``pdeathsig``). A sandbox that is not root keeps its identity (there is nothing to drop)."""
    args = ["setpriv"]
    if pdeathsig:
        args += ["--pdeathsig", "KILL"]
    ids = helper_identity()
    if ids is not None:
        args += [f"--reuid={ids[0]}", f"--regid={ids[1]}", "--clear-groups", "--inh-caps=-all"]
        args.append("--ambient-caps=-all")
    if no_new_privs:
        args.append("--no-new-privs")
    return [*args, "--"]


def helper_command(argv: list[str], *, readable: list[Path], writable: list[Path]) -> list[str]:
    """The command line running a helper program (``argv``) as ``helper_identity`` and, where bubblewrap
    confines (``unavailable``), in a jail: new user, PID, IPC, UTS, cgroup and network namespaces (no
    network at all), no capabilities, of the host only the system, a generated ``/etc``, a private
    ``/tmp``, the ``readable`` paths read-only and the ``writable`` ones read-write, from the first
    writable one. Without bubblewrap, it is at least unprivileged."""
    drop = drop_to_helper()
    if unavailable() is not None:
        return [*drop, *argv]
    args = [bwrap(), "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"]
    args += ["--new-session", "--cap-drop", "ALL", "--hostname", "sandbox"]
    args += [*_system_binds(), "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in readable:
        args += ["--ro-bind", str(path), str(path)]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    args += ["--clearenv", "--setenv", "PATH", PATH, "--setenv", "LANG", "C.UTF-8"]
    chdir = str(writable[0]) if writable else "/"
    return [*drop, *args, "--chdir", chdir, "--", *argv]


def own_helper(path: Path) -> None:
    """Give a path the helpers' identity (by itself, never following a link)."""
    ids = helper_identity()
    if ids is not None:
        os.lchown(path, *ids)


def own(path: Path) -> None:
    """Give a path the commands' identity (a root sandbox writes the session's files as root)."""
    ids = identity()
    if ids is not None:
        os.lchown(path, *ids)


def prepare(directory: Path) -> None:
    """Hand a new session directory (and what it holds) to the commands' identity."""
    if identity() is not None:
        for path in [directory, *directory.rglob("*")]:
            own(path)
        directory.chmod(0o700)  # the commands' user only (and the root sandbox)


@cache
def _etc() -> Path:
    """The generated /etc files (once per sandbox process; ``remove_temporary`` removes them when the
    sandbox stops, and at exit for a process that never ran the sandbox's shutdown)."""
    uid, gid = identity() or (os.getuid(), os.getgid())
    etc = Path(tempfile.mkdtemp(prefix="sandbox-etc-"))
    atexit.register(shutil.rmtree, etc, True)
    files = {
        "passwd": (
            f"root:x:0:0:root:/root:/usr/sbin/nologin\nkernel:x:{uid}:{gid}:kernel:/home/kernel:/bin/sh\n"
        ),
        "group": f"root:x:0:\nkernel:x:{gid}:\n",
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
        "hosts": "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost\n",
        "hostname": "sandbox\n",
    }
    for name, text in files.items():
        (etc / name).write_text(text)
        (etc / name).chmod(0o644)
    etc.chmod(0o755)
    return etc


def remove_temporary() -> None:
    """Remove the generated /etc (the sandbox is stopping). uvicorn ends a process stopped by SIGTERM
    by raising the signal again after its shutdown, so ``atexit`` alone never runs there."""
    if _etc.cache_info().currsize:
        shutil.rmtree(_etc(), ignore_errors=True)
        _etc.cache_clear()


def _system_binds(etc: tuple[str, ...] = (), binds: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """Read-only binds of the system and a generated ``/etc``; ``etc`` names more host entries of it,
    ``binds`` are (host path, path) pairs bound read-only before ``/etc`` turns read-only."""
    args: list[str] = []
    for path in SYSTEM:
        if os.path.isdir(path):
            args += ["--ro-bind", os.path.realpath(path), path]
    args += ["--tmpfs", "/etc"]
    for name, generated in ((n, _etc() / n) for n in sorted(os.listdir(_etc()))):
        args += ["--ro-bind", str(generated), f"/etc/{name}"]
    for name in (*HOST_ETC, *etc):
        host = Path("/etc", name)
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.exists():
            args += ["--ro-bind", str(host), str(host)]
    if _flag("SANDBOX_EXEC_NETWORK", "off") and os.path.exists("/etc/resolv.conf"):
        args += ["--ro-bind", os.path.realpath("/etc/resolv.conf"), "/etc/resolv.conf"]
    for source, target in binds:
        args += ["--ro-bind", source, target]
    return [*args, "--remount-ro", "/etc"]


def command(root: Path, cwd: str, argv: list[str], *, info_fd: int | None = None) -> list[str]:
    """The bwrap command line running ``argv`` in the session directory ``root``, from ``cwd`` (a path
    inside the session, as the files API names it)."""
    args = [bwrap(), "--unshare-all", "--unshare-user", "--disable-userns"]
    if _flag("SANDBOX_EXEC_NETWORK", "off"):
        args.append("--share-net")
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox"]
    args += ["--bind", str(root), "/", *_system_binds(), "--proc", "/proc", "--dev", "/dev"]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
    return [*args, "--chdir", cwd, "--", *argv]


def node_command(root: Path, argv: list[str], *, binds: list[tuple[Path, str, bool]]) -> list[str]:
    """The bwrap command line running a Node.js process of a session (``node.py``: its Playwright executors
    and REPL) as commands run (``command``: the session's directory as ``/``, the system read-only, no
    capabilities), with ``binds`` (host path, path inside, writable) and always in a network namespace of
    its own, whatever ``SANDBOX_EXEC_NETWORK`` says: its one way out is the socket its binds hold."""
    args = [bwrap(), "--unshare-all", "--unshare-user", "--disable-userns"]
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox"]
    args += ["--bind", str(root), "/", *_system_binds(), "--proc", "/proc", "--dev", "/dev"]
    for host, inside, writable in binds:
        args += ["--bind" if writable else "--ro-bind", str(host), inside]
    return [*args, "--chdir", "/home/kernel", "--", *argv]


# What Chromium needs from the host's /etc beyond a command's: its launcher's flags (Debian's
# /usr/bin/chromium reads /etc/chromium.d) and its default preferences.
BROWSER_ETC = ("chromium.d", "chromium/master_preferences", "chromium/initial_preferences")
# Chromium's managed policies on Linux (Debian's build reads this directory).
POLICY_DIR = "/etc/chromium/policies/managed"
# fontconfig's cache of the system's fonts, read-only in the browser's jail: without it every browser
# scanned the fonts as it started, about 0.2 s of a core a launch (docs/benchmarks.md, "test suite").
FONT_CACHE = "/var/cache/fontconfig"
# Where a jailed headful browser finds its display's Xauthority file (its jail's /tmp is its own).
XAUTHORITY = "/tmp/.Xauthority"


def browser_jail(
    chromium: str,
    *,
    writable: list[Path],
    owner: str,
    readable: list[Path] = (),
    policy: Path | None = None,
    display: str | None = None,
    authority: Path | None = None,
    network: Network | None = None,
) -> dict:
    """How ``browser_jail.py`` starts one Chromium process: bwrap's command line (new user, PID, IPC,
    UTS and cgroup namespaces, the host's network shared with the browser so it reaches the sandbox's
    loopback proxy, nothing of the host but the system and its font cache, a generated ``/etc``, the
    ``writable`` directories, the ``readable`` ones read-only and, for a headful browser, its X display's
    socket and the Xauthority file holding that display's cookie, read-only), the user to run it as and,
    with a ``policy`` directory, that directory as Chromium's managed policies. With a ``network``
    (``Network``) the browser runs in that namespace instead of the host's."""
    ids = identity()
    binds = ((str(policy), POLICY_DIR),) if policy is not None else ()
    if os.path.isdir(FONT_CACHE):
        binds += ((FONT_CACHE, FONT_CACHE),)
    args = [bwrap(), "--unshare-all", "--share-net", "--unshare-user", "--die-with-parent"]
    args += ["--cap-drop", "ALL", "--hostname", "sandbox"]
    args += [*_system_binds(BROWSER_ETC, binds), "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    after = ["--dir", "/tmp/home"]
    for path in readable:  # root's own directories the browser reads (unpacked extensions)
        after += ["--ro-bind", str(path), str(path)]
    environment = {
        "HOME": "/tmp/home",
        "PATH": PATH,
        "LANG": "C.UTF-8",
        "SANDBOX_BROWSER_OWNER": owner,
    }
    if display is not None:
        socket = f"/tmp/.X11-unix/X{display.lstrip(':')}"
        after += ["--ro-bind", socket, socket]
        environment["DISPLAY"] = display
        if authority is not None:
            after += ["--ro-bind", str(authority), XAUTHORITY]
            environment["XAUTHORITY"] = XAUTHORITY
    after.append("--clearenv")
    for key, value in environment.items():
        after += ["--setenv", key, value]
    return {
        "bwrap": args,
        "after": [*after, "--chdir", "/tmp/home"],
        "writable": [str(path) for path in writable],
        "uid": ids[0] if ids else None,
        "gid": ids[1] if ids else None,
        "chromium": chromium,
        # The wrapper joins it before it drops root; bwrap's --share-net then keeps the browser there.
        "network": network.path if network is not None else None,
    }


CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def _in_thread(work):
    """Run ``work`` on a thread of its own and return its result: a thread that joined another network
    namespace must not go back to a pool (the namespace is per thread until it ends)."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="sandbox-netns", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _libc_call(name: str, *args: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{name}: {os.strerror(error)}")


class Network:
    """A network namespace of its own for one browser process whose CDP port must be the sandbox's alone.

    Its only interface is its own loopback: the browser's debugging port listens there, where no other
    process of the machine (another session's command, another browser's jail, a host process) has a way
    in; the sandbox opens its sockets into the namespace (``socket``): the session's proxy listens there,
    and the CDP relay connects there. Only a root sandbox makes one (``available``); the browser's wrapper
    joins it (``browser_jail.py``, through ``path``) before it drops root."""

    def __init__(self, fd: int):
        self.fd = fd

    @staticmethod
    def available() -> bool:
        return network_unavailable() is None

    @classmethod
    def create(cls) -> Network:
        def make() -> int:
            _libc_call("unshare", CLONE_NEWNET)  # this thread only: it ends with ``make``
            fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
                    request = struct.pack("16sh14x", b"lo", 0)
                    _, flags = struct.unpack_from("16sh", fcntl.ioctl(control, SIOCGIFFLAGS, request))
                    fcntl.ioctl(control, SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))
            except BaseException:
                os.close(fd)
                raise
            return fd

        return cls(_in_thread(make))

    @property
    def path(self) -> str:
        """Where another process of the machine (the root wrapper) opens the namespace."""
        return f"/proc/{os.getpid()}/fd/{self.fd}"

    def socket(self) -> socket.socket:
        """A TCP socket of the namespace (it stays there whichever thread binds or connects it)."""

        def make() -> socket.socket:
            _libc_call("setns", self.fd, CLONE_NEWNET)
            return socket.socket(socket.AF_INET, socket.SOCK_STREAM)

        return _in_thread(make)

    def connect(self, port: int) -> socket.socket:
        """A connected socket to ``127.0.0.1:port`` of the namespace."""
        client = self.socket()
        try:
            client.settimeout(5)
            client.connect(("127.0.0.1", port))
        except BaseException:
            client.close()
            raise
        return client

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@cache
def network_unavailable() -> str | None:
    """None when browser processes of their own can have a network namespace each (checked once by
    making one); otherwise why not (their debugging port is then on the host's loopback)."""
    if identity() is None:
        return "the sandbox is not root"
    try:
        Network.create().close()
    except OSError as exc:
        return f"no network namespace could be made ({exc})"
    return None


def popen_options() -> dict:
    """subprocess options that start bwrap as the commands' identity (a root sandbox drops root)."""
    ids = identity()
    if ids is None:
        return {}
    return {"user": ids[0], "group": ids[1], "extra_groups": []}


@cache
def unavailable() -> str | None:
    """None when commands can be confined; otherwise why not (checked once per sandbox process)."""
    advice = "Install bubblewrap (`make run` does; or apt-get install bubblewrap) and restart the sandbox."
    binary = bwrap()
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        return f"bubblewrap (bwrap) was not found at {binary}, so no command can be confined. {advice}"
    try:
        identity()
    except LookupError as exc:
        return f"{exc}; commands are never run as root."
    probe = Path(tempfile.mkdtemp(prefix="sandbox-probe-"))
    try:
        (probe / "tmp").mkdir()
        prepare(probe)
        result = subprocess.run(  # noqa: S603 - a fixed command line
            command(probe, "/", ["true"]),
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
            env={"PATH": PATH},
            **popen_options(),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not confine a command ({exc}). {advice}"
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    if result.returncode != 0:
        why = (result.stderr.strip().splitlines() or ["no message"])[-1][:200]
        return (
            f"bubblewrap could not confine a command ({why}); user namespaces may be disabled on this "
            "machine. Nothing runs unconfined."
        )
    return None
