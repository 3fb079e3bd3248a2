"""A live console under uvicorn (temp SQLite, the test sandbox) and a headless Chromium page."""

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import sync_playwright

from tests.sandbox_fixtures import TEST_DEMO_KEY, free_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
DEMO_PASSWORD = "demo-browser-pass"
SECOND_ORG = """
from django.contrib.auth import get_user_model
from console.accounts.models import Membership, Organization
org, _ = Organization.objects.get_or_create(
    slug="second", defaults={"name": "Second", "service_base_url": "%s"}
)
org.set_api_key("sandbox-demo-key")
org.save()
demo = get_user_model().objects.get(username="demo")
Membership.objects.get_or_create(user=demo, org=org, defaults={"role": "viewer"})
"""


@contextlib.contextmanager
def running_console(sandbox_url, db_dir: Path, **settings: str):
    """A migrated, seeded console under uvicorn on a free port; ``settings`` are extra environment."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db_dir / 'console.sqlite3'}",
        "SANDBOX_URL": sandbox_url,
        "SANDBOX_DEMO_KEY": TEST_DEMO_KEY,
        "DEMO_PASSWORD": DEMO_PASSWORD,
        "DEBUG": "true",
        **settings,
    }
    manage = [sys.executable, "manage.py"]
    for command in (["migrate", "-v0"], ["demo"], ["shell", "-c", SECOND_ORG % sandbox_url]):
        subprocess.run(manage + command, cwd=ROOT, env=env, check=True, capture_output=True)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "console.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError("the console exited before answering /healthz")
            try:
                if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the console did not answer /healthz within 30 s")
            time.sleep(0.1)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="session")
def console_server(sandbox_url, tmp_path_factory):
    with running_console(sandbox_url, tmp_path_factory.mktemp("console")) as base_url:
        yield base_url


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True
        )
        yield browser
        browser.close()


@pytest.fixture
def browser_page(browser):
    context = browser.new_context()
    page = context.new_page()
    yield page
    context.close()
