"""Processes a benchmark needs: a sandbox, a console under uvicorn on a scratch database, a session."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.sandbox_fixtures import free_port, new_tenant, wait_for

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


@dataclass
class Console:
    url: str
    session_cookie: str
    org_slug: str
    env: dict
    pid: int = 0  # the uvicorn process (one worker: it serves the requests itself)

    @property
    def cookie_header(self) -> str:
        return f"sessionid={self.session_cookie}"


@contextmanager
def sandbox():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # The existing figures measure the console and relay against simulated sessions.
    env = {**os.environ, "SANDBOX_ENGINE": "simulated", "SANDBOX_STATE": ""}  # throwaway: in memory
    proc = subprocess.Popen([PY, "-m", "console.sandbox", "--port", str(port)], cwd=ROOT, env=env)
    try:
        wait_for(f"{url}/_sandbox/health", proc)
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


SETUP = """
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from console.accounts.models import Membership, Organization, Role
org = Organization(name="Bench", slug="bench", service_base_url="{url}")
org.set_api_key("{key}")
org.save()
user = get_user_model().objects.create_user("bench", "bench@example.com", "bench-password-1234")
Membership.objects.create(user=user, org=org, role=Role.ADMIN)
s = SessionStore()
s["_auth_user_id"] = str(user.pk)
s["_auth_user_backend"] = "console.accounts.backends.UsernameOrEmailBackend"
s["_auth_user_hash"] = user.get_session_auth_hash()
s.create()
print("SESSION", s.session_key)
"""


@contextmanager
def console(
    sandbox_url: str, api_key: str, *, workers: int = 1, extra_env: dict | None = None, root: Path = ROOT
):
    """A production-like console (DEBUG off) with one admin session, on a scratch SQLite database; ``root``:
    the checkout it runs from (another one for a before-and-after figure)."""
    scratch = Path(tempfile.mkdtemp(prefix="bench-"))
    port = free_port()
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": "bench-" + "x" * 60,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "KEY_ENCRYPTION_KEYS": "QmVuY2hLZXlCZW5jaEtleUJlbmNoS2V5QmVuY2hLZXk=",
        "SECURE_SSL_REDIRECT": "false",
        # The sandbox it talks to is on loopback, which DEBUG off refuses unless told (whatever .env says).
        "SERVICE_URL_ALLOW_PRIVATE": "true",
        "DATABASE_URL": f"sqlite:///{scratch}/db.sqlite3",
        "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "WARNING"),
        **(extra_env or {}),
    }
    subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v0"], cwd=root, env=env, check=True)
    subprocess.run([PY, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=root, env=env, check=True)
    out = subprocess.run(
        [PY, "manage.py", "shell", "-c", SETUP.format(url=sandbox_url, key=api_key)],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    session = re.search(r"SESSION (\w+)", out).group(1)
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "uvicorn",
            "console.asgi:application",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "warning",
            "--no-access-log",
        ],
        cwd=root,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{url}/healthz", proc)
        yield Console(url=url, session_cookie=session, org_slug="bench", env=env, pid=proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(scratch, ignore_errors=True)


@dataclass
class WrkResult:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(us|ms|s)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(url: str, *, headers: dict[str, str], seconds: int = 6, connections: int = 16) -> WrkResult:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is needed for `make bench` (apt-get install -y wrk)")
    args = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency"]
    for name, value in headers.items():
        args += ["-H", f"{name}: {value}"]
    out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = _ms(re.search(r"\s50%\s+(\S+)", out).group(1))
    p99 = _ms(re.search(r"\s99%\s+(\S+)", out).group(1))
    errors = 0
    for pattern in (r"Non-2xx or 3xx responses: (\d+)", r"Socket errors: connect (\d+)"):
        found = re.search(pattern, out)
        errors += int(found.group(1)) if found else 0
    return WrkResult(rps=rps, p50_ms=p50, p99_ms=p99, errors=errors)


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine() -> str:
    versions = subprocess.run(
        [
            PY,
            "-c",
            "import django, httpx, uvicorn; "
            "print(django.__version__, httpx.__version__, uvicorn.__version__)",
        ],
        capture_output=True,
        text=True,
    ).stdout.split()
    return (
        f"{platform.node() or 'host'}: {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"Django {versions[0]}, httpx {versions[1]}, uvicorn {versions[2]} (one worker), "
        f"{time.strftime('%Y-%m-%d')}"
    )


def tenant_with_projects(sandbox_url: str, count: int = 12):
    tenant = new_tenant(sandbox_url)
    for i in range(count):
        tenant.call("POST", "/org/projects", json={"name": f"bench-{i:02d}"})
    return tenant


def get(url: str, **kwargs) -> httpx.Response:
    return httpx.get(url, timeout=30, **kwargs)
