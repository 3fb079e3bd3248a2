"""The servers' output shown with a failed test (tests/server_logs.py): what each wrote while it ran."""

import subprocess
import sys

from tests import server_logs


def test_it_gives_what_a_server_wrote_after_a_point_and_only_that():
    def run(text: str) -> None:
        with server_logs.open_log("probe") as log:
            subprocess.run([sys.executable, "-c", f"print({text!r})"], stdout=log, stderr=log, check=True)

    run("before the test")
    start = server_logs.sizes()
    run("during the test")
    written = [text for name, text in server_logs.written_since(start) if name.endswith("-probe")]
    assert written == ["during the test"]  # the earlier server's log is a file of its own, untouched since
    assert server_logs.written_since(server_logs.sizes()) == []
