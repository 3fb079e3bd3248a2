"""A client that opens a stream and stops reading it costs the sandbox a bounded amount of memory.

A process's output stream kept, per reader, an unbounded queue of what the command printed: a tenant that
spawned ``head -c 1G /dev/zero`` (or ``yes``) and opened its stream without reading it had the sandbox
hold every byte, base64-encoded, for as long as the stream stayed open (the command's own memory is its
business; this was the sandbox's, shared by every tenant). The command is now held back instead, as a pipe
would hold it: its output is read only as fast as the slowest reader takes it, and nothing is lost.
A file watch's readers are bounded the same way (the poll waits; the next diff covers the wait).
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import httpx
import pytest

from tests.sandbox_fixtures import new_tenant, start_sandbox, stop_sandbox

MiB = 1024 * 1024
OUTPUT = 256 * MiB
# What the sandbox may hold for a reader that does not read: its event stream's own queue (256 frames of
# 64 KiB of output, base64) and the socket's buffers, not the output itself.
BOUND = 96 * MiB
# A watch's: the events of one poll's diff (at most 20 000) and the two snapshots it compares. Unbounded,
# the test's churn made the sandbox grow by about 50 MiB in its 20 seconds.
WATCH_BOUND = 32 * MiB
LONG = 259_200


@pytest.fixture
def own_sandbox():
    """A sandbox of the test's own, so its peak memory is the test's doing."""
    url, process = start_sandbox(SANDBOX_ENGINE="simulated")
    try:
        yield url, process.pid
    finally:
        stop_sandbox(process)


def peak(pid: int) -> int:
    """The process's resident memory at its highest so far (bytes)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_it_holds_a_process_back_rather_than_its_output_for_a_reader_that_does_not_read(own_sandbox):
    url, pid = own_sandbox
    tenant = new_tenant(url)
    sid = tenant.call("POST", "/browsers", json={"timeout_seconds": LONG}).json()["session_id"]
    base = f"/browsers/{sid}/process"
    # It waits for a line on stdin, so the stream is open before the first byte is printed.
    spawned = tenant.call(
        "POST",
        f"{base}/spawn",
        json={"command": "sh", "args": ["-c", f"read go; head -c {OUTPUT} /dev/zero"]},
    )
    assert spawned.status_code == 201, spawned.text
    process_id = spawned.json()["process_id"]
    before = peak(pid)
    stream_url = f"{url}{base}/{process_id}/stdout/stream"
    headers = {"Authorization": f"Bearer {tenant.api_key}"}
    with httpx.stream("GET", stream_url, headers=headers, timeout=120) as stream:
        assert stream.status_code == 200
        go = base64.b64encode(b"go\n").decode()
        assert tenant.call("POST", f"{base}/{process_id}/stdin", json={"data_b64": go}).status_code == 200
        # Not reading: the command prints as fast as it can. Unbounded, the sandbox took in all of it
        # (about 1.4 times the output) within a few seconds; held back, the command waits, running.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and peak(pid) - before <= BOUND:
            status = tenant.call("GET", f"{base}/{process_id}/status").json()
            if status["state"] != "running":
                break
            time.sleep(0.2)
        grew = peak(pid) - before
        received, exit_code = 0, None
        for line in stream.iter_lines():
            if line.startswith("data: "):
                frame = json.loads(line[6:])
                if frame.get("event") == "exit":
                    exit_code = frame["exit_code"]
                    break
                received += len(base64.b64decode(frame["data_b64"]))
    assert grew <= BOUND, f"the sandbox grew by {grew // MiB} MiB for a reader that did not read"
    # Held back, not dropped: every byte arrives once the reader reads, then the exit.
    assert (received, exit_code) == (OUTPUT, 0)


def test_it_pauses_a_watch_rather_than_keep_its_events_for_a_reader_that_does_not_read(own_sandbox):
    url, pid = own_sandbox
    tenant = new_tenant(url)
    sid = tenant.call("POST", "/browsers", json={"timeout_seconds": LONG}).json()["session_id"]
    made = tenant.call("PUT", f"/browsers/{sid}/fs/create_directory", json={"path": "/home/kernel/churn"})
    assert made.status_code in (200, 201, 204), made.text
    watch = tenant.call("POST", f"/browsers/{sid}/fs/watch", json={"path": "/home/kernel/churn"})
    assert watch.status_code == 201, watch.text
    watch_id = watch.json()["watch_id"]
    before = peak(pid)
    headers = {"Authorization": f"Bearer {tenant.api_key}"}
    events_url = f"{url}/browsers/{sid}/fs/watch/{watch_id}/events"
    with httpx.stream("GET", events_url, headers=headers, timeout=60) as stream:
        assert stream.status_code == 200
        # Ten thousand files of long names made and removed over and over: up to 20 000 events a poll,
        # five polls a second, all kept for the reader that does not read when unbounded.
        churn = (
            "cd /home/kernel/churn; n=$(printf '%0200d' 0); while :; do"
            " for i in $(seq 10000); do echo $n$i; done | xargs touch;"
            " for i in $(seq 10000); do echo $n$i; done | xargs rm -f; done"
        )
        spawned = tenant.call(
            "POST", f"/browsers/{sid}/process/spawn", json={"command": "sh", "args": ["-c", churn]}
        )
        assert spawned.status_code == 201, spawned.text
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and peak(pid) - before <= WATCH_BOUND:
            time.sleep(0.2)
        grew = peak(pid) - before
        process_id = spawned.json()["process_id"]
        tenant.call("POST", f"/browsers/{sid}/process/{process_id}/kill", json={"signal": "KILL"})
        # The watch still reports what happens once its reader reads: a file made after the kill, then its
        # removal (the churn may have been killed in either half of its loop, so its own events prove
        # neither kind: one run waited for a DELETE of a churn stopped while touching).
        lines = stream.iter_lines()
        run(tenant, sid, "touch /home/kernel/churn/marker")
        wait_for_event(lines, "CREATE", "marker")
        run(tenant, sid, "rm /home/kernel/churn/marker")
        wait_for_event(lines, "DELETE", "marker")
    assert grew <= WATCH_BOUND, f"the sandbox grew by {grew // MiB} MiB for a reader that did not read"


def run(tenant, sid: str, command: str) -> None:
    """Run a shell command in the session, to its end."""
    ran = tenant.call(
        "POST", f"/browsers/{sid}/process/exec", json={"command": "sh", "args": ["-c", command]}
    )
    assert ran.status_code == 200 and ran.json()["exit_code"] == 0, ran.text


def wait_for_event(lines, kind: str, name: str) -> None:
    """Read a watch's events until one of ``kind`` for the file ``name`` (a state; the test's timeout bounds
    the wait)."""
    for line in lines:
        if line.startswith("data: "):
            event = json.loads(line[6:])
            if event["type"] == kind and event["name"] == name:
                return
    raise AssertionError(f"the watch ended before a {kind} of {name}")
