"""Counts which of the SDK's calls pass against the sandbox.

Every public method of the SDK's synchronous resources (``client.browsers.playwright.execute``,
``client.vaults.items.upsert``…: 179 in 0.131.0, found by walking a client) is wrapped for the run: a call
that returns (its response validated by the SDK's strict models) marks the method as passing; one that
raises anything but an API status error the test expected counts as a failure. At the end of a run of
this folder, the summary says how many methods passed, and names those never passed (never called, or
failing). Under pytest-xdist each worker writes its own record into a folder the controller reads
(``KERNEL_SDK_CALLS``), so ``pytest -n 2 tests/sdk`` prints one figure.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import shutil
import tempfile
from pathlib import Path

import kernel
import pytest
from kernel import Kernel
from kernel._resource import SyncAPIResource

FOLDER = "KERNEL_SDK_CALLS"
_calls: dict[str, dict[str, int]] = {}


def sdk_methods() -> dict[type, dict[str, str]]:
    """{resource class: {method name: dotted SDK name}} for every public method of a client."""
    client = Kernel(api_key="unused", base_url="http://127.0.0.1:9")
    found: dict[type, dict[str, str]] = {}

    def walk(resource: SyncAPIResource, prefix: str) -> None:
        for name in dir(type(resource)):
            if name.startswith("_") or name.startswith("with_"):
                continue
            attribute = inspect.getattr_static(type(resource), name)
            if inspect.isfunction(attribute):
                found.setdefault(type(resource), {})[name] = f"{prefix}.{name}"
            elif isinstance(attribute, functools.cached_property):
                sub = getattr(resource, name)
                if isinstance(sub, SyncAPIResource):
                    walk(sub, f"{prefix}.{name}")

    for name in dir(client):
        if name.startswith("_") or name.startswith("with_"):
            continue
        if isinstance(inspect.getattr_static(type(client), name, None), functools.cached_property):
            sub = getattr(client, name)
            if isinstance(sub, SyncAPIResource):
                walk(sub, name)
    client.close()
    return found


def _wrap(function, dotted: str):
    @functools.wraps(function)
    def counted(*args, **kwargs):
        record = _calls.setdefault(dotted, {"passed": 0, "failed": 0})
        try:
            result = function(*args, **kwargs)
        except kernel.APIStatusError:
            record["refused"] = record.get("refused", 0) + 1  # an answer the test may have asked for
            raise
        except Exception:
            record["failed"] += 1
            raise
        record["passed"] += 1
        return result

    counted.__wrapped_sdk__ = True
    return counted


def pytest_configure(config):
    if not hasattr(config, "workerinput") and FOLDER not in os.environ:
        os.environ[FOLDER] = tempfile.mkdtemp(prefix="kernel-sdk-calls-")
        config._kernel_sdk_folder = os.environ[FOLDER]
    for cls, methods in sdk_methods().items():
        for name, dotted in methods.items():
            function = cls.__dict__.get(name)
            if function is not None and not getattr(function, "__wrapped_sdk__", False):
                setattr(cls, name, _wrap(function, dotted))


def pytest_sessionfinish(session):
    folder = os.environ.get(FOLDER)
    if folder and Path(folder).is_dir():
        worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
        (Path(folder) / f"{worker}.json").write_text(json.dumps(_calls))


def tally(folder: Path) -> tuple[set[str], set[str]]:
    """(every SDK method, those that passed at least once) from the workers' records."""
    every = {dotted for methods in sdk_methods().values() for dotted in methods.values()}
    passed: set[str] = set()
    for record in folder.glob("*.json"):
        for dotted, counts in json.loads(record.read_text()).items():
            if counts.get("passed"):
                passed.add(dotted)
    return every, passed & every


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    folder = getattr(config, "_kernel_sdk_folder", None)
    if not folder:
        return
    every, passed = tally(Path(folder))
    shutil.rmtree(folder, ignore_errors=True)
    if not passed:
        return
    terminalreporter.write_sep("-", f"SDK {kernel.__version__}: {len(passed)} of {len(every)} methods passed")
    missing = sorted(every - passed)
    if missing and len(missing) <= 30:
        terminalreporter.write_line("never passed: " + ", ".join(missing))
    elif missing:
        terminalreporter.write_line(f"{len(missing)} never passed (a part of tests/sdk ran)")
