"""What a session's commands can make the sandbox (root) do with host paths: nothing outside the session.

A session's log stream of a file (``logs/stream?source=path``) re-reads the file on every poll while it
follows. A command of the session owns the file and can swap it at any moment, for a symlink to a host
file (which the sandbox, root, can read) or a FIFO (whose open waits for a writer, on the sandbox's event
loop): neither may be followed or waited on. A command's ``PATH`` may not make the sandbox look for a
program in host folders outside the system's.
"""

from __future__ import annotations

import json
import secrets
import time

import httpx
import pytest

SECRET = "host-secret-" + secrets.token_hex(8)


def session(tenant) -> str:
    response = tenant.call("POST", "/browsers", json={"timeout_seconds": 600})
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def run(tenant, sid: str, script: str) -> dict:
    response = tenant.call(
        "POST", f"/browsers/{sid}/process/exec", json={"command": "sh", "args": ["-c", script]}
    )
    if response.status_code == 503:
        pytest.skip(response.json()["message"])
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def host_secret(tmp_path):
    """A file of the host only root reads."""
    path = tmp_path / "secret.txt"
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    return path


def follow_while(tenant, sid: str, swap: str, seconds: float = 5.0) -> list[str]:
    """Follow /tmp/app.log, run ``swap`` once the stream is open, and gather the lines read for at most
    ``seconds`` (the stream polls every 0.2 s) or until the stream ends."""
    messages: list[str] = []
    url = f"{tenant.url}/browsers/{sid}/logs/stream"
    params = {"source": "path", "path": "/tmp/app.log", "follow": "true"}
    headers = {"Authorization": f"Bearer {tenant.api_key}"}
    with httpx.stream("GET", url, params=params, headers=headers, timeout=10) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        run(tenant, sid, swap)
        deadline = time.monotonic() + seconds
        try:
            for line in lines:
                if line.startswith("data: "):
                    messages.append(json.loads(line[6:])["message"])
                if SECRET in messages or time.monotonic() > deadline:
                    break
        except httpx.ReadTimeout:
            pass
    return messages


def test_it_never_follows_a_log_file_swapped_for_a_link_to_the_host(tenant, host_secret):
    sid = session(tenant)
    run(tenant, sid, "printf 'first\\n' > /tmp/app.log")
    # The secret's single line is read from offset 0 of the new file: the log was empty when swapped.
    run(tenant, sid, ": > /tmp/app.log")
    read = follow_while(tenant, sid, f"rm /tmp/app.log && ln -s {host_secret} /tmp/app.log")
    assert SECRET not in read, "the log stream read a host file through the session's symlink"


def test_it_never_waits_on_a_fifo_in_the_log_files_place(tenant):
    sid = session(tenant)
    run(tenant, sid, ": > /tmp/app.log")
    follow_while(tenant, sid, "rm /tmp/app.log && mkfifo /tmp/app.log", seconds=2.0)
    # The sandbox still answers: its event loop never blocked opening the FIFO.
    assert httpx.get(f"{tenant.url}/_sandbox/health", timeout=5).status_code == 200


def test_it_streams_a_log_file_larger_than_one_read_line_by_line(tenant):
    sid = session(tenant)
    lines = [f"{n:05d}-" + "x" * 994 for n in range(3000)]  # 3 MB: three reads of 1 MiB
    body = ("\n".join(lines) + "\ntail without newline").encode()
    put = tenant.call(
        "PUT",
        f"/browsers/{sid}/fs/write_file",
        params={"path": "/tmp/big.log"},
        content=body,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert put.status_code == 204, put.text
    response = tenant.call(
        "GET", f"/browsers/{sid}/logs/stream", params={"source": "path", "path": "/tmp/big.log"}
    )
    read = [
        json.loads(line[6:])["message"] for line in response.text.splitlines() if line.startswith("data: ")
    ]
    assert read == [*lines, "tail without newline"]


def test_it_tells_nothing_of_the_hosts_folders_through_a_commands_path(tenant, tmp_path):
    """The "command not found" check looks at the host's system folders only: a PATH that climbs out of
    them (``/usr/../<folder>``) is left to the confined command, whether the program exists there or not."""
    sid = session(tenant)
    program = tmp_path / "only-on-the-host"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o700)
    path = f"/usr/..{tmp_path}"

    def answer(name: str) -> int:
        response = tenant.call(
            "POST", f"/browsers/{sid}/process/exec", json={"command": name, "env": {"PATH": path}}
        )
        if response.status_code == 503:
            pytest.skip(response.json()["message"])
        return response.status_code

    assert answer("only-on-the-host") == answer("not-on-the-host-either")
