"""In Chromium: run a process from the session page and see its output arrive live; feed it, watch it
exit; upload a zip into the session with a progress bar."""

import os
import re
import zipfile

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import watch_errors

pytestmark = pytest.mark.browser

UPLOAD_BYTES_PER_SECOND = 1_000_000


def new_session(team, name: str) -> str:
    return team.call("POST", "/browsers", {"name": name, "timeout_seconds": 3600, "headless": True})[
        "session_id"
    ]


# True once the status (the first selector) says "Uploading… N% (…)" with 0 < N < 100 and the bar (the second)
# shows N: both read in one step in the page, while the throttled upload runs. Read one after the other, the
# upload could end between the two reads (the bar at 100, or the form replaced by the answer).
UPLOADING = """([status, bar]) => {
    const said = /^Uploading… ([1-9]|[1-9][0-9])% \\(/.exec(document.querySelector(status)?.textContent);
    const progress = document.querySelector(bar);
    return Boolean(said) && !progress.hidden && progress.value === Number(said[1]);
}"""


def test_it_runs_a_process_and_shows_its_output_live(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    session_id = new_session(team, f"procs-{os.getpid()}")
    team.log_in(page, "operator")

    page.goto(team.url(f"browsers/{session_id}/"))
    # The pane is a tab of the session page: opened by its link (htmx), its script set up then.
    page.get_by_role("navigation", name="Session").get_by_role("link", name="Processes").click()
    pane = page.locator("#processes-pane")
    command = pane.get_by_label("Command").first
    expect(command).to_be_visible(timeout=10_000)  # the pane loaded when its tab opened
    # The process prints, then waits for a line on stdin: what shows up must have come live.
    script = 'printf "\\033[32mready\\033[0m\\n"; echo "<oops>" >&2; read line; echo "got $line"; exit 3'
    command.fill(f"sh -c '{script}'")
    pane.get_by_role("button", name="Run", exact=True).click()

    page.wait_for_url(re.compile(r".*/processes/[0-9a-f-]{36}/$"), timeout=10_000)
    output = page.locator("#process-output")
    expect(output).to_contain_text("ready", timeout=10_000)
    expect(output.locator(".ansi-fg-2")).to_have_text("ready")  # the colour code became a class
    expect(output.locator(".out--stderr")).to_contain_text("<oops>")  # escaped, shown as text
    expect(page.locator("#process-status [data-state]")).to_have_text("running")
    expect(page.locator(".process-output .live-indicator")).to_contain_text("Live")

    page.get_by_label("Send to standard input").fill("hello there")
    page.get_by_role("button", name="Send").click()
    expect(output).to_contain_text("got hello there", timeout=10_000)
    expect(page.locator("[data-exit]")).to_contain_text("Exited with code 3")
    # Nothing reads standard input any more: its form is gone, and the page says why.
    expect(page.locator("#process-stdin")).to_have_count(0)
    expect(page.get_by_text("its standard input is closed")).to_be_visible()
    expect(page.locator("#process-status [data-state]")).to_have_text("exited", timeout=10_000)
    expect(page.locator(".process-output .live-indicator")).to_contain_text("Ended")

    # Hiding standard error hides only it.
    page.get_by_label("Show standard error").uncheck()
    expect(output.locator(".out--stderr").first).to_be_hidden()
    expect(output).to_contain_text("got hello there")

    # A viewer opening the process later sees the output so far, replayed by the console.
    page.reload()
    expect(page.locator("#process-output")).to_contain_text("got hello there", timeout=10_000)
    assert errors == []


def test_it_uploads_a_zip_with_a_progress_bar_and_lists_what_it_held(team, browser_page, tmp_path):
    page = browser_page
    errors = watch_errors(page)
    session_id = new_session(team, f"files-{os.getpid()}")
    archive = tmp_path / "assets.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as bundle:
        bundle.writestr("assets/blob.bin", os.urandom(3 * 1024 * 1024))
        bundle.writestr("assets/readme.txt", "hello")
    team.log_in(page, "operator")
    page.goto(team.url(f"browsers/{session_id}/files/?path=/home/kernel/Downloads"))

    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {
            "offline": False,
            "latency": 0,
            "downloadThroughput": -1,
            "uploadThroughput": UPLOAD_BYTES_PER_SECOND,
        },
    )
    form = page.locator("form", has_text="Upload a zip and extract it")
    form.get_by_label("Zip archive").set_input_files(str(archive))
    form.get_by_label("Extract into").fill("/home/kernel/Downloads/unpacked")
    form.get_by_role("button", name="Upload and extract").click()

    expect(form.locator("[data-upload-bar]")).to_be_visible()
    zipped = 'form[action$="/files/upload-zip/"]'
    page.wait_for_function(UPLOADING, arg=[f"{zipped} [data-upload-status]", f"{zipped} [data-upload-bar]"])

    listing = page.locator("#files-pane")
    expect(listing.locator(".path-crumbs")).to_contain_text("unpacked", timeout=30_000)
    expect(listing.get_by_role("link", name="assets/")).to_be_visible()
    expect(page.locator("#flash")).to_contain_text(
        "Extracted assets.zip into /home/kernel/Downloads/unpacked"
    )
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    assert errors == []


def test_it_drives_the_computer_pane_and_marks_a_batch_row(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    session_id = new_session(team, f"computer-{os.getpid()}")
    team.log_in(page, "operator")
    page.goto(team.url(f"browsers/{session_id}/"))
    # The pane is a tab of the session page: opened by its link (htmx), its script set up then.
    page.get_by_role("navigation", name="Session").get_by_role("link", name="Computer").click()
    pane = page.locator("#computer-pane")
    screen = pane.locator("img[data-screen]")
    expect(screen).to_be_visible(timeout=10_000)
    page.wait_for_function("img => img.complete && img.naturalWidth === 640", arg=screen.element_handle())

    # One click from its form: the pane comes back with the pointer where the click was.
    click = pane.locator("form[data-action=click]")
    click.get_by_label("x").fill("300")
    click.get_by_label("y").fill("200")
    click.get_by_role("button", name="Click").click()
    expect(page.locator("#computer-pane [data-done]")).to_have_text("Left click at (300, 200).")
    expect(page.locator("#computer-pane [data-pointer]")).to_contain_text("(300, 200)")

    # The batch builder: rows added by computer.js, inputs shown per action, sent as one batch.
    batch = page.locator("#computer-pane form[data-batch]")
    rows = batch.locator("[data-batch-row]")
    expect(rows).to_have_count(3)
    batch.get_by_role("button", name="Add a row").click()
    expect(rows).to_have_count(4)
    rows.nth(0).get_by_label("Action 1", exact=True).select_option("move_mouse")
    expect(rows.nth(0).get_by_label("Text to type in action 1")).to_be_hidden()
    rows.nth(0).get_by_label("x of action 1").fill("10")
    rows.nth(0).get_by_label("y of action 1").fill("20")
    rows.nth(1).get_by_label("Action 2", exact=True).select_option("press_key")
    rows.nth(1).get_by_label("Keys of action 2").fill("Ctrl+l Return")
    rows.nth(3).get_by_label("Action 4", exact=True).select_option("type_text")
    rows.nth(3).get_by_label("Text to type in action 4").fill("headphones")
    batch.get_by_role("button", name="Run the batch").click()
    expect(page.locator("#computer-pane [data-done]")).to_have_text("Ran 3 actions in order.")
    expect(page.locator("#computer-pane [data-pointer]")).to_contain_text("(10, 20)")
    assert errors == []
