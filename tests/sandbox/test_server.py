"""The sandbox's process: what it logs."""

import os
import subprocess
import sys

import httpx

from tests.sandbox_fixtures import ROOT, free_port, new_tenant, start_sandbox, stop_sandbox, wait_for


def test_it_never_logs_the_tokens_of_live_view_cdp_or_replay_urls():
    port = free_port()
    env = {**os.environ, "SANDBOX_ENGINE": "simulated", "SANDBOX_LOG_LEVEL": "info", "SANDBOX_STATE": ""}
    process = subprocess.Popen(
        [sys.executable, "-m", "console.sandbox", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(f"{url}/_sandbox/health", process)
        httpx.get(f"{url}/_sandbox/live/some-session?jwt=secret-live-token")
        httpx.get(f"{url}/_sandbox/replays/rep_x?token=secret-replay-token")
    finally:
        process.terminate()
        output = process.communicate(timeout=15)[0].decode()
    assert "/_sandbox/live/some-session" in output  # the request is logged...
    assert "secret-live-token" not in output and "secret-replay-token" not in output  # ...not its token


def test_it_falls_back_to_simulated_sessions_without_chromium_and_says_why():
    url, process = start_sandbox(SANDBOX_ENGINE="auto", SANDBOX_CHROMIUM="/nonexistent/chromium")
    try:
        index = httpx.get(url + "/").json()
        assert index["engine"] == "simulated"
        assert "no Chromium at /nonexistent/chromium" in index["engine_reason"]
        tenant = new_tenant(url)
        session = tenant.call("POST", "/browsers", json={"headless": True}).json()
        assert session["sandbox"] == {"engine": "simulated", "browser": "simulated"}
        shot = tenant.call("POST", f"/browsers/{session['session_id']}/computer/screenshot", json={})
        assert shot.status_code == 200 and shot.content[:4] == b"\x89PNG"
    finally:
        stop_sandbox(process)
