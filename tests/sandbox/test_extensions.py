"""Sandbox conformance: extensions (notes §12; spec: Extensions, Extension record)."""

import hashlib
import io
import zipfile

import pytest

from console.sandbox.resources.extensions import demo_zip

MANIFEST = {"manifest_version": 3, "name": "Test", "version": "1.0"}


def raw_zip(entries: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def upload(tenant, content: bytes, name: str | None = None, filename: str = "ext.zip"):
    data = {"name": name} if name is not None else None
    return tenant.call(
        "POST", "/extensions", data=data, files={"file": (filename, content, "application/zip")}
    )


def details(response) -> dict:
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    return {d["code"]: d["message"] for d in body["details"]}


def test_it_stores_an_upload_with_size_and_sha256_checksum(tenant):
    content = demo_zip(MANIFEST, {"content.js": "console.log(1)"})
    response = upload(tenant, content, name="logger")
    assert response.status_code == 201, response.text
    record = response.json()
    assert record["id"].startswith("ext_")
    assert record["name"] == "logger"
    assert record["size_bytes"] == len(content)
    assert record["checksum"] == hashlib.sha256(content).hexdigest()
    assert record["created_at"].endswith("Z")
    assert record["last_used_at"] is None


def test_it_accepts_a_manifest_in_a_single_top_folder_and_no_name(tenant):
    response = upload(tenant, demo_zip(MANIFEST, {"a.js": ""}, folder="my-ext"))
    assert response.status_code == 201
    assert response.json()["name"] is None


def test_it_serves_metadata_and_the_zip_by_id_or_name(tenant):
    content = demo_zip(MANIFEST, {"a.js": "1"})
    record = upload(tenant, content, name="blocker").json()
    for key in (record["id"], "blocker"):
        assert tenant.call("GET", f"/extensions/{key}/metadata").json() == record
        download = tenant.call("GET", f"/extensions/{key}")
        assert download.status_code == 200
        assert download.headers["content-type"] == "application/zip"
        assert "blocker.zip" in download.headers["content-disposition"]
        assert download.content == content


def test_it_refuses_a_duplicate_name_with_409_and_stores_nothing(tenant):
    upload(tenant, demo_zip(MANIFEST, {}), name="dup")
    response = upload(tenant, demo_zip(MANIFEST, {"b.js": ""}), name="dup")
    assert response.status_code == 409
    assert response.json()["code"] == "extension_name_taken"
    assert len(tenant.call("GET", "/extensions").json()) == 1


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "empty"),
        (b"PK\x03\x04 not really a zip", "not a zip"),
        (b"%PDF-1.7 hello", "not a zip"),
        (raw_zip({"background.js": ""}), "manifest.json"),
        (raw_zip({"a/manifest.json": "{}", "b/x.js": ""}), "manifest.json"),
        (raw_zip({"a/b/manifest.json": "{}"}), "manifest.json"),
        (raw_zip({"manifest.json": "{not json"}), "not valid JSON"),
        (raw_zip({"manifest.json": "[1, 2]"}), "JSON object"),
        (raw_zip({"manifest.json": "{}", "../evil.js": ""}), "unsafe"),
        (raw_zip({"manifest.json": "{}", "js/../../evil.js": ""}), "unsafe"),
        (raw_zip({"manifest.json": "{}", "/etc/cron.d/x": ""}), "unsafe"),
        (raw_zip({"manifest.json": "{}", "..\\evil.js": ""}), "unsafe"),
        (raw_zip({"manifest.json": "{}", "C:/evil.js": ""}), "unsafe"),
    ],
)
def test_it_refuses_a_bad_archive_and_stores_nothing(tenant, content, why):
    response = upload(tenant, content, name="bad")
    assert response.status_code == 400
    assert why in details(response)["file"]
    assert tenant.call("GET", "/extensions").json() == []


def test_it_refuses_a_request_without_a_file(tenant):
    response = tenant.call("POST", "/extensions", data={"name": "x"}, files={"other": ("a", b"1")})
    assert response.status_code == 400
    assert "file" in details(response)
    json_body = tenant.call("POST", "/extensions", json={"name": "x"})
    assert json_body.status_code == 400
    assert "file" in details(json_body)


@pytest.mark.parametrize("name", ["   ", "a/b", "../x", "x" * 256])
def test_it_refuses_a_bad_name(tenant, name):
    response = upload(tenant, demo_zip(MANIFEST, {}), name=name)
    assert response.status_code == 400
    assert "name" in details(response)


def test_it_deletes_by_id_or_name_and_frees_the_name(tenant):
    first = upload(tenant, demo_zip(MANIFEST, {}), name="one").json()
    upload(tenant, demo_zip(MANIFEST, {}), name="two")
    assert tenant.call("DELETE", f"/extensions/{first['id']}").status_code == 204
    assert tenant.call("DELETE", "/extensions/two").status_code == 204
    assert tenant.call("GET", "/extensions").json() == []
    assert tenant.call("GET", f"/extensions/{first['id']}/metadata").status_code == 404
    assert tenant.call("GET", "/extensions/two").status_code == 404
    assert tenant.call("DELETE", "/extensions/two").status_code == 404
    assert upload(tenant, demo_zip(MANIFEST, {}), name="one").status_code == 201


def test_it_lists_by_name_and_query_with_paging(tenant):
    for name in ("adblock", "adblock-lite", "cookies"):
        upload(tenant, demo_zip(MANIFEST, {}), name=name)
    listed = tenant.call("GET", "/extensions", params={"name": "adblock"}).json()
    assert [e["name"] for e in listed] == ["adblock"]
    queried = tenant.call("GET", "/extensions", params={"query": "block"}).json()
    assert [e["name"] for e in queried] == ["adblock", "adblock-lite"]
    page = tenant.call("GET", "/extensions", params={"limit": 1, "offset": 1})
    assert [e["name"] for e in page.json()] == ["adblock-lite"]
    assert page.headers["X-Next-Offset"] == "2"


def test_it_scopes_extensions_to_the_project(tenant):
    other = tenant.call("POST", "/org/projects", json={"name": "other"}).json()
    upload(tenant, demo_zip(MANIFEST, {}), name="mine")
    headers = {"X-Kernel-Project": "other"}
    assert tenant.call("GET", "/extensions", headers=headers).json() == []
    assert tenant.call("GET", "/extensions/mine/metadata", headers=headers).status_code == 404
    # Names are unique per project: the other project may reuse it.
    response = tenant.call(
        "POST",
        "/extensions",
        headers={"X-Kernel-Project-Id": other["id"]},
        data={"name": "mine"},
        files={"file": ("e.zip", demo_zip(MANIFEST, {}), "application/zip")},
    )
    assert response.status_code == 201


def test_it_seeds_real_extension_archives(demo_tenant):
    extensions = demo_tenant.call("GET", "/extensions").json()
    assert len(extensions) >= 3
    assert any(e["last_used_at"] for e in extensions)
    for record in extensions:
        content = demo_tenant.call("GET", f"/extensions/{record['id']}").content
        assert hashlib.sha256(content).hexdigest() == record["checksum"]
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            assert any(n.endswith("manifest.json") for n in archive.namelist())


def test_it_answers_from_chrome_store_on_its_own_route_and_says_it_cannot_reach_the_store(tenant):
    url = "https://chromewebstore.google.com/detail/ublock-origin/cjpalhdlnbpafiamejdnhcphjbkeiagm"
    response = tenant.call("GET", "/extensions/from_chrome_store", params={"url": url, "os": "linux"})
    assert response.status_code == 503
    body = response.json()
    assert body["code"] == "chrome_store_unreachable"
    assert "cannot reach the Chrome Web Store" in body["message"]
    assert "was not found" not in body["message"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "url"),
        ({"url": "https://example.com/extension"}, "url"),
        ({"url": "https://chromewebstore.google.com/detail/x/abc", "os": "beos"}, "os"),
    ],
)
def test_it_checks_the_chrome_store_query_first(tenant, params, field):
    response = tenant.call("GET", "/extensions/from_chrome_store", params=params)
    assert response.status_code == 400
    assert field in [d["code"] for d in response.json()["details"]]
