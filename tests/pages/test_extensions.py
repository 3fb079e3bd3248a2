"""Extensions pages: upload (checked before sending), list, streamed download, delete by id or name."""

import hashlib
import io
import os
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from console.accounts.models import AuditLog
from console.sandbox.resources.extensions import demo_zip

MANIFEST = {"manifest_version": 3, "name": "Test", "version": "1.0"}


def url(path=""):
    return f"/o/acme/extensions/{path}"


def hx(target):
    return {"HX-Request": "true", "HX-Target": target}


def zipped(entries: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def upload_file(content: bytes, filename="ext.zip"):
    return SimpleUploadedFile(filename, content, content_type="application/zip")


def sent_uploads(tenant):
    return [r for r in tenant.requests() if r["method"] == "POST" and r["path"] == "/extensions"]


def seed(tenant, name, content=None):
    content = content or demo_zip(MANIFEST, {"content.js": name})
    files = {"file": ("e.zip", content, "application/zip")}
    return tenant.call("POST", "/extensions", data={"name": name}, files=files).json()


async def test_it_lists_size_checksum_created_and_last_used(viewer_client, tenant):
    record = seed(tenant, "cookie-dismisser")
    tenant.set_clock("2026-05-01T08:00:00Z")
    body = (await viewer_client.get(url())).content.decode()
    assert "cookie-dismisser" in body and record["id"] in body
    assert record["checksum"][:12] in body and record["checksum"] in body
    assert "never" in body
    assert "Upload an extension" not in body
    assert url(f"{record['id']}/download/") in body


async def test_it_serves_the_table_partial_and_searches(viewer_client, tenant):
    seed(tenant, "adblock")
    seed(tenant, "cookies")
    response = await viewer_client.get(url(), {"q": "block"}, headers=hx("extensions-table"))
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="extensions-table"')
    assert "adblock" in body and "cookies" not in body


async def test_it_uploads_a_large_archive_from_a_temp_file_and_audits_it(
    admin_client, tenant, admin, settings
):
    content = demo_zip(MANIFEST, {"blob.bin": os.urandom(3 * 1024 * 1024)})
    assert len(content) > settings.FILE_UPLOAD_MAX_MEMORY_SIZE  # Django spools it to a temporary file
    response = await admin_client.post(url("new/"), {"file": upload_file(content), "name": "big-one"})
    assert response.status_code == 302 and response["Location"] == url()
    stored = tenant.call("GET", "/extensions/big-one/metadata").json()
    assert stored["checksum"] == hashlib.sha256(content).hexdigest()
    assert stored["size_bytes"] == len(content)
    entry = await AuditLog.objects.aget(action="extension.upload")
    assert (entry.target_id, entry.actor_id, entry.outcome) == (stored["id"], admin.pk, "ok")
    assert stored["checksum"] in entry.detail


async def test_it_answers_an_htmx_upload_by_going_to_the_list(admin_client, tenant):
    response = await admin_client.post(
        url("new/"),
        {"file": upload_file(demo_zip(MANIFEST, {})), "name": ""},
        headers=hx("extensions-upload"),
    )
    assert response.status_code == 200 and response["HX-Redirect"] == url()
    assert len(tenant.call("GET", "/extensions").json()) == 1
    assert "uploaded" in (await admin_client.get(url())).content.decode()  # the flash, on the list


async def test_it_creates_from_the_page_heads_button_as_every_list(admin_client, operator_client):
    listed = (await admin_client.get(url())).content.decode()
    assert f'<a class="button primary" href="{url("new/")}">Upload extension</a>' in listed
    assert 'enctype="multipart/form-data"' not in listed  # the form is on its own page
    assert 'id="extensions-upload"' in (await admin_client.get(url("new/"))).content.decode()
    assert url("new/") not in (await operator_client.get(url())).content.decode()
    assert (await operator_client.get(url("new/"))).status_code == 403


@pytest.mark.parametrize("target", ["main", "extensions-table", None])
async def test_it_answers_an_upload_aimed_elsewhere_with_the_whole_page(admin_client, tenant, target):
    # Only the upload form swaps itself; an htmx POST aimed at anything else (a hand-made request, a
    # future button) gets the page with its errors, or the redirect after a success, never a 500.
    headers = hx(target) if target else {"HX-Request": "true"}
    bad = await admin_client.post(url("new/"), {"name": "no-file"}, headers=headers)
    assert bad.status_code == 200
    assert "Upload an extension" in bad.content.decode() and 'id="extensions-upload"' in bad.content.decode()
    assert tenant.requests() == [] or all(r["method"] == "GET" for r in tenant.requests())
    good = await admin_client.post(
        url("new/"), {"file": upload_file(demo_zip(MANIFEST, {}))}, headers=headers
    )
    assert good.status_code == 302 and good["Location"] == url()
    assert len(tenant.call("GET", "/extensions").json()) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"just some text", "not a zip archive"),
        (zipped({"background.js": "x"}), "manifest.json is missing"),
        (zipped({"a/manifest.json": "{}", "b/x.js": ""}), "manifest.json is missing"),
        (zipped({"manifest.json": "{oops"}), "not valid JSON"),
        (zipped({"manifest.json": "[" * 100_000}), "not valid JSON"),
        (zipped({"manifest.json": "{}", "../../evil.js": ""}), "unsafe entry"),
        (zipped({"manifest.json": "{}", "/etc/passwd": ""}), "unsafe entry"),
        (zipped({}), "empty"),
    ],
)
async def test_it_refuses_a_bad_archive_without_sending_it(admin_client, tenant, content, message):
    response = await admin_client.post(
        url("new/"), {"file": upload_file(content)}, headers=hx("extensions-upload")
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    assert "HX-Trigger" not in response
    assert sent_uploads(tenant) == []


async def test_it_accepts_a_manifest_in_a_single_top_folder(admin_client, tenant):
    content = demo_zip(MANIFEST, {"js/a.js": ""}, folder="my-extension")
    response = await admin_client.post(url("new/"), {"file": upload_file(content)})
    assert response.status_code == 302
    assert len(sent_uploads(tenant)) == 1


async def test_it_refuses_an_oversize_file_without_sending_it(admin_client, tenant, settings):
    settings.EXTENSION_MAX_UPLOAD_BYTES = 1024
    content = demo_zip(MANIFEST, {"blob.bin": os.urandom(4096)})
    response = await admin_client.post(url("new/"), {"file": upload_file(content)})
    body = response.content.decode()
    assert response.status_code == 200
    assert "the limit is 1.0\xa0KB" in body
    assert sent_uploads(tenant) == []


async def test_it_refuses_a_missing_file_and_a_bad_name(admin_client, tenant):
    missing = (await admin_client.post(url("new/"), {"name": "x"})).content.decode()
    assert "This field is required" in missing
    bad = await admin_client.post(url("new/"), {"file": upload_file(demo_zip(MANIFEST, {})), "name": "../x"})
    assert "starting with a letter or digit" in bad.content.decode()
    assert sent_uploads(tenant) == []


async def test_it_explains_a_duplicate_name_and_stores_nothing(admin_client, tenant):
    seed(tenant, "taken")
    response = await admin_client.post(
        url("new/"),
        {"file": upload_file(demo_zip(MANIFEST, {"x.js": ""})), "name": "taken"},
        headers=hx("extensions-upload"),
    )
    body = response.content.decode()
    assert "already exists" in body and "Pick another name" in body
    assert len(tenant.call("GET", "/extensions").json()) == 1
    assert await AuditLog.objects.filter(action="extension.upload", outcome="error").aexists()


async def test_it_explains_the_services_own_size_refusal(admin_client, tenant):
    tenant.fault(method="POST", path="^/extensions$", status=413, message="the archive exceeds 5 MiB")
    response = await admin_client.post(url("new/"), {"file": upload_file(demo_zip(MANIFEST, {}))})
    assert "refused the file as too large: the archive exceeds 5 MiB" in response.content.decode()


async def test_it_forbids_viewers_and_operators_to_upload_or_delete(viewer_client, operator_client, tenant):
    record = seed(tenant, "keep")
    for client in (viewer_client, operator_client):
        response = await client.post(url("new/"), {"file": upload_file(demo_zip(MANIFEST, {}))})
        assert response.status_code == 403
        assert (await client.get(url(f"{record['id']}/delete/"))).status_code == 403
        assert (await client.post(url(f"{record['id']}/delete/"))).status_code == 403
    assert len(sent_uploads(tenant)) == 1  # the seed's own upload only
    assert len(tenant.call("GET", "/extensions").json()) == 1


async def test_it_hides_every_extension_page_from_outsiders(outsider_client, tenant):
    record = seed(tenant, "secretive")
    for path in ("", f"{record['id']}/download/", f"{record['id']}/delete/"):
        assert (await outsider_client.get(url(path))).status_code == 404


async def test_it_streams_a_download_by_id_or_name(viewer_client, tenant):
    content = demo_zip(MANIFEST, {"blob.bin": os.urandom(200_000)})
    record = seed(tenant, "blob", content)
    for key in (record["id"], "blob"):
        response = await viewer_client.get(url(f"{key}/download/"))
        assert response.status_code == 200
        assert response.streaming
        assert response["Content-Type"] == "application/zip"
        assert "blob.zip" in response["Content-Disposition"]
        received = b"".join([chunk async for chunk in response.streaming_content])
        assert received == content
    assert (await viewer_client.get(url("ext_nope/download/"))).status_code == 404


async def test_it_confirms_and_deletes_by_id_or_name(admin_client, tenant):
    first = seed(tenant, "first")
    seed(tenant, "second")
    confirm = (await admin_client.get(url("second/delete/"))).content.decode()
    assert "Delete extension “second”?" in confirm and "becomes free" in confirm
    assert tenant.call("GET", "/extensions/second/metadata").status_code == 200
    assert (await admin_client.post(url("second/delete/"))).status_code == 302
    response = await admin_client.post(url(f"{first['id']}/delete/"), headers=hx("extension-delete"))
    assert response["HX-Redirect"] == url()
    assert tenant.call("GET", "/extensions").json() == []
    targets = [e.target_id async for e in AuditLog.objects.filter(action="extension.delete")]
    assert first["id"] in targets and len(targets) == 2
    assert (await admin_client.get(url("second/delete/"))).status_code == 404


async def test_it_shows_the_services_refusal_to_keep_another_extension_on_the_form(admin_client, tenant):
    # The sandbox keeps at most 100 extensions per tenant (SANDBOX_MAX_EXTENSIONS): the 101st is a 403.
    for _ in range(100):
        files = {"file": ("e.zip", demo_zip(MANIFEST, {}), "application/zip")}
        assert tenant.call("POST", "/extensions", files=files).status_code == 201
    response = await admin_client.post(
        url("new/"), {"file": upload_file(demo_zip(MANIFEST, {})), "name": "more"}
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "The service refused to keep another extension" in body and "SANDBOX_MAX_EXTENSIONS" in body
    assert tenant.call("GET", "/extensions", params={"name": "more"}).json() == []
    entry = await AuditLog.objects.aget(action="extension.upload")
    assert entry.outcome == "error"
