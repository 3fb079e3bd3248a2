"""The output of the servers the tests start (sandboxes, consoles), a file each, shown with a failed test.

A server in a subprocess used to write to the worker's stderr, which pytest ties to no test: when a browser
test failed on the sandbox's 503, what the sandbox logged about it was lost. Each server writes to a file of
its own in the worker's folder (``open_log``); a failed test's report gets what each of them wrote while the
test ran (tests/conftest.py), the last ``TAIL_LINES`` lines of it."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

TAIL_LINES = 60
_logs: list[Path] = []
_numbers = itertools.count(1)


def folder() -> Path:
    return Path(tempfile.gettempdir()) / f"test-server-logs-{os.getpid()}"


def open_log(name: str):
    """A file for a server's stdout and stderr (unbuffered, appended to)."""
    folder().mkdir(mode=0o700, exist_ok=True)
    path = folder() / f"{next(_numbers):03d}-{name}.log"
    _logs.append(path)
    return open(path, "ab", buffering=0)


def sizes() -> dict[Path, int]:
    """How much each server has written so far (a test's starting point)."""
    found = {}
    for path in _logs:
        try:
            found[path] = path.stat().st_size
        except OSError:
            continue
    return found


def written_since(start: dict[Path, int]) -> list[tuple[str, str]]:
    """(name, its last lines) of what each server wrote after ``start`` (a server started since: all)."""
    sections = []
    for path, size in sizes().items():
        offset = start.get(path, 0)
        if size <= offset:
            continue
        with open(path, "rb") as log:
            log.seek(max(offset, size - TAIL_LINES * 400))
            lines = log.read().decode("utf-8", "replace").splitlines()[-TAIL_LINES:]
        sections.append((path.stem, "\n".join(lines)))
    return sections


def remove() -> None:
    shutil.rmtree(folder(), ignore_errors=True)
