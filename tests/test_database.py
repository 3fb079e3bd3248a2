"""The test database plugin (tests/database.py): the suite on a throwaway PostgreSQL cluster."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# An async view whose queries run on the ORM thread, which keeps its connection (CONN_MAX_AGE).
ASYNC_DB_TEST = "tests/accounts/test_members.py::test_it_gives_404_for_a_member_of_another_org"


def test_it_runs_on_postgres_and_drops_the_test_database_after():
    env = {**os.environ, "TEST_DB": "postgres"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", ASYNC_DB_TEST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "database: PostgreSQL" in output
    assert "1 passed" in output
    assert "teardown test databases" not in output
    assert "is being accessed by other users" not in output
