"""A real OpenID Connect provider on loopback for the tests: the demo identity provider (console/demo_idp,
django-oauth-toolkit) in a process of its own, with its control interface on."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.sandbox_fixtures import TLS, free_port

ROOT = Path(__file__).resolve().parent.parent
CLIENT_ID = "operator-console"


@dataclass
class Idp:
    url: str
    client_secret: str
    control_token: str

    @property
    def issuer(self) -> str:
        return f"{self.url}/o"

    def _control(self, path: str, body: dict) -> dict:
        response = httpx.post(
            f"{self.url}/_idp/{path}/",
            json=body,
            headers={"Authorization": f"Bearer {self.control_token}"},
            verify=TLS,
        )
        response.raise_for_status()
        return response.json()

    def user(self, username: str, **values) -> str:
        """Create or change a user of the provider (email, password, groups, active); its ``sub``."""
        return self._control("users", {"username": username, **values})["id"]

    def fault(self, **faults) -> None:
        """Misbehave: ``nonce="..."`` puts that nonce in every ID token; no argument stops it."""
        self._control("faults", faults)


@contextlib.contextmanager
def running_idp(folder: Path, redirect_uris: list[str]):
    port = free_port()
    idp = Idp(
        url=f"http://127.0.0.1:{port}",
        client_secret=secrets.token_urlsafe(24),
        control_token=secrets.token_urlsafe(24),
    )
    env = {
        **os.environ,
        "DEBUG": "true",
        "DEMO_IDP_PORT": str(port),
        "DEMO_IDP_DB": str(folder / "idp.sqlite3"),
        "DEMO_IDP_CLIENT_SECRET": idp.client_secret,
        "DEMO_IDP_CONTROL_TOKEN": idp.control_token,
        "DEMO_IDP_REDIRECT_URIS": " ".join(redirect_uris),
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    process = subprocess.Popen([sys.executable, "-m", "console.demo_idp"], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError("the identity provider exited before answering")
            with contextlib.suppress(httpx.HTTPError):
                answer = httpx.get(f"{idp.issuer}/.well-known/openid-configuration", timeout=1, verify=TLS)
                if answer.status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("the identity provider did not answer within 60 s")
            time.sleep(0.1)
        yield idp
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
