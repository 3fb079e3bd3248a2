"""The sandbox's state file (``SANDBOX_STATE``, console/sandbox/store.py): a restart loses nothing.

Each test starts real sandbox processes over loopback HTTP on one state file in a temporary directory,
stops them (gracefully, or with SIGKILL where an answered change must already be on disk) and starts new
ones on the same file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from console.sandbox import store
from console.sandbox.resources.extensions import demo_zip
from tests.sandbox.test_deployments import app_zip
from tests.sandbox_fixtures import (
    ROOT,
    TEST_DEMO_KEY,
    SandboxTenant,
    free_port,
    new_tenant,
    start_sandbox,
    stop_sandbox,
)

PROXY_PASSWORD = "proxy-pass-7f3a"
CREDENTIAL_PASSWORD = "credential-pass-91bc"

# Every list of the service, with the field that names a record and whether it pages (limit=100).
LISTS = {
    "/org/projects": "id",
    "/browsers": "session_id",
    "/browser_pools": "id",
    "/profiles": "id",
    "/proxies": "id",
    "/extensions": "id",
    "/credentials": "id",
    "/auth/connections": "id",
    "/apps": "id",
    "/deployments": "id",
    "/invocations": "id",
    "/org/api_keys": "id",
    "/vaults": "id",
    "/telemetry/destinations": "id",
    "/org/credential_providers": "id",
}


def sandbox(state: Path, **settings):
    return start_sandbox(SANDBOX_ENGINE="simulated", SANDBOX_STATE=str(state), **settings)


def kill(process: subprocess.Popen) -> None:
    """A crash: no shutdown, no last save."""
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=15)


def created(response: httpx.Response) -> dict:
    assert response.status_code in (200, 201, 202), response.text
    return response.json()


def listing(tenant: SandboxTenant, path: str) -> dict[str, dict]:
    response = tenant.call("GET", path, params={"limit": 100})
    assert response.status_code == 200, (path, response.text)
    return {item[LISTS[path]]: item for item in response.json()}


def everything(tenant: SandboxTenant) -> dict[str, dict[str, dict]]:
    return {path: listing(tenant, path) for path in LISTS}


def make_one_of_each(tenant: SandboxTenant) -> dict[str, str]:
    """One record of every kind an operator creates, by the list it shows in: their ids."""
    made = {}
    made["/org/projects"] = created(tenant.call("POST", "/org/projects", json={"name": "kept"}))["id"]
    made["/credentials"] = created(
        tenant.call(
            "POST",
            "/credentials",
            json={"name": "github", "domain": "github.com", "values": {"password": CREDENTIAL_PASSWORD}},
        )
    )["id"]
    made["/proxies"] = created(
        tenant.call(
            "POST",
            "/proxies",
            json={
                "type": "custom",
                "name": "corp",
                "config": {
                    "host": "proxy.example.net",
                    "port": 3128,
                    "username": "u",
                    "password": PROXY_PASSWORD,
                },
            },
        )
    )["id"]
    made["/profiles"] = created(tenant.call("POST", "/profiles", json={"name": "kept-profile"}))["id"]
    made["/extensions"] = created(
        tenant.call(
            "POST",
            "/extensions",
            data={"name": "kept-ext"},
            files={
                "file": (
                    "e.zip",
                    demo_zip({"manifest_version": 3, "name": "K", "version": "1"}, {}),
                    "application/zip",
                )
            },
        )
    )["id"]
    made["/org/api_keys"] = created(tenant.call("POST", "/org/api_keys", json={"name": "ci"}))["id"]
    made["/vaults"] = created(tenant.call("POST", "/vaults", json={"name": "kept-vault"}))["id"]
    made["/telemetry/destinations"] = created(
        tenant.call(
            "POST", "/telemetry/destinations", json={"name": "hc", "endpoint": "https://api.honeycomb.io"}
        )
    )["id"]
    made["/org/credential_providers"] = created(
        tenant.call(
            "POST",
            "/org/credential_providers",
            json={"name": "1password", "provider_type": "onepassword", "token": "ops_token_1234567890"},
        )
    )["id"]
    made["/auth/connections"] = created(
        tenant.call("POST", "/auth/connections", json={"domain": "plain.example.com", "profile_name": "team"})
    )["id"]
    made["/deployments"] = created(
        tenant.call(
            "POST",
            "/deployments",
            data={"version": "1.0.0", "entrypoint_rel_path": "main.py"},
            files={"file": ("app.zip", app_zip(), "application/zip")},
        )
    )["id"]
    tenant.advance(10)  # the deployment is running: its app takes invocations
    made["/invocations"] = created(
        tenant.call(
            "POST",
            "/invocations",
            json={"app_name": "hello-app", "action_name": "greet", "version": "1.0.0", "async": True},
        )
    )["id"]
    pool = created(tenant.call("POST", "/browser_pools", json={"name": "kept-pool", "size": 2}))
    made["/browser_pools"] = pool["id"]
    tenant.advance(600)  # the pool has filled
    made["lease"] = created(
        tenant.call("POST", f"/browser_pools/{pool['id']}/acquire", json={"acquire_timeout_seconds": 0})
    )["session_id"]
    made["/browsers"] = created(
        tenant.call(
            "POST",
            "/browsers",
            json={
                "headless": True,
                "name": "kept-session",
                "timeout_seconds": 3600,
                "telemetry": {"enabled": True},
            },
        )
    )["session_id"]
    return made


def test_it_brings_back_every_resource_with_its_id_and_fields_after_a_crash(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    url, process = sandbox(state)
    try:
        tenant = new_tenant(url)
        tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
        made = make_one_of_each(tenant)
        session = made["/browsers"]
        written = tenant.call(
            "PUT",
            f"/browsers/{session}/fs/write_file",
            params={"path": "/tmp/kept.txt"},
            content=b"kept bytes",
        )
        assert written.status_code in (200, 201, 204), written.text
        tenant.call("POST", f"/browsers/{session}/computer/clipboard/write", json={"text": "kept clip"})
        before = everything(tenant)
        audit = tenant.call("GET", "/audit-logs", params={"limit": 100}).json()
    finally:
        kill(process)  # every answered change is already on disk

    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    url, process = sandbox(state)
    try:
        again = SandboxTenant(url=url, api_key=tenant.api_key)
        after = everything(again)
        for path, records in before.items():
            assert set(after[path]) == set(records), path
        for path, record_id in made.items():
            if path in LISTS:
                assert record_id in after[path], path
        # Same fields: records whose state does not move with time come back identical.
        for path in (
            "/org/projects",
            "/profiles",
            "/proxies",
            "/extensions",
            "/credentials",
            "/org/api_keys",
            "/vaults",
            "/telemetry/destinations",
            "/org/credential_providers",
        ):
            assert after[path] == before[path], path
        kept = after["/browsers"][session]
        assert (
            kept["name"] == "kept-session"
            and kept["created_at"] == before["/browsers"][session]["created_at"]
        )
        assert made["lease"] in after["/browsers"]
        pool = again.call("GET", f"/browser_pools/{made['/browser_pools']}").json()
        assert pool["acquired_count"] == 1
        assert again.call(
            "GET", f"/browsers/{session}/fs/read_file", params={"path": "/tmp/kept.txt"}
        ).content == (b"kept bytes")
        clip = again.call("POST", f"/browsers/{session}/computer/clipboard/read", json={})
        assert clip.json()["text"] == "kept clip"
        assert again.call("GET", f"/invocations/{made['/invocations']}").status_code == 200
        # The audit log continues: what was there is still there, oldest entries included.
        now = again.call("GET", "/audit-logs", params={"limit": 100}).json()
        assert {json.dumps(e, sort_keys=True) for e in audit} <= {json.dumps(e, sort_keys=True) for e in now}
        # A key the tenant created authenticates again.
        assert again.call("GET", "/org/api_keys").status_code == 200
    finally:
        stop_sandbox(process)


def test_it_continues_a_telemetry_stream_seq_after_a_restart(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    url, process = sandbox(state)
    try:
        tenant = new_tenant(url)
        tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
        session = created(
            tenant.call(
                "POST",
                "/browsers",
                json={"headless": True, "timeout_seconds": 3600, "telemetry": {"enabled": True}},
            )
        )
        sid = session["session_id"]
        tenant.control("POST", "telemetry/emit", {"session_id": sid, "count": 5})
        first = tenant.call("GET", f"/browsers/{sid}/telemetry/events", params={"limit": 100}).json()
    finally:
        stop_sandbox(process)
    assert first, "the session has telemetry before the restart"
    last = max(item["seq"] for item in first)

    url, process = sandbox(state)
    try:
        again = SandboxTenant(url=url, api_key=tenant.api_key)
        kept = again.call("GET", f"/browsers/{sid}/telemetry/events", params={"limit": 100}).json()
        assert kept == first
        again.control("POST", "telemetry/emit", {"session_id": sid, "count": 1})
        with httpx.stream(
            "GET",
            f"{url}/browsers/{sid}/telemetry/stream",
            headers={"Authorization": f"Bearer {tenant.api_key}", "Last-Event-ID": str(last)},
            timeout=10,
        ) as stream:
            for line in stream.iter_lines():
                if line.startswith("id: "):
                    assert int(line[4:]) == last + 1
                    break
    finally:
        stop_sandbox(process)


def test_it_does_not_reseed_the_demo_and_keeps_its_ids(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    demo = None
    for _ in range(2):
        url, process = sandbox(state)
        try:
            tenant = SandboxTenant(url=url, api_key=TEST_DEMO_KEY)
            seen = {
                path: sorted(listing(tenant, path))
                for path in ("/browsers", "/org/projects", "/browser_pools")
            }
        finally:
            stop_sandbox(process)
        assert all(seen.values())
        demo = demo or seen
        assert seen == demo


@pytest.fixture
def reachable_path():
    """A directory the commands' unprivileged identity can pass through (pytest's tmp_path is 0700)."""
    directory = Path(tempfile.mkdtemp(prefix="sandbox-state-test-"))
    directory.chmod(0o711)
    yield directory
    store.reset(directory / "sandbox.sqlite3")
    shutil.rmtree(directory, ignore_errors=True)


def test_it_brings_back_a_running_process_as_exited(reachable_path):
    state = reachable_path / "sandbox.sqlite3"
    url, process = sandbox(state)
    try:
        tenant = new_tenant(url)
        sid = created(tenant.call("POST", "/browsers", json={"headless": True, "timeout_seconds": 3600}))[
            "session_id"
        ]
        spawned = tenant.call(
            "POST", f"/browsers/{sid}/process/spawn", json={"command": "sleep", "args": ["300"]}
        )
        if spawned.status_code == 503:
            pytest.skip(f"commands cannot run here: {spawned.json()['message']}")
        assert spawned.status_code in (200, 201), spawned.text
        pid = spawned.json()["process_id"]
        assert tenant.call("GET", f"/browsers/{sid}/process/{pid}/status").json()["state"] == "running"
    finally:
        stop_sandbox(process)
    url, process = sandbox(state)
    try:
        again = SandboxTenant(url=url, api_key=tenant.api_key)
        status = again.call("GET", f"/browsers/{sid}/process/{pid}/status").json()
        assert status["state"] == "exited" and status["exit_code"] == -1
        with httpx.stream(
            "GET",
            f"{url}/browsers/{sid}/process/{pid}/stdout/stream",
            headers={"Authorization": f"Bearer {tenant.api_key}"},
            timeout=10,
        ) as stream:
            text = "".join(stream.iter_text())
        assert "exit" in text
    finally:
        stop_sandbox(process)


def run_on(state: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SANDBOX_ENGINE": "simulated", "SANDBOX_STATE": str(state)}
    return subprocess.run(
        [sys.executable, "-m", "console.sandbox", "--port", str(free_port())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize("kind", ["garbage", "foreign-sqlite", "newer-format", "damaged-record"])
def test_it_refuses_a_corrupted_or_foreign_file_with_a_clear_message(tmp_path, kind):
    state = tmp_path / "sandbox.sqlite3"
    if kind == "garbage":
        state.write_bytes(b"this is not a database, it is a shopping list\n" * 100)
    elif kind == "foreign-sqlite":
        with contextlib.closing(sqlite3.connect(state)) as db, db:
            db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    else:
        _url, process = sandbox(state)
        stop_sandbox(process)
        with contextlib.closing(sqlite3.connect(state)) as db, db:
            if kind == "newer-format":
                db.execute("UPDATE meta SET value = '99' WHERE key = 'version'")
            else:
                cut_short = '{"created_at": {"$": "dt", "v": "x'
                db.execute("UPDATE records SET data = ? WHERE tbl = 'browsers'", (cut_short,))
    before = state.read_bytes()
    result = run_on(state)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert str(state) in result.stderr
    # What to do: another file for someone else's database, a reset for a damaged or newer state file.
    assert ("SANDBOX_STATE" if kind == "foreign-sqlite" else "--reset") in result.stderr
    assert state.read_bytes() == before  # nothing overwritten
    if kind == "damaged-record":
        assert "record browsers/" in result.stderr


def test_it_starts_fresh_after_a_reset(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    url, process = sandbox(state)
    try:
        tenant = new_tenant(url)
    finally:
        stop_sandbox(process)
    env = {**os.environ, "SANDBOX_STATE": str(state)}
    reset = subprocess.run(
        [sys.executable, "-c", "from console.sandbox.server import reset_state; reset_state()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert reset.returncode == 0, reset.stderr
    assert not state.exists() and not Path(f"{state}.files").exists()
    url, process = sandbox(state)
    try:
        assert (
            httpx.get(
                f"{url}/org/projects", headers={"Authorization": f"Bearer {tenant.api_key}"}
            ).status_code
            == 401
        )
    finally:
        stop_sandbox(process)


def test_it_keeps_secrets_in_a_file_only_its_owner_reads(tmp_path):
    """The sandbox holds credential values and proxy passwords as the service would (it must use them);
    the file therefore is 0600, as are its WAL companions and its files directory 0700."""
    state = tmp_path / "sandbox.sqlite3"
    url, process = sandbox(state)
    try:
        tenant = new_tenant(url)
        make_one_of_each(tenant)
    finally:
        stop_sandbox(process)
    for path in [state, *tmp_path.glob("sandbox.sqlite3-*")]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(Path(f"{state}.files").stat().st_mode) & 0o077 in (0, 0o011)


def test_it_keeps_everything_in_memory_without_a_state_file(tmp_path):
    url, process = start_sandbox(SANDBOX_ENGINE="simulated")
    try:
        tenant = new_tenant(url)
        created(tenant.call("POST", "/org/projects", json={"name": "gone"}))
    finally:
        stop_sandbox(process)
    url, process = start_sandbox(SANDBOX_ENGINE="simulated")
    try:
        gone = httpx.get(f"{url}/org/projects", headers={"Authorization": f"Bearer {tenant.api_key}"})
        assert gone.status_code == 401
    finally:
        stop_sandbox(process)


@pytest.mark.chromium
def test_it_wakes_a_real_session_on_its_kept_url_and_storage_after_a_restart(reachable_path):
    from playwright.sync_api import sync_playwright

    # The jailed browsers run as another user: their directories beside the file must be reachable.
    state = reachable_path / "sandbox.sqlite3"
    settings = {
        "SANDBOX_ENGINE": "chromium",
        "SANDBOX_STATE": str(state),
        "SANDBOX_MAX_BROWSERS": "1",
        "SANDBOX_BROWSER_LINGER_SECONDS": "0",
    }
    url, process = start_sandbox(**settings)
    try:
        tenant = new_tenant(url)
        session = created(
            tenant.call(
                "POST",
                "/browsers",
                json={
                    "headless": True,
                    "timeout_seconds": 3600,
                    "start_url": "https://docs.example.com/quickstart",
                },
                timeout=60,
            )
        )
        sid = session["session_id"]
        with sync_playwright() as playwright:
            browser = playwright.chromium.connect_over_cdp(session["cdp_ws_url"], timeout=20_000)
            try:
                page = browser.contexts[0].pages[0]
                page.click("text=the API reference")
                page.wait_for_url("https://docs.example.com/api")
                page.evaluate("localStorage.setItem('kept', 'across restarts')")
            finally:
                browser.close()
        replay = created(tenant.call("POST", f"/browsers/{sid}/replays", json={}, timeout=60))["replay_id"]
        stopped = tenant.call("POST", f"/browsers/{sid}/replays/{replay}/stop", timeout=120)
        assert stopped.status_code in (200, 204), stopped.text
        video = tenant.call("GET", f"/browsers/{sid}/replays/{replay}", timeout=60).content
        assert video[4:8] == b"ftyp"
    finally:
        stop_sandbox(process)

    url, process = start_sandbox(**settings)
    try:
        again = SandboxTenant(url=url, api_key=tenant.api_key)
        record = again.call("GET", f"/browsers/{sid}").json()
        assert record["sandbox"]["browser"] == "standby"
        # The replay and its video, from the files kept beside the state file.
        assert [r["replay_id"] for r in again.call("GET", f"/browsers/{sid}/replays").json()] == [replay]
        assert again.call("GET", f"/browsers/{sid}/replays/{replay}", timeout=60).content == video
        with sync_playwright() as playwright:
            browser = playwright.chromium.connect_over_cdp(record["cdp_ws_url"], timeout=30_000)
            try:
                page = browser.contexts[0].pages[0]
                assert page.url == "https://docs.example.com/api"
                assert page.evaluate("localStorage.getItem('kept')") == "across restarts"
            finally:
                browser.close()
    finally:
        stop_sandbox(process)


def test_it_refuses_a_second_sandbox_or_a_reset_on_a_file_in_use(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    url, process = sandbox(state)
    try:
        second = run_on(state)
        assert second.returncode == 2 and "in use by another sandbox process" in second.stderr
        assert "Traceback" not in second.stderr
        env = {**os.environ, "SANDBOX_STATE": str(state)}
        reset = subprocess.run(
            [sys.executable, "-c", "from console.sandbox.server import reset_state; reset_state()"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert reset.returncode == 2 and "in use" in reset.stderr
        assert httpx.get(f"{url}/_sandbox/health").status_code == 200 and state.exists()
    finally:
        stop_sandbox(process)


# A hostile state path ---------------------------------------------------------------------------------
# SANDBOX_STATE in a directory others can write (/tmp): another local user may plant a symlink or a file of
# their own there before the sandbox (root, often) starts.


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", ".lock", ".files"])
def test_it_never_follows_a_symlink_planted_at_the_state_path(tmp_path, suffix):
    state = tmp_path / "sandbox.sqlite3"
    victim = tmp_path / "victim"
    victim.write_bytes(b"someone else's file\n")
    victim.chmod(0o644)
    Path(f"{state}{suffix}").symlink_to(victim)
    with pytest.raises(store.StateError, match="symbolic link"):
        store.Store(state)
    assert victim.read_bytes() == b"someone else's file\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644  # was chmod 0600 through the link


def test_it_creates_nothing_through_a_dangling_symlink(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    target = tmp_path / "elsewhere" / "created-by-root"
    target.parent.mkdir()
    state.symlink_to(target)
    with pytest.raises(store.StateError, match="symbolic link"):
        store.Store(state)
    assert not target.exists()  # was created (a database, by root) where the link pointed


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_it_refuses_state_another_user_wrote(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    saved = store.Store(state)
    saved.close()
    os.chown(state, 65534, 65534)  # planted by nobody: its tenants, keys and paths are theirs
    with pytest.raises(store.StateError, match="belongs to another user"):
        store.Store(state)
    assert state.stat().st_uid == 65534


def test_it_reads_a_state_file_opened_by_its_directorys_symlink(tmp_path):
    # A symlinked directory (/var/lib/x -> /data/x) is the owner's choice: the file's own link is refused.
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    opened = store.Store(tmp_path / "linked" / "sandbox.sqlite3")
    opened.close()
    assert (tmp_path / "real" / "sandbox.sqlite3").is_file()
    store.Store(tmp_path / "linked" / "sandbox.sqlite3").close()


def test_it_resets_a_symlink_itself_never_what_it_points_at(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me\n")
    state.symlink_to(victim)
    files = tmp_path / "victim-dir"
    files.mkdir()
    (files / "keep").write_bytes(b"x")
    Path(f"{state}.files").symlink_to(files)
    store.reset(state)
    assert victim.read_bytes() == b"keep me\n" and (files / "keep").exists()
    assert not os.path.lexists(state) and not os.path.lexists(f"{state}.files")


@pytest.mark.parametrize(
    "data",
    [
        '{"id": "t", "key_sha256": "x", "clock_offset": {"$": "td", "v": 1e300}}',  # OverflowError
        '{"id": "t", "key_sha256": "x", "settings": '
        + "[" * 100_000
        + "]" * 100_000
        + "}",  # RecursionError: no record nests so
    ],
    ids=["overflow", "recursion"],
)
def test_it_refuses_state_values_out_of_range_with_a_clear_error(tmp_path, data):
    opened = store.Store(tmp_path / "sandbox.sqlite3")
    sealed = opened.cipher.seal(data, "tenant", "t")
    opened.db.execute("INSERT INTO tenants (tenant, data) VALUES (?, ?)", ("t", sealed))
    with pytest.raises(store.StateError, match="could not be read as sandbox state"):
        opened.load(type("Registry", (), {"tenants": {}})())
    opened.close()
