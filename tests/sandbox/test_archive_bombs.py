"""Archives the sandbox opens itself, bounded by what they declare. An extension archive is unpacked (as root,
onto its own disk) when a session with the extension starts: what it may unpack is bounded at upload, like
the files API's ``upload_zip``. An app's entrypoint is read whole into memory by its build."""

import io
import json
import zipfile

import pytest

from console.sandbox.resources import extensions
from tests.sandbox.test_deployments import build_failure

MiB = 1024 * 1024
MANIFEST = json.dumps({"manifest_version": 3, "name": "Bomb", "version": "1.0"})


def bomb(padding_mib: int) -> bytes:
    """A valid extension plus ``padding_mib`` MiB of zeros, about a thousandth of that on the wire."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", MANIFEST)
        with archive.open("pad.bin", "w", force_zip64=True) as pad:
            block = b"\0" * MiB
            for _ in range(padding_mib):
                pad.write(block)
    return buffer.getvalue()


def many_entries(count: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("manifest.json", MANIFEST)
        for n in range(count):
            archive.writestr(f"f/{n}", b"")
    return buffer.getvalue()


def upload(tenant, content: bytes):
    return tenant.call("POST", "/extensions", files={"file": ("ext.zip", content, "application/zip")})


def test_it_refuses_an_extension_that_unpacks_past_the_extraction_limit(tenant):
    content = bomb(extensions.MAX_EXTRACT_BYTES // MiB + 1)
    assert len(content) < MiB  # the upload limit (100 MiB) never saw it
    response = upload(tenant, content)
    assert response.status_code == 400, response.text
    assert "extract" in response.json()["message"]
    assert tenant.call("GET", "/extensions").json() == []


def test_it_refuses_an_extension_of_more_entries_than_the_files_api_unpacks(tenant):
    response = upload(tenant, many_entries(extensions.MAX_ENTRIES))
    assert response.status_code == 400, response.text
    assert "entries" in response.json()["message"]


def test_it_still_takes_an_extension_within_the_limits(tenant):
    response = upload(tenant, bomb(2))
    assert response.status_code == 201, response.text


def test_it_never_unpacks_a_stored_archive_past_the_limit():
    """An archive stored before the bound (a state file of an older sandbox) is not unpacked at start."""
    with pytest.raises(extensions.BadArchive):
        extensions.validate_archive(bomb(extensions.MAX_EXTRACT_BYTES // MiB + 1))


def test_it_never_reads_an_apps_entrypoint_past_what_a_build_reads(tenant):
    """The build reads the entrypoint whole into memory: one declared past the bound fails the deployment
    (a 200 MiB upload of one compressed file could declare 200 GiB)."""
    from console.sandbox.resources import deployments

    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("main.py", "w", force_zip64=True) as source,
    ):
        source.write(b'from kernel import App\n\napp = App("bomb")\n')
        for _ in range(deployments.MAX_SOURCE_BYTES // MiB + 1):
            source.write(b"#" * MiB)
    assert "larger than" in build_failure(tenant, buffer.getvalue())
