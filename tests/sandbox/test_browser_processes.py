"""Sandbox conformance: a session's processes (notes §5): exec, spawn with its live output stream and
exit code, stdin, kill with a signal, status, a TTY, and real execution turned off."""

import base64
import json
import os
import uuid
from pathlib import Path

import httpx
import pytest

from tests.sandbox_fixtures import new_tenant, process_exited, running_sandbox

LONG = 259_200
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def session(tenant):
    response = tenant.call("POST", "/browsers", json={"name": "procs", "timeout_seconds": LONG})
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def proc(tenant, session, method, op, **kwargs):
    return tenant.call(method, f"/browsers/{session}/process/{op}", **kwargs)


def spawn(tenant, session, command, *args, **body):
    response = proc(tenant, session, "POST", "spawn", json={"command": command, "args": list(args), **body})
    assert response.status_code in (200, 201), response.text
    return response.json()


def read_stream(tenant, session, process_id, timeout=15.0, on_open=None):
    """Every frame of the output stream until it ends (decoded JSON)."""
    url = f"{tenant.url}/browsers/{session}/process/{process_id}/stdout/stream"
    frames = []
    with httpx.stream(
        "GET", url, headers={"Authorization": f"Bearer {tenant.api_key}"}, timeout=timeout
    ) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        if on_open:
            on_open()
        for line in r.iter_lines():
            assert not line.startswith("id:"), "the process stream has no ids"
            if line.startswith("data: "):
                frames.append(json.loads(line[6:]))
    return frames


def output(frames, stream="stdout"):
    return b"".join(base64.b64decode(f["data_b64"]) for f in frames if f.get("stream") == stream)


def details(response):
    return {d["code"]: d["message"] for d in response.json()["details"]}


def test_it_execs_a_command_and_returns_its_output(tenant, session):
    response = proc(
        tenant,
        session,
        "POST",
        "exec",
        json={"command": "sh", "args": ["-c", "echo out; echo err >&2; exit 3"]},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["exit_code"] == 3
    assert base64.b64decode(body["stdout_b64"]) == b"out\n"
    assert base64.b64decode(body["stderr_b64"]) == b"err\n"
    assert isinstance(body["duration_ms"], int)


def test_it_runs_commands_inside_the_sessions_home(tenant, session):
    tenant.call(
        "PUT", f"/browsers/{session}/fs/write_file", params={"path": "/home/kernel/hello.txt"}, content=b"hi"
    )
    body = proc(tenant, session, "POST", "exec", json={"command": "cat", "args": ["hello.txt"]}).json()
    assert base64.b64decode(body["stdout_b64"]) == b"hi"
    env = proc(
        tenant,
        session,
        "POST",
        "exec",
        json={"command": "sh", "args": ["-c", "echo $GREETING"], "env": {"GREETING": "hej"}},
    ).json()
    assert base64.b64decode(env["stdout_b64"]) == b"hej\n"
    made = proc(
        tenant, session, "POST", "exec", json={"command": "touch", "args": ["made-here"], "cwd": "/tmp"}
    ).json()
    assert made["exit_code"] == 0
    listed = tenant.call("GET", f"/browsers/{session}/fs/list_files", params={"path": "/tmp"}).json()
    assert "made-here" in [f["name"] for f in listed]


def test_it_times_out_an_exec(tenant, session):
    body = proc(
        tenant, session, "POST", "exec", json={"command": "sleep", "args": ["30"], "timeout_sec": 0.3}
    ).json()
    assert body["exit_code"] == 124
    assert b"timed out" in base64.b64decode(body["stderr_b64"])


def test_it_explains_a_bad_command(tenant, session):
    missing = proc(tenant, session, "POST", "exec", json={"command": "no-such-program-xyz"})
    assert missing.status_code == 400 and "command" in details(missing)
    empty = proc(tenant, session, "POST", "exec", json={"args": ["x"]})
    assert empty.status_code == 400 and "command" in details(empty)
    bad_cwd = proc(tenant, session, "POST", "exec", json={"command": "true", "cwd": "/../etc"})
    assert bad_cwd.status_code == 400 and "cwd" in details(bad_cwd)
    bad_args = proc(tenant, session, "POST", "exec", json={"command": "true", "args": "x"})
    assert bad_args.status_code == 400 and "args" in details(bad_args)


def test_it_spawns_and_streams_stdout_and_stderr_then_the_exit_code(tenant, session):
    started = spawn(tenant, session, "sh", "-c", "echo one; echo two >&2; sleep 0.2; echo three; exit 7")
    assert len(started["process_id"]) == 36 and started["pid"] > 0 and started["started_at"].endswith("Z")
    frames = read_stream(tenant, session, started["process_id"])
    assert output(frames) == b"one\nthree\n"
    assert output(frames, "stderr") == b"two\n"
    assert frames[-1] == {"event": "exit", "exit_code": 7}
    status = proc(tenant, session, "GET", f"{started['process_id']}/status").json()
    assert status == {"state": "exited", "exit_code": 7}


def test_it_holds_output_for_a_stream_opened_after_the_process_finished(tenant, session):
    started = spawn(tenant, session, "echo", "early bird")
    assert process_exited(tenant, session, started["process_id"]) == {"state": "exited", "exit_code": 0}
    frames = read_stream(tenant, session, started["process_id"])
    assert output(frames) == b"early bird\n" and frames[-1] == {"event": "exit", "exit_code": 0}
    # After the exit, every new stream gets the whole output again, then the exit event.
    assert read_stream(tenant, session, started["process_id"]) == frames


def test_it_feeds_stdin(tenant, session):
    started = spawn(tenant, session, "head", "-n", "1")
    pid = started["process_id"]

    def send():
        data = base64.b64encode(b"typed line\n").decode()
        response = proc(tenant, session, "POST", f"{pid}/stdin", json={"data_b64": data})
        assert response.json() == {"written_bytes": 11}

    frames = read_stream(tenant, session, pid, on_open=send)
    assert output(frames) == b"typed line\n" and frames[-1]["exit_code"] == 0
    late = proc(tenant, session, "POST", f"{pid}/stdin", json={"data_b64": "eA=="})
    assert late.status_code == 409 and late.json()["code"] == "process_exited"
    bad = proc(tenant, session, "POST", f"{pid}/stdin", json={"data_b64": "***"})
    assert bad.status_code == 400 and "data_b64" in details(bad)


@pytest.mark.parametrize(("signal", "code"), [("TERM", 143), ("KILL", 137), ("INT", 130)])
def test_it_kills_with_the_chosen_signal(tenant, session, signal, code):
    started = spawn(tenant, session, "sleep", "60")
    pid = started["process_id"]
    running = proc(tenant, session, "GET", f"{pid}/status").json()
    assert running["state"] == "running" and running["mem_bytes"] > 0 and running["cpu_pct"] >= 0
    assert proc(tenant, session, "POST", f"{pid}/kill", json={"signal": signal}).json() == {"ok": True}
    frames = read_stream(tenant, session, pid)
    assert frames[-1] == {"event": "exit", "exit_code": code}
    again = proc(tenant, session, "POST", f"{pid}/kill", json={"signal": "KILL"})
    assert again.status_code == 409


def test_it_kills_the_whole_process_group(tenant, session):
    started = spawn(tenant, session, "sh", "-c", "sleep 60 & sleep 60; echo never")
    pid = started["process_id"]
    proc(tenant, session, "POST", f"{pid}/kill", json={"signal": "TERM"})
    frames = read_stream(tenant, session, pid, timeout=5)
    assert frames[-1]["event"] == "exit" and b"never" not in output(frames)


def test_it_refuses_an_unknown_signal_and_an_unknown_process(tenant, session):
    started = spawn(tenant, session, "sleep", "5")
    bad = proc(tenant, session, "POST", f"{started['process_id']}/kill", json={"signal": "STOP"})
    assert bad.status_code == 400 and "signal" in details(bad)
    proc(tenant, session, "POST", f"{started['process_id']}/kill", json={"signal": "KILL"})
    missing = proc(tenant, session, "GET", "00000000-0000-0000-0000-000000000000/status")
    assert missing.status_code == 404 and missing.json()["code"] == "process_not_found"


def test_it_gives_a_tty_when_asked_and_resizes_it(tenant, session):
    started = spawn(
        tenant,
        session,
        "sh",
        "-c",
        # It asks its size only once a line arrives, and the line is sent after the resize.
        "test -t 1 && echo tty; read go; stty size",
        allocate_tty=True,
        cols=100,
        rows=30,
    )
    pid = started["process_id"]
    resized = proc(tenant, session, "POST", f"{pid}/resize", json={"cols": 120, "rows": 40})
    assert resized.json() == {"ok": True}
    line = proc(
        tenant, session, "POST", f"{pid}/stdin", json={"data_b64": base64.b64encode(b"go\n").decode()}
    )
    assert line.json() == {"written_bytes": 3}
    frames = read_stream(tenant, session, pid)
    text = output(frames).replace(b"\r", b"")
    assert b"tty\n" in text and b"40 120" in text
    plain = spawn(tenant, session, "sleep", "5")
    refused = proc(tenant, session, "POST", f"{plain['process_id']}/resize", json={"cols": 80, "rows": 24})
    assert refused.status_code == 400
    proc(tenant, session, "POST", f"{plain['process_id']}/kill", json={"signal": "KILL"})


def test_it_kills_processes_when_the_session_ends(tenant, session):
    started = spawn(tenant, session, "sleep", "60")
    tenant.call("DELETE", f"/browsers/{session}")
    other = tenant.call("POST", "/browsers", json={"timeout_seconds": LONG}).json()["session_id"]
    assert proc(tenant, other, "GET", f"{started['process_id']}/status").status_code == 404


def test_it_refuses_commands_when_execution_is_turned_off(tenant, session):
    tenant.control("POST", "settings", {"exec_enabled": False})
    for op, body in (("exec", {"command": "true"}), ("spawn", {"command": "true"})):
        response = proc(tenant, session, "POST", op, json=body)
        assert response.status_code == 403
        assert response.json()["code"] == "exec_disabled" and "exec_enabled" in response.json()["message"]
    tenant.control("POST", "settings", {"exec_enabled": True})
    assert proc(tenant, session, "POST", "exec", json={"command": "true"}).status_code == 200


def run(tenant, session, script, **body):
    """exec ``sh -c script``: (exit code, stdout, stderr)."""
    response = proc(tenant, session, "POST", "exec", json={"command": "sh", "args": ["-c", script], **body})
    assert response.status_code == 200, response.text
    reply = response.json()
    return reply["exit_code"], base64.b64decode(reply["stdout_b64"]), base64.b64decode(reply["stderr_b64"])


def host_uids(pid: int) -> set[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return {int(uid) for uid in line.split()[1:]}
    raise AssertionError(f"no Uid line for {pid}")


def test_it_never_runs_a_command_as_root_or_as_the_owner_of_the_consoles_files(tenant, session):
    code, out, _ = run(tenant, session, "id -u; grep CapEff /proc/self/status")
    assert code == 0 and out.split()[0] != b"0"
    assert out.split()[-1] == b"0000000000000000", "no capability inside"
    started = spawn(tenant, session, "sleep", "30", as_root=True)
    try:
        uids = host_uids(started["pid"])
        assert 0 not in uids
        owner = (ROOT / "manage.py").stat().st_uid
        if os.geteuid() == 0:  # a root sandbox drops to its own identity, never the console's
            assert owner not in uids
    finally:
        proc(tenant, session, "POST", f"{started['process_id']}/kill", json={"signal": "KILL"})


def test_it_keeps_the_consoles_tree_database_and_root_out_of_reach(tenant, session):
    for path in (ROOT / "manage.py", ROOT / "console" / "settings.py", ROOT, Path("/root"), Path("/work")):
        code, out, _ = run(tenant, session, f"cat '{path}' || ls -A '{path}'")
        assert code != 0 and out == b"", f"{path} is readable from a session"
    code, out, _ = run(tenant, session, "ls /proc | grep -c '^[0-9]'")
    assert code == 0 and int(out) < 5, "only the session's own processes are visible"


def test_it_writes_only_inside_the_sessions_directory(tenant, session):
    name = f"escape-{uuid.uuid4().hex}.txt"
    for target in (ROOT / name, Path("/usr") / name, Path("/etc") / name):
        code, _, _ = run(tenant, session, f"mkdir -p '{target.parent}' && echo owned > '{target}'")
        assert not target.exists(), f"a session wrote {target} on the host"
        if code == 0:  # it landed in the session's own tree, where the files API sees it
            listed = tenant.call("GET", f"/browsers/{session}/fs/read_file", params={"path": str(target)})
            assert listed.status_code == 200 and listed.content == b"owned\n"


def test_it_shares_the_sessions_files_between_processes_and_the_files_api(tenant, session):
    wrote = tenant.call(
        "PUT", f"/browsers/{session}/fs/write_file", params={"path": "/home/kernel/notes/a.txt"}, content=b"a"
    )
    assert wrote.status_code in (200, 201, 204), wrote.text
    code, out, err = run(
        tenant,
        session,
        "cat /home/kernel/notes/a.txt && echo b >> /home/kernel/notes/a.txt "
        "&& echo c > /home/kernel/notes/c.txt && pwd && echo $HOME",
    )
    assert (code, out) == (0, b"a/home/kernel\n/home/kernel\n"), err
    read = tenant.call(
        "GET", f"/browsers/{session}/fs/read_file", params={"path": "/home/kernel/notes/a.txt"}
    )
    assert read.content == b"ab\n"
    made = tenant.call(
        "GET", f"/browsers/{session}/fs/read_file", params={"path": "/home/kernel/notes/c.txt"}
    )
    assert made.content == b"c\n"


def test_it_refuses_to_run_anything_when_the_confinement_is_unavailable(tmp_path):
    marker = tmp_path / "ran"
    # Commands are confined whatever the engine: the simulated one spares this test a Chromium launch.
    with running_sandbox(SANDBOX_BWRAP=str(tmp_path / "no-such-bwrap"), SANDBOX_ENGINE="simulated") as url:
        assert httpx.get(url + "/").json()["browsers"]["confinement"].startswith("none: bubblewrap (bwrap)")
        tenant = new_tenant(url)
        session = tenant.call("POST", "/browsers", json={"timeout_seconds": LONG}).json()["session_id"]
        for op in ("exec", "spawn"):
            response = proc(tenant, session, "POST", op, json={"command": "touch", "args": [str(marker)]})
            assert response.status_code == 503, response.text
            assert response.json()["code"] == "exec_unavailable"
            assert "bubblewrap" in response.json()["message"]
    assert not marker.exists()
