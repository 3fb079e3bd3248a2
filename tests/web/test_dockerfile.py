"""The Dockerfile's command lines, run as written: uvicorn's CMD and the HEALTHCHECK probe.

The console runs in production mode with ALLOWED_HOSTS set to a public name, as a real deployment does.
"""

import fnmatch
import json
import os
import re
import secrets
import shlex
import shutil
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


# What the image holds without: the sandbox and its packages (requirements/sandbox.txt).
SANDBOX_PACKAGES = (
    *("starlette", "playwright", "greenlet", "regex", "multipart", "python_multipart"),
    *("oauth2_provider", "oauthlib", "jwcrypto"),  # the demo identity provider's
)
ABSENT = f"""
import sys

class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {SANDBOX_PACKAGES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not in the image)", name=name)
        return None

sys.meta_path.insert(0, Absent())
"""


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore keeps ``path`` (relative, with /) out of the build context."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    for pattern in patterns:
        bare = pattern.rstrip("/").removeprefix("**/")
        if any(
            fnmatch.fnmatch(prefix, bare) or fnmatch.fnmatch(part, bare)
            for prefix, part in zip(prefixes, parts, strict=True)
        ):
            return True
    return False


@pytest.fixture
def image_tree(tmp_path) -> Path:
    """The files COPY . /app takes (the checkout's, less what .dockerignore names), and a Python that cannot
    import the sandbox's packages (a sitecustomize on PYTHONPATH refuses them)."""
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    app = tmp_path / "app"
    for name in listed.decode().split("\0"):
        if name and not ignored(name, patterns) and (ROOT / name).is_file():
            (app / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, app / name)
    (tmp_path / "absent").mkdir()
    (tmp_path / "absent" / "sitecustomize.py").write_text(ABSENT)
    return app


def test_it_ships_the_console_without_the_sandbox_or_its_packages(image_tree, tmp_path):
    assert not (image_tree / "console" / "sandbox").exists() and not (image_tree / "tests").exists()
    assert not (image_tree / "console" / "demo_idp").exists()
    assert (image_tree / "console" / "live" / "screen.py").exists()
    env = production_env(tmp_path, PYTHONPATH=str(tmp_path / "absent"))
    proof = subprocess.run(
        [sys.executable, "-c", "import starlette"], cwd=image_tree, env=env, capture_output=True, text=True
    )
    assert "not in the image" in proof.stderr  # the packages really are out of reach
    steps = (["collectstatic", "--noinput", "-v0"], ["migrate", "--noinput", "-v0"], ["check", "--deploy"])
    for command in steps:  # the image's build step, the release step, and Django's own checks
        done = subprocess.run(
            [sys.executable, "manage.py", *command], cwd=image_tree, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    # Every view module, imported through the URLconf, and the ASGI application the CMD serves.
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); import console.urls, console.asgi"],
        cwd=image_tree,
        env={**env, "DJANGO_SETTINGS_MODULE": "console.settings"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    port = free_port()
    log = (tmp_path / "console.log").open("w")
    server = subprocess.Popen(
        command_line(port), cwd=image_tree, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except httpx.HTTPError:
                assert server.poll() is None and time.monotonic() < deadline, log.name
                time.sleep(0.1)
        assert ready.status_code == 200
        login = httpx.get(
            f"http://127.0.0.1:{port}/login/",
            headers={"Host": "console.example.com", "X-Forwarded-Proto": "https"},
            timeout=10,
        )
        assert login.status_code == 200 and "Log in" in login.text
    finally:
        server.terminate()
        server.wait(timeout=10)
