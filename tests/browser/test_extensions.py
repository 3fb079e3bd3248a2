"""Uploading an extension in Chromium: a real progress bar while the zip goes up, then the list with the new
row."""

import os
import secrets
import zipfile

import pytest
from playwright.sync_api import expect

from tests.browser.test_processes import UPLOADING

pytestmark = pytest.mark.browser

# Upload bandwidth for the test, so the upload lasts a few seconds and progress events fire mid-way.
UPLOAD_BYTES_PER_SECOND = 1_000_000


def extension_zip(path, size: int) -> None:
    """A real extension archive made big with incompressible random bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", '{"manifest_version": 3, "name": "Big", "version": "1.0"}')
        archive.writestr("assets/blob.bin", os.urandom(size))


def test_it_uploads_with_a_progress_bar_and_shows_the_new_row(team, browser_page, tmp_path):
    page = browser_page
    errors = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    archive = tmp_path / "big-extension.zip"
    extension_zip(archive, 3 * 1024 * 1024)
    name = f"big-ext-{secrets.token_hex(3)}"

    team.log_in(page)
    page.goto(team.url("extensions/"))
    # One place to create, as on every list: the page head's button, to a page of its own.
    page.get_by_role("link", name="Upload extension").click()
    expect(page.get_by_role("heading", name="Upload an extension")).to_be_visible()
    # The heading is parsed before the page's deferred scripts run: a click before them posts the form
    # without JavaScript (no progress bar), as it should. Wait for the page's load event first.
    page.wait_for_load_state("load")

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

    page.get_by_label("Extension archive (.zip)").set_input_files(str(archive))
    page.get_by_label("Name (optional)").fill(name)
    page.get_by_role("button", name="Upload", exact=True).click()

    expect(page.locator("#extension-upload-progress")).to_be_visible()
    page.wait_for_function(UPLOADING, arg=["#extension-upload-status", "#extension-upload-progress"])

    # Kept by the service: the list, with the new row.
    row = page.locator("#extensions-table tr", has_text=name)
    expect(row).to_be_visible(timeout=30_000)
    expect(page).to_have_url(team.url("extensions/"))
    expect(row).to_contain_text("3.0\xa0MB")
    expect(page.locator("#flash")).to_contain_text(f"Extension “{name}” uploaded")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    assert errors == []


def test_it_shows_why_a_file_is_refused_next_to_the_field(team, browser_page, tmp_path):
    page = browser_page
    archive = tmp_path / "not-a-zip.zip"
    archive.write_bytes(b"plain text, not a zip")
    team.log_in(page)
    page.goto(team.url("extensions/new/"))
    page.get_by_label("Extension archive (.zip)").set_input_files(str(archive))
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.locator("#extensions-upload .errorlist")).to_contain_text("not a zip archive")
