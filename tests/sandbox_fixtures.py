"""Pytest plugin: a real sandbox process on a free loopback port, and a fresh tenant per test."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from console.service import Service
from tests import server_logs

ROOT = Path(__file__).resolve().parent.parent


# Ports for the servers the tests start (sandboxes, consoles, the identity provider): below Linux's
# ephemeral range (32768 up), where bind(0) and every outgoing connection take theirs, a block per xdist
# worker, handed out in turn. A port bind(0) found free could be taken before the server bound it, by another
# worker's server or a client's connection: the test then talked to another worker's sandbox. Each process
# starts at its own place in its block, set by its pid and far from the place of the next pid (a run beside
# it is often started right after), so two runs side by side (two worktrees, a helper beside the lead) do
# not reach for the same ports at the same moment.
PORTS_FROM, PORTS_PER_WORKER, WORKER_BLOCKS = 20_000, 1_000, 12
PORTS_SPREAD = 389  # prime to PORTS_PER_WORKER: pids one apart start 389 ports apart


def first_place(pid: int) -> int:
    return pid * PORTS_SPREAD % PORTS_PER_WORKER


_ports = itertools.count(first_place(os.getpid()))


def free_port() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) % WORKER_BLOCKS if worker[2:].isdigit() else 0
    for _ in range(PORTS_PER_WORKER):
        port = PORTS_FROM + index * PORTS_PER_WORKER + next(_ports) % PORTS_PER_WORKER
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:  # still held (a server of this worker that is still up): the next one
                continue
            return port
    raise RuntimeError(f"no free port left in worker {worker}'s block")


# One TLS context for every request the tests make with httpx's functions (``verify=TLS``): without it each
# call builds a client whose default context loads the whole CA bundle, about 25 ms of CPU for a request
# to a loopback server in well under one (a tenant's ``requests()`` before and after each isolation test).
TLS = httpx.create_ssl_context()


def wait_for(url: str, process: subprocess.Popen, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url} exited with {process.returncode} before it answered")
        try:
            if httpx.get(url, timeout=1, verify=TLS).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within {seconds} s")


# The test sandbox's demo tenant key: a throwaway for a sandbox that lives as long as the test run.
TEST_DEMO_KEY = "sandbox-demo-key"


def start_sandbox(*, command: tuple[str, ...] = ("-m", "console.sandbox"), **settings: str):
    """A sandbox process on a free port with extra environment settings, (url, process); stop it with
    ``stop_sandbox``. ``command`` is how Python starts it (``("manage.py", "sandbox")`` for Django's)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # In memory unless a test gives SANDBOX_STATE (a developer's .env must never reach the test sandbox);
    # a state file's key is its own <state>.key unless a test gives SANDBOX_STATE_KEY.
    env = {
        **os.environ,
        "SANDBOX_DEMO_KEY": TEST_DEMO_KEY,
        "SANDBOX_STATE": "",
        "SANDBOX_STATE_KEY": "",
        # A run creates a tenant per test (well over the default 1000): a test of the bound gives its own.
        "SANDBOX_MAX_TENANTS": "100000",
        "SANDBOX_MAX_DEMO_TENANTS": "10000",
        **settings,
    }
    with server_logs.open_log(f"sandbox-{port}") as log:  # shown with a failed test (tests/server_logs.py)
        process = subprocess.Popen(
            [sys.executable, *command, "--port", str(port)], cwd=ROOT, env=env, stdout=log, stderr=log
        )
    try:
        wait_for(f"{url}/_sandbox/health", process)
    except RuntimeError:
        stop_sandbox(process)
        raise
    return url, process


def stop_sandbox(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def temporary_folder():
    """A fresh folder to give a sandbox as its TMPDIR (its temporary directories, its Playwright's), so a
    test sees exactly what that sandbox leaves; the sandbox's unprivileged user can pass through it."""
    folder = Path(tempfile.mkdtemp(prefix="test-tmpdir-"))
    folder.chmod(0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def sandbox_url():
    # The simulated engine: fast and deterministic. Real browsers have their own sandbox (chromium_sandbox).
    url, process = start_sandbox(SANDBOX_ENGINE="simulated")
    try:
        yield url
    finally:
        stop_sandbox(process)


@pytest.fixture(scope="session")
def chromium_sandbox():
    """A second sandbox whose sessions run Debian's Chromium: (url, owner marker of its browsers).

    Two running browsers at most, so the real-browser tests keep few Chromium processes on a 2-core machine.
    The shared process lingers as it does by default (60 s) after its last session, so the next test's
    session opens a context in it rather than starting a browser: about 0.5 CPU-s less a session, 15 %
    of the CPU of the real-browser tests (docs/benchmarks.md, "test suite"). A test that watches shared
    browsers and displays end with their last session starts a sandbox without it (``closing_sandbox``).
    """
    owner = "sandbox-test-" + os.urandom(6).hex()
    url, process = start_sandbox(
        SANDBOX_ENGINE="chromium",
        SANDBOX_MAX_BROWSERS="2",
        SANDBOX_BROWSER_LINGER_SECONDS="60",
        SANDBOX_BROWSER_OWNER=owner,
        SANDBOX_TELEMETRY_SCREENSHOT_SECONDS="1",
    )
    try:
        engine = httpx.get(url + "/", verify=TLS).json()
        if engine["engine"] != "chromium":
            pytest.fail(f"the real-browser sandbox runs simulated sessions: {engine['engine_reason']}")
        yield url, owner
    finally:
        stop_sandbox(process)


def browser_processes(owner: str) -> list[int]:
    """Chromium processes of one sandbox (they carry its SANDBOX_BROWSER_OWNER in their environment)."""
    marker = f"SANDBOX_BROWSER_OWNER={owner}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            executable = os.readlink(entry / "exe")
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if "chrom" in Path(executable).name and marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def displays(owner: str) -> list[int]:
    """Xvfb servers of one sandbox (they carry its SANDBOX_BROWSER_OWNER in their environment)."""
    marker = f"SANDBOX_BROWSER_OWNER={owner}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            xvfb = Path(os.readlink(entry / "exe")).name == "Xvfb"
            if xvfb and marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def socket_inodes(pids: list[int]) -> set[str]:
    """The inodes of the sockets these processes hold open: what /proc/net/unix and /proc/net/tcp name."""
    inodes = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[len("socket:[") : -1])
    return inodes


@contextlib.contextmanager
def running_sandbox(**settings: str):
    """A sandbox process on a free port (its URL), with extra environment settings; stopped after."""
    url, process = start_sandbox(**settings)
    try:
        yield url
    finally:
        stop_sandbox(process)


@dataclass
class SandboxTenant:
    """A fresh, isolated tenant of the test sandbox, with helpers for its control interface."""

    url: str
    api_key: str

    def control(self, method: str, path: str, json: dict | None = None) -> httpx.Response:
        response = httpx.request(
            method,
            f"{self.url}/_sandbox/{path.lstrip('/')}",
            json=json,
            headers={"Authorization": f"Bearer {self.api_key}"},
            timeout=10,
            verify=TLS,
        )
        response.raise_for_status()
        return response

    def fault(self, **fault) -> None:
        self.control("POST", "faults", fault)

    def advance(self, seconds: float) -> None:
        self.control("POST", "clock", {"advance_seconds": seconds})

    def set_clock(self, moment: str) -> None:
        self.control("POST", "clock", {"set": moment})

    def requests(self) -> list[dict]:
        """What the sandbox received from this tenant (method, path, status), oldest first."""
        return self.control("GET", "requests").json()

    def call(self, method: str, path: str, **kwargs) -> httpx.Response:
        """A raw service call with this tenant's key (conformance tests speak HTTP directly)."""
        headers = {"Authorization": f"Bearer {self.api_key}", **kwargs.pop("headers", {})}
        # Generous: a call that wakes a real browser on a loaded CI machine can take several seconds;
        # a test about hanging gives its own timeout.
        timeout = kwargs.pop("timeout", 30)
        return httpx.request(
            method, f"{self.url}{path}", headers=headers, timeout=timeout, verify=TLS, **kwargs
        )


def wait_until(condition, seconds: float = 30.0, what: str = "the state"):
    """Check ``condition`` (a state: a status, a listing, a record) until it holds, and return its value;
    fail after ``seconds``. Generous: a loaded machine is slow, and a state that comes costs no more."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    value = condition()
    assert value, f"{what} did not come within {seconds} s"
    return value


def process_exited(tenant: SandboxTenant, session_id: str, process_id: str) -> dict:
    """Wait until a session's process has exited: its status (``state`` and ``exit_code``)."""

    def status():
        response = tenant.call("GET", f"/browsers/{session_id}/process/{process_id}/status")
        assert response.status_code == 200, response.text
        return response.json() if response.json()["state"] == "exited" else None

    return wait_until(status, what=f"the exit of process {process_id}")


def new_tenant(url: str, *, demo: bool = False) -> SandboxTenant:
    response = httpx.post(f"{url}/_sandbox/tenants", json={"demo": demo}, timeout=10, verify=TLS)
    response.raise_for_status()
    return SandboxTenant(url=url, api_key=response.json()["api_key"])


@pytest.fixture
def tenant(sandbox_url) -> SandboxTenant:
    return new_tenant(sandbox_url)


@contextlib.contextmanager
def tenant_of(url: str):
    """A fresh tenant of the sandbox at ``url`` whose sessions are deleted when the block ends: a real-browser
    sandbox has few browsers, and a test leaves none of them running."""
    tenant = new_tenant(url)
    try:
        yield tenant
    finally:
        for session in tenant.call("GET", "/browsers", params={"limit": 100}).json():
            tenant.call("DELETE", f"/browsers/{session['session_id']}", timeout=30)


@pytest.fixture
def chromium_tenant(chromium_sandbox):
    """A fresh tenant of the real-browser sandbox (``chromium_sandbox``), its sessions deleted after."""
    with tenant_of(chromium_sandbox[0]) as tenant:
        yield tenant


@pytest.fixture
def demo_tenant(sandbox_url) -> SandboxTenant:
    return new_tenant(sandbox_url, demo=True)


@pytest.fixture
def service(tenant) -> Service:
    return Service(base_url=tenant.url, api_key=tenant.api_key, allow_private=True)


LONG_SESSION = 259_200  # three days: a test's session never times out under it


def create_session(tenant: SandboxTenant, **body) -> dict:
    """A browser session of ``tenant`` (the record the service answered), living as long as the test."""
    response = tenant.call("POST", "/browsers", json={"timeout_seconds": LONG_SESSION, **body})
    assert response.status_code == 201, response.text
    return response.json()
