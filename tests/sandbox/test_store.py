"""The sandbox's state file (``SANDBOX_STATE``, console/sandbox/core/store.py): a restart loses nothing.

Each test starts real sandbox processes over loopback HTTP on one state file in a temporary directory,
stops them (gracefully, or with SIGKILL where an answered change must already be on disk) and starts new
ones on the same file.
"""

from __future__ import annotations

import base64
import contextlib
import functools
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

from console.sandbox.app import assemble
from console.sandbox.core import store
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

# These tests use the sandbox's objects in-process (a registry, the store): wired as the app wires them.
assemble()


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


def run_on(state: Path, **settings: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "SANDBOX_ENGINE": "simulated",
        "SANDBOX_STATE": str(state),
        "SANDBOX_STATE_KEY": "",
        **settings,
    }
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
    if kind in ("garbage", "foreign-sqlite"):
        assert not store.key_path(state).exists()  # not even a key made beside someone else's file
    if kind == "damaged-record":
        assert "record browsers/" in result.stderr


def test_it_starts_fresh_after_a_reset(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    url, process = sandbox(state)
    try:
        tenant = new_tenant(url)
    finally:
        stop_sandbox(process)
    key = store.key_path(state)
    old_key = key.read_text()
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
    assert not key.exists()  # a fresh start, a fresh key
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
    assert key.read_text() != old_key


def test_it_keeps_secrets_in_a_file_only_its_owner_reads(tmp_path):
    """The file is 0600 (sealed, but its ids and sizes are the owner's business), as are its WAL companions
    and its key, and its files directory 0700."""
    state = tmp_path / "sandbox.sqlite3"
    url, process = sandbox(state)
    try:
        tenant = new_tenant(url)
        make_one_of_each(tenant)
    finally:
        stop_sandbox(process)
    for path in [state, store.key_path(state), *tmp_path.glob("sandbox.sqlite3-*")]:
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


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", ".lock", ".key", ".files"])
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


# Secrets at rest ----------------------------------------------------------------------------------------
# A copied state file (a backup, a bug report's attachment) must not give away any tenant's secrets.

TOTP_SECRET = "NBSWY3DPO5XXE3DEMFZWK5DJN5XGKYLU"
PROVIDER_TOKEN = "ops_token_1234567890"
VAULT_PASSWORD = "vault-pass-5d2e8c1a"
FIXED_MOMENT = "2026-03-01T12:00:00Z"


def forms(secret: str) -> list[bytes]:
    """How a secret could sit in a file: as is, in hex, and base64 (standard or URL-safe) at any of the
    three byte alignments (only the characters that depend on the secret's bytes alone)."""
    raw = secret.encode()
    found = [raw, raw.hex().encode()]
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * shift + raw)
            found.append(encoded[4 if shift else 0 : -4])
    assert all(len(form) >= 8 for form in found), secret  # long enough that a match means something
    return found


def exposed(state: Path, secrets: dict[str, str]) -> dict[str, list[str]]:
    """The secrets found in the state file and its companions (WAL, shared memory, key), by file name."""
    found = {}
    for path in sorted(state.parent.glob(state.name + "*")):
        if path.is_file():
            data = path.read_bytes()
            hits = [name for name, secret in secrets.items() if any(f in data for f in forms(secret))]
            if hits:
                found[path.name] = hits
    return found


def make_secrets(tenant: SandboxTenant) -> tuple[dict[str, str], dict[str, str]]:
    """One secret of every kind a tenant hands the sandbox: the secrets by name, and the ids made."""
    made = make_one_of_each(tenant)  # a credential password, a proxy password, a provider token, an API key
    totp = created(
        tenant.call(
            "POST",
            "/credentials",
            json={
                "name": "with-totp",
                "domain": "totp.example.com",
                "values": {"username": "u"},
                "totp_secret": TOTP_SECRET,
            },
        )
    )
    made["totp"] = totp["id"]
    vault = made["/vaults"]
    item = tenant.call(
        "PUT",
        f"/vaults/{vault}/items/login",
        json={
            "type": "credential",
            "spec": {
                "provider": "kernel",
                "fields": [{"name": "pw", "type": "password", "value": VAULT_PASSWORD}],
            },
        },
    )
    assert item.status_code in (200, 201), item.text
    api_key = created(tenant.call("POST", "/org/api_keys", json={"name": "kept-key"}))["key"]
    secrets = {
        "tenant API key": tenant.api_key,
        "created API key": api_key,
        "credential value": CREDENTIAL_PASSWORD,
        "proxy password": PROXY_PASSWORD,
        "TOTP secret": TOTP_SECRET,
        "provider token": PROVIDER_TOKEN,
        "vault item value": VAULT_PASSWORD,
    }
    return secrets, made


def totp_code_at(tenant: SandboxTenant, credential_id: str) -> str:
    tenant.set_clock(FIXED_MOMENT)
    response = tenant.call("GET", f"/credentials/{credential_id}/totp-code")
    assert response.status_code == 200, response.text
    return response.json()["code"]


def test_it_keeps_no_secret_in_clear_in_the_state_file_and_brings_them_back_with_its_key(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    url, process = sandbox(state)
    try:
        tenant = new_tenant(url)
        secrets, made = make_secrets(tenant)
        code = totp_code_at(tenant, made["totp"])
    finally:
        kill(process)  # a crash: the latest rows are in the WAL, not yet in the database
    assert Path(f"{state}-wal").stat().st_size > 0
    assert exposed(state, secrets) == {}

    url, process = sandbox(state)
    try:
        again = SandboxTenant(url=url, api_key=tenant.api_key)
        # The service answers as before: the same TOTP codes, the created key opens the tenant.
        assert totp_code_at(again, made["totp"]) == code
        by_created_key = SandboxTenant(url=url, api_key=secrets["created API key"])
        assert by_created_key.call("GET", "/org/projects").status_code == 200
        item = again.call("GET", f"/vaults/{made['/vaults']}/items/login").json()
        assert VAULT_PASSWORD not in json.dumps(item)
    finally:
        stop_sandbox(process)  # a clean stop: everything checkpointed into the database
    assert exposed(state, secrets) == {}

    # The values themselves, as the sandbox holds them to use them, from the file with its key.
    from console.sandbox.core.state import Registry

    registry = Registry()
    opened = store.Store(state)
    try:
        opened.load(registry)
    finally:
        opened.close()
    kept = registry.get(tenant.api_key)
    assert kept is not None and registry.get(secrets["created API key"]) is kept
    assert kept.table("credentials")[made["/credentials"]]["_values"] == {"password": CREDENTIAL_PASSWORD}
    assert kept.table("credentials")[made["totp"]]["_totp_secret"] == TOTP_SECRET
    assert kept.table("proxies")[made["/proxies"]]["_secrets"] == {"password": PROXY_PASSWORD}
    assert kept.table("credential_providers")[made["/org/credential_providers"]]["_token"] == PROVIDER_TOKEN
    fields = kept.table("vaults")[made["/vaults"]]["_items"]["login"]["_fields"]
    assert fields["pw"]["value"] == VAULT_PASSWORD


@pytest.mark.parametrize("kind", ["missing", "another-key-file", "another-key-env", "not-a-key"])
def test_it_refuses_a_state_file_without_its_key_with_a_clear_message(tmp_path, kind):
    state = tmp_path / "sandbox.sqlite3"
    key = store.key_path(state)
    url, process = sandbox(state)
    try:
        tenant = new_tenant(url)
        project = created(tenant.call("POST", "/org/projects", json={"name": "kept"}))["id"]
    finally:
        stop_sandbox(process)
    kept_key = key.read_bytes()
    settings = {}
    if kind == "missing":
        key.rename(tmp_path / "key-elsewhere")
    elif kind == "another-key-file":
        key.write_text(store.new_key_text() + "\n")
    elif kind == "another-key-env":
        settings["SANDBOX_STATE_KEY"] = store.new_key_text()
    else:
        key.write_text("not a key\n")
    before = state.read_bytes()

    result = run_on(state, **settings)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert str(state) in result.stderr
    assert "make sandbox-reset" in result.stderr  # or restore the key:
    expected = {
        "missing": f"its key {key} is missing",
        "another-key-file": f"encrypted with another key than {key}",
        "another-key-env": "encrypted with another key than SANDBOX_STATE_KEY",
        "not-a-key": f"{key} does not hold a sandbox state key",
    }
    assert expected[kind] in result.stderr
    # Nothing overwritten, nothing reseeded, no new key made in place of the lost one.
    assert state.read_bytes() == before
    assert kind != "missing" or not key.exists()

    # With its key back, everything is there.
    key.write_bytes(kept_key)
    url, process = sandbox(state)
    try:
        again = SandboxTenant(url=url, api_key=tenant.api_key)
        assert project in listing(again, "/org/projects")
    finally:
        stop_sandbox(process)


def test_it_takes_the_key_from_the_environment_and_writes_no_key_file(tmp_path):
    state = tmp_path / "sandbox.sqlite3"
    key = store.new_key_text()
    url, process = sandbox(state, SANDBOX_STATE_KEY=key)
    try:
        tenant = new_tenant(url)
        project = created(tenant.call("POST", "/org/projects", json={"name": "kept"}))["id"]
    finally:
        stop_sandbox(process)
    assert not store.key_path(state).exists()
    url, process = sandbox(state, SANDBOX_STATE_KEY=key)
    try:
        assert project in listing(SandboxTenant(url=url, api_key=tenant.api_key), "/org/projects")
    finally:
        stop_sandbox(process)
    missing = run_on(state)
    assert missing.returncode == 2 and "is missing" in missing.stderr


# Format 1 (before encryption), as console/sandbox/core/store.py wrote it: every row in clear, tenants and the
# rows of their records by the tenant's API key, created API keys in clear in their records (``_secret``),
# sessions naming their tenant by its key (``_tenant``).
FORMAT_1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tenants (api_key TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE records (
    api_key TEXT NOT NULL, tbl TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (api_key, tbl, id)
);
CREATE TABLE audit (
    api_key TEXT NOT NULL, n INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (api_key, n)
);
CREATE TABLE telemetry (
    api_key TEXT NOT NULL, tbl TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (api_key, tbl, id, seq)
);
"""


def write_format_1(state: Path, api_key: str, tenant, plaintexts: dict[str, str], erased: str) -> None:
    """``tenant`` (opened by ``api_key``) saved as format 1 did, as a crash leaves it: the database and a
    WAL holding the last transactions. ``plaintexts``: created keys by digest (a key whose plaintext the
    test does not know gets one of its own, as every key had one then). ``erased``: a secret of records
    deleted before, left in the file's free pages (as SQLite leaves a deleted row)."""
    staging = state.parent / "staging"
    staging.mkdir()
    written = staging / state.name
    with contextlib.closing(sqlite3.connect(written, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA secure_delete = OFF")  # as SQLite builds without SQLITE_SECURE_DELETE delete
        db.executescript(FORMAT_1_SCHEMA)
        filler = json.dumps({"_values": {"password": erased}, "padding": "x" * 2000})
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO records VALUES (?, 'credentials', ?, ?)",
            [(api_key, f"c{n}", filler) for n in range(1000)],
        )
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("DELETE FROM records")
        db.execute("PRAGMA wal_autocheckpoint = 0")  # what follows stays in the WAL, as after a crash
        db.execute("BEGIN")
        _write_format_1_rows(db, api_key, tenant, plaintexts)
        db.execute("COMMIT")
        for suffix in ("", "-wal"):
            shutil.copyfile(f"{written}{suffix}", f"{state}{suffix}")
    shutil.rmtree(staging)


def _write_format_1_rows(db, api_key: str, tenant, plaintexts: dict[str, str]) -> None:
    from console.sandbox.core.state import key_digest

    codec = store.Codec()
    dumps = functools.partial(json.dumps, separators=(",", ":"))
    db.executemany("INSERT INTO meta VALUES (?, ?)", [("format", store.FORMAT), ("version", "1")])
    fields = {
        "id": tenant.id,
        "clock_offset": tenant.clock_offset,
        "keepalive_seconds": tenant.keepalive_seconds,
        "settings": {k: v for k, v in tenant.settings.items() if k != store.AUDIT},
        "default_project_id": tenant.default_project_id,
    }
    db.execute("INSERT INTO tenants VALUES (?, ?)", (api_key, dumps(codec.encode(fields))))
    for tbl, table in tenant.tables.items():
        for record_id, record in table.items():
            record = dict(record)
            if tbl == "api_keys":
                digest = record.pop("_key_sha256")
                record["_secret"] = plaintexts.get(digest) or "sk_" + os.urandom(20).hex()
                assert digest not in plaintexts or key_digest(record["_secret"]) == digest
            if tbl == "browsers":
                record["_tenant"] = api_key
            codec.archives.clear()
            db.execute(
                "INSERT INTO records VALUES (?, ?, ?, ?)",
                (api_key, tbl, record_id, codec.record(tbl, record_id, record)),
            )
            for (t, i), archive in codec.archives.items():
                for event in archive.events:
                    db.execute(
                        "INSERT INTO telemetry VALUES (?, ?, ?, ?, ?)",
                        (api_key, t, i, event.seq, dumps(event.body)),
                    )
    for n, entry in enumerate(tenant.settings.get(store.AUDIT) or (), start=1):
        db.execute("INSERT INTO audit VALUES (?, ?, ?)", (api_key, n, dumps(codec.encode(entry))))


def test_it_migrates_a_state_file_of_format_1_and_leaves_no_secret_in_clear(tmp_path):
    from console.sandbox.core.state import Registry, key_digest, parse_time
    from console.sandbox.resources import api_keys, credentials

    # The demo tenant of an install that ran the sandbox before encryption (its key is the demo key the
    # sandbox is given, so it is found, not seeded again), with keys it created.
    demo = Registry().create(TEST_DEMO_KEY, demo=True)
    _record, active = api_keys.issue(demo, "kept", (None, None), None)
    deleted_record, deleted = api_keys.issue(demo, "gone", (None, None), None)
    deleted_record["deleted_at"] = "2026-01-01T00:00:00.000Z"
    plaintexts = {key_digest(active): active, key_digest(deleted): deleted}
    state = tmp_path / "sandbox.sqlite3"
    write_format_1(state, TEST_DEMO_KEY, demo, plaintexts, erased="erased-credential-secret-4e1f")
    assert Path(f"{state}-wal").stat().st_size > 0
    secrets = {
        "erased credential value": "erased-credential-secret-4e1f",
        "demo key": TEST_DEMO_KEY,
        "created key": active,
        "deleted key": deleted,
        "credential value": "demo-gh-Xk29!pass",
        "TOTP secret": "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP",
        "proxy password": "demo-proxy-password-do-not-show",
        "provider token": "ops_" + "demo0token0do0not0show0" * 2,
        "vault item value": "demo-vault-password-do-not-show",
    }
    # The old file: every secret in clear.
    assert {name for hits in exposed(state, secrets).values() for name in hits} == set(secrets)
    github = next(i for i, r in demo.table("credentials").items() if r["name"] == "github-ci")
    expected_code, _ = credentials.totp_code(secrets["TOTP secret"], parse_time(FIXED_MOMENT))

    url, process = sandbox(state)
    try:
        tenant = SandboxTenant(url=url, api_key=TEST_DEMO_KEY)
        for path, tbl in (("/credentials", "credentials"), ("/proxies", "proxies"), ("/vaults", "vaults")):
            live = {
                i
                for i, r in demo.table(tbl).items()
                if not r.get("_deleted") and r["_project"] == demo.default_project_id
            }
            assert live and set(listing(tenant, path)) == live, path
        assert totp_code_at(tenant, github) == expected_code
        assert SandboxTenant(url=url, api_key=active).call("GET", "/org/projects").status_code == 200
        assert SandboxTenant(url=url, api_key=deleted).call("GET", "/org/projects").status_code == 401
    finally:
        stop_sandbox(process)
    with contextlib.closing(sqlite3.connect(state)) as db:
        assert dict(db.execute("SELECT key, value FROM meta"))["version"] == str(store.VERSION)
    assert stat.S_IMODE(store.key_path(state).stat().st_mode) == 0o600
    assert exposed(state, secrets) == {}


def test_it_refuses_a_sealed_row_moved_to_another_place(tmp_path):
    """A row is sealed with its place: one tenant's record copied over another's does not open."""
    from console.sandbox.core.state import Registry

    state = tmp_path / "sandbox.sqlite3"
    registry = Registry()
    mine, theirs = registry.create("sk_" + "a" * 32, demo=True), registry.create("sk_" + "b" * 32)
    saved = store.Store(state)
    saved.save(registry)
    saved.close()
    with contextlib.closing(sqlite3.connect(state)) as db, db:
        (sealed,) = db.execute(
            "SELECT data FROM records WHERE tenant = ? AND tbl = 'projects'", (mine.id,)
        ).fetchone()
        moved = db.execute(
            "UPDATE records SET data = ? WHERE tenant = ? AND tbl = 'projects'", (sealed, theirs.id)
        )
        assert moved.rowcount == 1
    opened = store.Store(state)
    try:
        with pytest.raises(store.StateError, match=r"record projects/.*does not open with the key"):
            opened.load(Registry())
    finally:
        opened.close()


def test_it_finishes_the_rebuild_of_a_migrated_file_after_a_crash(tmp_path, monkeypatch):
    from console.sandbox.core.state import Registry

    state = tmp_path / "sandbox.sqlite3"
    api_key = "sk_" + "c" * 32
    write_format_1(state, api_key, Registry().create(api_key), {}, erased="erased-credential-secret-77d0")
    secrets = {"erased credential value": "erased-credential-secret-77d0"}
    rebuild = store.Store._rebuild

    def crash(db):
        raise KeyboardInterrupt  # the process ends between the migration's commit and the rebuild

    monkeypatch.setattr(store.Store, "_rebuild", staticmethod(crash))
    with pytest.raises(KeyboardInterrupt):
        store.Store(state)
    assert exposed(state, secrets)  # migrated, but the old rows are still in free pages
    monkeypatch.setattr(store.Store, "_rebuild", staticmethod(rebuild))
    registry = Registry()
    opened = store.Store(state)
    try:
        assert opened.load(registry) == 1 and registry.get(api_key) is not None
    finally:
        opened.close()
    assert exposed(state, secrets) == {}
