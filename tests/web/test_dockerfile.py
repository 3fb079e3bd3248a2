"""The Dockerfile's command lines, run as written: uvicorn's CMD and the HEALTHCHECK probe.

The console runs in production mode with ALLOWED_HOSTS set to a public name, as a real deployment does.
"""

import json
import os
import re
import secrets
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet

from tests.sandbox_fixtures import free_port

ROOT = Path(__file__).resolve().parents[2]
FORGED = "203.0.113.7"


def instructions() -> dict[str, str]:
    """The Dockerfile's last instruction of each kind, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text())
    found = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, rest = line.strip().partition(" ")
            found[keyword.upper()] = rest
    return found


def command_line(port: int) -> list[str]:
    """CMD as written, except that a free loopback port stands in for the container's 0.0.0.0:8000."""
    argv = " \x00 ".join(json.loads(instructions()["CMD"]))
    argv = re.sub(r"--host(\s+(?:\x00\s+)?)0\.0\.0\.0", r"--host\g<1>127.0.0.1", argv)
    argv = re.sub(r"--port(\s+(?:\x00\s+)?)8000", rf"--port\g<1>{port}", argv)
    assert f"--port {port}" in argv.replace("\x00 ", ""), argv
    return argv.split(" \x00 ")


def healthcheck(port: int) -> list[str]:
    probe = instructions()["HEALTHCHECK"].split(" CMD ", 1)[1]
    return shlex.split(probe.replace("127.0.0.1:8000", f"127.0.0.1:{port}"))


def production_env(tmp_path, **extra) -> dict:
    return {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "console.example.com",
        "KEY_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
        **extra,
    }


class Container:
    def __init__(self, tmp_path, **env):
        self.port = free_port()
        self.log = tmp_path / "uvicorn.log"
        self.env = production_env(tmp_path, **env)
        self.process = subprocess.Popen(
            command_line(self.port),
            cwd=ROOT,
            env=self.env,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"uvicorn did not start: {self.log.read_text()}") from None
                time.sleep(0.1)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def client_seen(self, source: str, marker: str, headers: dict) -> str:
        """The client address the console saw (Django's REMOTE_ADDR) for one request from `source`."""
        transport = httpx.HTTPTransport(local_address=source)
        with httpx.Client(transport=transport, timeout=10) as client:
            assert (
                client.get(f"http://127.0.0.1:{self.port}/healthz?{marker}", headers=headers).status_code
                == 200
            )
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            for line in self.log.read_text().splitlines():
                if f"/healthz?{marker} " in line:
                    return re.search(r"(\S+):\d+ - \"GET", line)[1]
            time.sleep(0.05)
        raise AssertionError(f"no access log line for {marker}: {self.log.read_text()}")


@pytest.fixture
def container(tmp_path):
    started = Container(tmp_path)
    yield started
    started.stop()


def test_it_passes_its_own_healthcheck_with_a_real_allowed_host(container):
    result = subprocess.run(healthcheck(container.port), env=container.env, capture_output=True, timeout=30)
    assert result.returncode == 0, result.stderr.decode()


def test_it_ignores_forwarded_for_from_an_untrusted_address(container):
    # 127.0.0.2 is not the trusted proxy: the address it claims to forward for must not reach the lockout.
    assert container.client_seen("127.0.0.2", "untrusted", {"X-Forwarded-For": FORGED}) == "127.0.0.2"


def test_it_takes_the_forwarded_address_from_the_trusted_proxy(container):
    assert container.client_seen("127.0.0.1", "trusted", {"X-Forwarded-For": FORGED}) == FORGED


def test_it_trusts_the_proxies_named_in_forwarded_allow_ips(tmp_path):
    started = Container(tmp_path, FORWARDED_ALLOW_IPS="127.0.0.2")
    try:
        assert started.client_seen("127.0.0.2", "configured", {"X-Forwarded-For": FORGED}) == FORGED
        assert started.client_seen("127.0.0.1", "unlisted", {"X-Forwarded-For": FORGED}) == "127.0.0.1"
    finally:
        started.stop()
