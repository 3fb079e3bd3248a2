"""Start Chromium inside bubblewrap as the sandbox's unprivileged user (Playwright's ``executable_path``).

Playwright starts this file (through the small shell wrapper ``engine`` writes) with Chromium's own
arguments and its CDP pipe on fds 3 and 4. It reads the jail the engine prepared from the environment
(``SANDBOX_BROWSER_JAIL``, JSON: bwrap's command line up to the command, the directories the browser may
write, the uid and gid to run as), then, still as root:

- hands the browser's writable directories (Playwright's ``--user-data-dir`` included) to that user;
- joins the network namespace the engine made for a browser process of a session's own, if any
  (``confine.Network``: its debugging port is then on that namespace's loopback alone);
- drops to the user (no supplementary groups, no capabilities) and replaces itself with bwrap, which
  starts Chromium with the writable directories bound read-write at their own paths and nothing else of
  the host but what ``confine`` gives a command (``/usr``, a generated ``/etc``, fonts, certificates).

The CDP pipe survives both ``exec``s (inherited descriptors are kept), so Playwright drives the jailed
browser as it would a plain one. Only the standard library: this runs before anything else is loaded.
"""

from __future__ import annotations

import json
import os
import sys


def give(directory: str, uid: int, gid: int) -> None:
    """Hand ``directory`` and everything in it to the browser's user, by descriptor and never following a
    symlink: the user wrote in it before (a browser woken from standby), and a path swapped for a symlink
    while root walks it must not hand root's files over (fwalk opens each directory relative to its
    parent's descriptor and checks it is the one it listed)."""
    top = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fchown(top, uid, gid)
    finally:
        os.close(top)
    for _root, dirs, files, root_fd in os.fwalk(directory, follow_symlinks=False):
        for name in dirs + files:
            os.chown(name, uid, gid, dir_fd=root_fd, follow_symlinks=False)


def join_network(path: str) -> None:
    """Move into the network namespace the engine made for this browser (``confine.Network``), still as
    root: bwrap then shares it (``--share-net``) and the browser's debugging port listens there alone."""
    import ctypes

    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            error = ctypes.get_errno()
            raise OSError(error, f"setns {path}: {os.strerror(error)}")
    finally:
        os.close(fd)


def main(argv: list[str]) -> None:
    jail = json.loads(os.environ["SANDBOX_BROWSER_JAIL"])
    writable = list(jail["writable"])
    for arg in argv:
        if arg.startswith("--user-data-dir="):
            writable.append(arg.partition("=")[2])
    uid, gid = jail.get("uid"), jail.get("gid")
    binds: list[str] = []
    for directory in writable:
        os.makedirs(directory, exist_ok=True)
        if uid is not None:
            give(directory, uid, gid)
        binds += ["--bind", directory, directory]
    command = [*jail["bwrap"], *binds, *jail.get("after", []), "--", jail["chromium"], *argv]
    if jail.get("network"):
        join_network(jail["network"])
    if uid is not None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    os.execv(command[0], command)  # noqa: S606 - bwrap, from the engine's own command line


if __name__ == "__main__":
    main(sys.argv[1:])
