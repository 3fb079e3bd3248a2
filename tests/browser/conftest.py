"""Browser tests: a live console under uvicorn (its own SQLite file, the test sandbox), headless Chromium, and
a team of its own for every test.

- ``console_server``: a console per pytest worker (``running_console``), shared by the tests that need no
  special settings; a module that needs other settings starts its own with ``running_console``.
- ``team``: a fresh organization of that console bound to a fresh sandbox tenant with the demo data, with an
  admin, an operator and a viewer of its own. What a test creates, breaks or counts is its own, so tests run
  in any order and on any worker.
- ``team.log_in(page, "operator")`` signs the page's browser context in without the login form (a session
  made by the console's own ``login()``); the login form has its own tests.
- ``browser``: one Chromium per test module (Playwright's sync API runs an event loop in the main thread, so
  it must be closed before the worker runs an async test of another module).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import django
import httpx
import pytest
from playwright.sync_api import expect, sync_playwright

from console.sandbox.chromium.engine import DISABLED_FEATURES
from tests import server_logs
from tests.sandbox_fixtures import TEST_DEMO_KEY, TLS, SandboxTenant, free_port, new_tenant

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    # Playwright's own disabled features and the omnibox's WebUI popups, as the sandbox's browsers have them
    # (console/sandbox/chromium/engine.py): each context's window loaded two chrome:// pages in a renderer
    # of its own, a third of these browsers' CPU in tests/browser/test_telemetry.py.
    "--disable-features=" + ",".join(DISABLED_FEATURES),
]
DEMO_PASSWORD = "demo-browser-pass"
# expect() waits for a state; its default 5 s is short for a page whose parts load after the frame on a loaded
# 2-core machine with four workers (CI). A state that comes never fails all the same, only later.
expect.set_options(timeout=15_000)
ROLES = ("admin", "operator", "viewer")


@dataclass
class Console:
    """A console under uvicorn, and the seeder that works in its database (tests/browser/seeder.py)."""

    url: str
    folder: Path
    sandbox_url: str
    seeder: subprocess.Popen = field(repr=False)

    def ask(self, command: str, **args):
        self.seeder.stdin.write(json.dumps({"command": command, "args": args}) + "\n")
        self.seeder.stdin.flush()
        line = self.seeder.stdout.readline()
        if not line:
            raise RuntimeError(f"the seeder of {self.url} exited ({self.seeder.poll()})")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"seeder {command}: {answer['error']}")
        return answer["ok"]

    def team(self, tenant: SandboxTenant, name: str = "") -> Team:
        """A new organization of this console on ``tenant``, with a member per role."""
        slug = "t-" + secrets.token_hex(4)
        users = {role: f"{role}-{slug[2:]}" for role in ROLES}
        self.ask(
            "team",
            slug=slug,
            name=name or f"Team {slug[2:]}",
            base_url=tenant.url,
            api_key=tenant.api_key,
            users={username: role for role, username in users.items()},
        )
        return Team(console=self, slug=slug, name=name or f"Team {slug[2:]}", tenant=tenant, users=users)

    def log_in(self, page, username: str) -> None:
        """Signs the page's browser context in as ``username`` (a session cookie the console made)."""
        cookie = self.ask("sign_in", username=username)
        page.context.add_cookies([{**cookie, "url": self.url}])

    def add_member(self, username: str, slug: str, role: str) -> None:
        self.ask("add_member", username=username, slug=slug, role=role)

    def remove_membership(self, username: str, slug: str) -> None:
        assert self.ask("remove_membership", username=username, slug=slug)["removed"] == 1

    def set_role(self, username: str, slug: str, role: str) -> None:
        assert self.ask("set_role", username=username, slug=slug, role=role)["changed"] == 1

    def flush_sessions(self, username: str) -> None:
        """What "sign out everywhere" does: every Django session of the user is deleted."""
        assert self.ask("flush_sessions", username=username)["flushed"] >= 1


@dataclass
class Team:
    """An organization of its own in a console, on a sandbox tenant of its own, with one user per role."""

    console: Console
    slug: str
    name: str
    tenant: SandboxTenant
    users: dict[str, str]

    def path(self, rest: str = "") -> str:
        """The console path of ``rest`` in this organization: ``/o/<slug>/<rest>``."""
        return f"/o/{self.slug}/{rest.lstrip('/')}"

    def url(self, rest: str = "") -> str:
        return self.console.url + self.path(rest)

    def user(self, role: str) -> str:
        return self.users[role]

    def log_in(self, page, role: str = "admin") -> None:
        self.console.log_in(page, self.users[role])

    def call(self, method: str, path: str, json: dict | None = None, **kwargs):
        """A service call with this team's key; the answer's JSON (None when empty)."""
        response = self.tenant.call(method, path, json=json, **kwargs)
        response.raise_for_status()
        return response.json() if response.content else None

    def control(self, method: str, path: str, json: dict | None = None):
        """A call to the sandbox's control interface for this team's tenant."""
        response = self.tenant.control(method, path, json)
        return response.json() if response.content else None

    def fault(self, **fault) -> None:
        self.tenant.fault(**fault)

    def advance(self, seconds: float) -> None:
        self.tenant.advance(seconds)


def wait_until_healthy(base_url: str, process: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            raise RuntimeError("the console exited before answering /healthz")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base_url}/healthz", timeout=1, verify=TLS).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the console did not answer /healthz within {seconds} s")
        time.sleep(0.05)


def migrated_database(env: dict[str, str]) -> Path:
    """An empty console database with every migration applied, made once for all the workers of all runs
    that have the same migrations and pinned packages (a file named by their hash, made under a lock), for
    a console to copy: about 4 s of a core saved per console, 25 s of waiting on a loaded machine."""
    digest = hashlib.sha256(django.__version__.encode())
    for path in sorted([*ROOT.glob("console/**/migrations/*.py"), *ROOT.glob("requirements/*.txt")]):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    template = Path(tempfile.gettempdir()) / f"console-migrated-{digest.hexdigest()[:16]}.sqlite3"
    with open(f"{template}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():
            making = template.with_suffix(f".{os.getpid()}.making")
            making.unlink(missing_ok=True)
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "-v0"],
                cwd=ROOT,
                env={**env, "DATABASE_URL": f"sqlite:///{making}"},
                check=True,
                capture_output=True,
            )
            os.replace(making, template)
    return template


@contextlib.contextmanager
def running_console(sandbox_url, db_dir: Path, *, demo: bool = False, **settings: str):
    """A migrated console under uvicorn on a free port, and its seeder; ``settings`` are extra environment.
    ``demo``: with the Demo org and its users (``manage.py demo``), as `make run` has it (the screenshots)."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "DATABASE_URL": f"sqlite:///{db_dir / 'console.sqlite3'}",
        "SANDBOX_URL": sandbox_url,
        "SANDBOX_DEMO_KEY": TEST_DEMO_KEY,
        "DEMO_PASSWORD": DEMO_PASSWORD,
        "DEBUG": "true",
        **settings,
    }
    database = db_dir / "console.sqlite3"
    if not database.exists():  # a console started again on the same folder keeps its data
        shutil.copyfile(migrated_database(env), database)
    if demo:
        subprocess.run(
            [sys.executable, "manage.py", "demo"], cwd=ROOT, env=env, check=True, capture_output=True
        )
    log = server_logs.open_log(f"console-{port}")  # shown with a failed test (tests/server_logs.py)
    server = subprocess.Popen(
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
        stdout=log,
        stderr=log,
    )
    log.close()  # the server holds its own descriptor
    seeder = subprocess.Popen(
        [sys.executable, "-m", "tests.browser.seeder"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until_healthy(base_url, server)
        yield Console(url=base_url, folder=db_dir, sandbox_url=sandbox_url, seeder=seeder)
    finally:
        seeder.stdin.close()
        for process in (server, seeder):
            process.terminate()
        for process in (server, seeder):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture(scope="session")
def console_server(sandbox_url, tmp_path_factory) -> Console:
    with running_console(sandbox_url, tmp_path_factory.mktemp("console")) as console:
        yield console


@pytest.fixture
def team(console_server) -> Team:
    """A team of its own on ``console_server``, its tenant holding the sandbox's demo data."""
    return console_server.team(new_tenant(console_server.sandbox_url, demo=True))


@pytest.fixture(scope="module")
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


def watch_errors(page) -> list[str]:
    """What goes wrong in the page: console errors and uncaught exceptions, as they happen."""
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def log_in_with_the_form(page, console_url: str, username: str, then: str) -> None:
    """Signs in through the login form (for the tests of the form itself and of signing in again)."""
    page.get_by_label("Username or e-mail").fill(username)
    page.get_by_label("Password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{console_url}{then}")


def settle(page) -> None:
    """A barrier: returns once every request the page started before it has been reported to the test.

    Playwright reports a page's requests in the order they are made; a marker request made after them is
    seen after them. Used before asserting that a page made no request (after the page's clock ran on)."""
    marker = f"/__settled__/{secrets.token_hex(4)}"
    page.route(f"**{marker}", lambda route: route.fulfill(status=204))
    with page.expect_request(f"**{marker}"):
        page.evaluate("marker => fetch(marker).catch(() => null)", marker)
    page.unroute(f"**{marker}")


class Held:
    """The page's requests to ``pattern``, held from now until ``release``: the page is looked at meanwhile,
    while what those requests bring is surely not there yet."""

    def __init__(self, page, pattern):
        self.page, self.pattern, self.routes = page, pattern, []
        page.route(pattern, lambda route: self.routes.append(route))

    def release(self, count: int = 1) -> None:
        """Lets the held requests go on once ``count`` of them were made; fails if more were."""
        for _ in range(150):  # Playwright hands a request over when its loop next runs
            if len(self.routes) >= count:
                break
            self.page.wait_for_timeout(100)
        assert len(self.routes) == count, f"{self.pattern} was asked for {len(self.routes)} times"
        for route in self.routes:
            route.continue_()
        self.page.unroute(self.pattern)  # after: unrouting lets a held request go on by itself


def wait_for_telemetry(team: Team, sid: str, event_type: str, seconds: float = 30, **data) -> dict:
    """Polls the session's telemetry until an event of ``event_type`` whose data holds ``data`` is there."""
    deadline = time.monotonic() + seconds
    while True:
        events = team.call("GET", f"/browsers/{sid}/telemetry/events", params={"limit": 100}, timeout=30)
        for event in events:
            inner = event["event"]
            if inner["type"] == event_type and all(inner["data"].get(k) == v for k, v in data.items()):
                return event
        if time.monotonic() > deadline:
            raise AssertionError(f"no {event_type} event with {data} in {seconds} s")
        time.sleep(0.1)


def watch_writes(page, selector: str):
    """Records what the element of ``selector`` says after each write to its text, from now on; returns a
    function that reads the record: its text when watched first, then one entry per write (a write of the
    same text counts: it lays the page out all the same)."""
    page.evaluate(
        """selector => {
            const element = document.querySelector(selector);
            window.__writes = window.__writes || {};
            const said = window.__writes[selector] = [element.textContent];
            new MutationObserver(records => records.forEach(record => said.push(
                Array.from(record.addedNodes, node => node.textContent).join(''))
            )).observe(element, {childList: true});
        }""",
        selector,
    )
    return lambda: page.evaluate("selector => window.__writes[selector]", selector)


def assert_each_write_changes(said: list[str]) -> None:
    """What ``watch_writes`` recorded: no write left the text as it was."""
    assert all(before != after for before, after in itertools.pairwise(said)), said
