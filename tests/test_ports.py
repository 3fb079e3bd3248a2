"""The ports the tests' servers take: two runs side by side (two worktrees, a helper beside the lead) must not
reach for the same ones, or one run's sandbox fails to bind ("address already in use") or, worse, a test
talks to the other run's sandbox."""

import os
import subprocess
import sys

from tests.sandbox_fixtures import PORTS_FROM, PORTS_PER_WORKER, ROOT, WORKER_BLOCKS, first_place

FIRST_PORTS = (
    "import os; from tests.sandbox_fixtures import free_port; print(os.getpid(), free_port(), free_port())"
)


def first_ports() -> tuple[int, list[int]]:
    """The first two ports a new test process takes as an xdist worker, and its pid."""
    env = {
        **os.environ,
        "PYTEST_XDIST_WORKER": f"gw{WORKER_BLOCKS - 1}",
    }  # a block no worker of this run uses
    command = [sys.executable, "-c", FIRST_PORTS]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    pid, *ports = map(int, out.stdout.split())
    return pid, ports


def test_two_runs_side_by_side_take_different_ports_of_the_same_workers_block():
    one, two = first_ports(), first_ports()
    # Two pids whose places are within two ports of each other (one pair in 333) would share one by design.
    while (
        min(apart := (first_place(one[0]) - first_place(two[0])) % PORTS_PER_WORKER, PORTS_PER_WORKER - apart)
        < 2
    ):
        two = first_ports()
    start = PORTS_FROM + (WORKER_BLOCKS - 1) * PORTS_PER_WORKER
    block = range(start, start + PORTS_PER_WORKER)
    assert all(port in block for port in one[1] + two[1])
    assert not set(one[1]) & set(two[1]), (one, two)
    assert one[1][1] != one[1][0]  # a run goes on through its block
