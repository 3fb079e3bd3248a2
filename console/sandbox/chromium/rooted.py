"""Paths inside a session's directory that no symlink can lead out of, whatever runs in the session.

The files API runs in the sandbox process (as root when the sandbox is), while the session's commands
write the same directory and can swap any path component for a symlink at any moment (a command's
``ln -s /host/dir d`` points nowhere in its confinement, but at the host in the sandbox's view). So a
path is never checked and then used by name: every operation walks it from a descriptor of the session's
directory, one component at a time, opening each directory with ``O_NOFOLLOW`` relative to the one
before, and acts on the last component relative to its parent's descriptor (``dir_fd``, never following a
symlink there unless it resolved it itself). Whatever a command does in between, the walk can fail, never
leave.

Symlinks are resolved here, as the host would but confined: a relative link that stays inside the
directory is followed (``Walk.locate``); one whose target is absolute (a command's absolute path names
the session, the host's would name the host), or climbs above the directory, raises ``Outside``. A
``Walk(..., links=False)`` (zip extraction, directory zips, watches) refuses every symlink on the way.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator

DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_LINKS = 40  # as Linux's own limit on symlinks followed in one lookup
MAX_REMOVALS = 1_000_000  # steps of one remove_tree: a command refilling the tree cannot hold it forever


class Outside(Exception):
    """The path leads out of the directory (a symlink towards the host, or ``..`` above the top)."""


class NotADir(Exception):
    """A component on the way is not a directory (``path`` names it, from the top)."""

    def __init__(self, path: str):
        super().__init__(path)
        self.path = path


def open_top(path) -> int:
    """A descriptor of the directory every walk starts from (the caller closes it)."""
    return os.open(path, DIRECTORY)


def descend(top: int, names, *, links_error=Outside) -> int:
    """A new descriptor of ``top/names…``, refusing any symlink on the way (the caller closes it)."""
    fd = os.dup(top)
    try:
        for name in names:
            try:
                child = os.open(name, DIRECTORY, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise links_error(name) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


class Walk:
    """Where a walk stands: a descriptor of the current directory and the names leading to it from the
    top (the top's descriptor stays the caller's). Use as a context manager."""

    def __init__(self, top: int, *, links: bool = True, on_create: Callable[[int, str], None] | None = None):
        self.top = top
        self.links = links
        self.on_create = on_create  # called with (parent fd, name) for each directory a walk creates
        self.names: list[str] = []
        self.created: list[tuple[str, ...]] = []  # directories this walk made, as paths from the top
        self.fd = os.dup(top)

    def __enter__(self) -> Walk:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def path(self, name: str | None = None) -> str:
        """The walk's place (and ``name`` in it) as a path from the top, ``/``-rooted."""
        return "/" + "/".join([*self.names, *([name] if name else [])])

    def _move_to(self, fd: int, names: list[str]) -> None:
        os.close(self.fd)
        self.fd, self.names = fd, names

    def enter(self, name: str) -> None:
        """Step into the directory ``name`` (never through a symlink: a swapped one fails here)."""
        try:
            fd = os.open(name, DIRECTORY, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Outside(self.path(name)) from None
            if exc.errno == errno.ENOTDIR:
                raise NotADir(self.path(name)) from None
            raise
        self._move_to(fd, [*self.names, name])

    def _up(self) -> None:
        if not self.names:
            raise Outside(self.path(".."))
        names = self.names[:-1]
        self._move_to(descend(self.top, names), names)

    def mkdir(self, name: str, mode: int = 0o777) -> bool:
        """Create the directory ``name`` here; False when something already has that name."""
        try:
            os.mkdir(name, mode, dir_fd=self.fd)
        except FileExistsError:
            return False
        self.created.append((*self.names, name))
        if self.on_create is not None:
            self.on_create(self.fd, name)
        return True

    def lstat(self, name: str | None) -> os.stat_result:
        """What ``name`` here is, never following it (``None``: the walk's own directory)."""
        if name is None:
            return os.fstat(self.fd)
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def locate(self, parts, *, create: bool = False, follow_last: bool = True) -> str | None:
        """Walk to the directory holding the path's last component and return that component's name
        (``None`` when the path ends at a directory: the top itself, or a link to a directory that
        ended in ``.``/``..``). Directories on the way are entered, following relative symlinks inside
        the top; missing ones are created with ``create`` (else ``FileNotFoundError``). A symlink as the
        last component is followed too with ``follow_last``, so the name returned was no symlink when
        looked at; acting on it by name, relative to ``self.fd``, must still not follow one (it may have
        been swapped since)."""
        todo = list(reversed(parts))
        followed = 0
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            if name == "..":
                self._up()
                continue
            last = not todo
            try:
                st = self.lstat(name)
            except FileNotFoundError:
                if last:
                    return name
                if not create:
                    raise FileNotFoundError(
                        errno.ENOENT, "no such file or directory", self.path(name)
                    ) from None
                self.mkdir(name)
                self.enter(name)
                continue
            if stat.S_ISLNK(st.st_mode):
                if last and not follow_last:
                    return name
                followed += 1
                if not self.links or followed > MAX_LINKS:
                    raise Outside(self.path(name))
                try:
                    target = os.readlink(name, dir_fd=self.fd)
                except OSError:  # no longer a link: it changed under us
                    raise Outside(self.path(name)) from None
                if target.startswith("/"):
                    raise Outside(self.path(name))
                todo.extend(reversed(target.split("/")))
                continue
            if last:
                return name
            if not stat.S_ISDIR(st.st_mode):
                raise NotADir(self.path(name))
            self.enter(name)
        return None

    def into(self, parts, *, create: bool = False) -> None:
        """Walk into the directory the path names (following it as ``locate`` does)."""
        name = self.locate(parts, create=create)
        if name is None:
            return
        if create:
            self.mkdir(name)
        self.enter(name)

    def open(self, name: str, flags: int, mode: int = 0o666) -> int:
        """Open ``name`` here, never through a symlink (``Outside`` when one is there now)."""
        try:
            return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Outside(self.path(name)) from None
            raise


def entries(top: int, *, recursive: bool, limit: int) -> Iterator[tuple[tuple[str, ...], os.stat_result]]:
    """Everything under ``top`` (path from it, lstat), never through a symlink, at most ``limit``.

    Each directory is reached again from ``top`` rather than kept open, so a deep tree cannot exhaust
    descriptors; one that changed into something else meanwhile is skipped."""
    pending: list[tuple[str, ...]] = [()]
    count = 0
    while pending and count < limit:
        where = pending.pop()
        try:
            fd = descend(top, where, links_error=NotADir)
        except (OSError, NotADir):
            continue
        try:
            names = os.listdir(fd)
            for name in names:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                yield (*where, name), st
                count += 1
                if count >= limit:
                    return
                if recursive and stat.S_ISDIR(st.st_mode):
                    pending.append((*where, name))
        except OSError:
            continue
        finally:
            os.close(fd)


def remove_tree(top: int, name: str) -> None:
    """``rm -r`` of the directory ``name`` in ``top``, never through a symlink (``shutil.rmtree`` opens
    what it checked without ``O_NOFOLLOW``: a link swapped in would open a host FIFO or device).

    Each directory is reached again from ``top``, deepest first, so depth costs no descriptors. A link
    is removed as a link; something changing meanwhile fails the removal (``OSError``)."""
    path = [name]
    for _ in range(MAX_REMOVALS):
        if not path:
            return
        fd = descend(top, path, links_error=NotADir)
        try:
            deeper = None
            for child in os.listdir(fd):
                if stat.S_ISDIR(os.stat(child, dir_fd=fd, follow_symlinks=False).st_mode):
                    deeper = child
                    break
                os.unlink(child, dir_fd=fd)
        finally:
            os.close(fd)
        if deeper is not None:
            path.append(deeper)
            continue
        parent = descend(top, path[:-1], links_error=NotADir)
        try:
            os.rmdir(path.pop(), dir_fd=parent)
        finally:
            os.close(parent)
    raise OSError(errno.EBUSY, "the tree keeps changing", name)


def open_regular(directory, parts) -> int | None:
    """A read-only descriptor of the regular file ``directory/parts…`` (the caller closes it), or None
    when it is missing, or is not a regular file, or a symlink stands anywhere below ``directory``.

    For root reading a file the browser's user writes (``DevToolsActivePort``, a finished download): the
    walk never follows a link, and ``O_NONBLOCK`` makes a FIFO or a device planted there fail the
    ``fstat`` check instead of blocking the open (and the event loop that made it)."""
    *folders, name = parts
    try:
        top = open_top(directory)
    except OSError:
        return None
    try:
        parent = descend(top, folders, links_error=NotADir)
    except (OSError, NotADir):
        return None
    finally:
        os.close(top)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return None
    finally:
        os.close(parent)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def read_regular(directory, parts, limit: int) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``directory/parts…`` (``open_regular``), or None."""
    fd = open_regular(directory, parts)
    if fd is None:
        return None
    try:
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def remove_beneath(directory, name: str) -> None:
    """``remove_tree`` of ``directory/name`` (``directory`` trusted: root's own), quietly: what is left
    because it kept changing stays (never through a link)."""
    try:
        top = open_top(directory)
    except OSError:
        return
    try:
        if stat.S_ISDIR(os.stat(name, dir_fd=top, follow_symlinks=False).st_mode):
            remove_tree(top, name)
        else:  # a link (or a file) planted in its place goes as itself
            os.unlink(name, dir_fd=top)
    except (OSError, NotADir):
        pass
    finally:
        os.close(top)
