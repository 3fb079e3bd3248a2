"""What one tenant may store (``console/sandbox/core/quotas.py``): extensions by count and bytes, profiles and
credentials by count. A tenant uploaded any number of 100 MiB extensions, each kept in memory and in the
state file; past a bound the create is 403 ``insufficient_plan`` and nothing is stored."""

import io
import os
import zipfile

import pytest

from tests.sandbox_fixtures import new_tenant, running_sandbox

MANIFEST = '{"manifest_version": 3, "name": "Quota", "version": "1.0"}'
EXTENSION_BYTES = 100_000


@pytest.fixture(scope="module")
def bounded_url():
    settings = {
        "SANDBOX_MAX_EXTENSIONS": "3",
        "SANDBOX_MAX_EXTENSION_BYTES": str(EXTENSION_BYTES),
        "SANDBOX_MAX_PROFILES": "2",
        "SANDBOX_MAX_CREDENTIALS": "2",
    }
    with running_sandbox(SANDBOX_ENGINE="simulated", **settings) as url:
        yield url


def archive(padding: int = 0) -> bytes:
    """An extension zip of about ``padding`` bytes more than its manifest (stored, random: incompressible)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as zipped:
        zipped.writestr("manifest.json", MANIFEST)
        if padding:
            zipped.writestr("blob.bin", os.urandom(padding))
    return buffer.getvalue()


def upload(tenant, content: bytes):
    return tenant.call("POST", "/extensions", files={"file": ("ext.zip", content, "application/zip")})


def refused(response) -> str:
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["code"] == "insufficient_plan"
    return body["message"]


def test_it_refuses_an_extension_past_the_tenants_count_and_frees_a_place_on_delete(bounded_url):
    tenant, other = new_tenant(bounded_url), new_tenant(bounded_url)
    ids = [upload(tenant, archive()).json()["id"] for _ in range(3)]
    message = refused(upload(tenant, archive()))
    assert "at most 3 extensions" in message and "SANDBOX_MAX_EXTENSIONS" in message
    assert len(tenant.call("GET", "/extensions", params={"limit": 100}).json()) == 3  # nothing stored
    assert upload(other, archive()).status_code == 201  # each tenant has its own bound
    assert tenant.call("DELETE", f"/extensions/{ids[0]}").status_code == 204
    assert upload(tenant, archive()).status_code == 201


def test_it_refuses_an_extension_past_the_tenants_bytes(bounded_url):
    tenant = new_tenant(bounded_url)
    big = archive(40_000)
    first = upload(tenant, big).json()
    assert upload(tenant, big).status_code == 201
    assert 2 * first["size_bytes"] <= EXTENSION_BYTES < 3 * first["size_bytes"]
    message = refused(upload(tenant, big))
    assert "SANDBOX_MAX_EXTENSION_BYTES" in message
    assert len(tenant.call("GET", "/extensions").json()) == 2
    assert upload(tenant, archive()).status_code == 201  # a small one still fits
    assert tenant.call("DELETE", f"/extensions/{first['id']}").status_code == 204
    assert upload(tenant, big).status_code == 201


def test_it_refuses_a_profile_past_the_tenants_count(bounded_url):
    tenant = new_tenant(bounded_url)
    first = tenant.call("POST", "/profiles", json={"name": "one"}).json()
    assert tenant.call("POST", "/profiles", json={}).status_code == 201
    message = refused(tenant.call("POST", "/profiles", json={"name": "three"}))
    assert "at most 2 profiles" in message and "SANDBOX_MAX_PROFILES" in message
    assert tenant.call("GET", "/profiles", params={"name": "three"}).json() == []
    assert tenant.call("DELETE", f"/profiles/{first['id']}").status_code == 204
    assert tenant.call("POST", "/profiles", json={"name": "three"}).status_code == 201


def test_it_refuses_a_credential_past_the_tenants_count(bounded_url):
    tenant = new_tenant(bounded_url)

    def create(name):
        body = {"name": name, "domain": "example.com", "values": {"username": "u", "password": "p"}}
        return tenant.call("POST", "/credentials", json=body)

    first = create("one").json()
    assert create("two").status_code == 201
    message = refused(create("three"))
    assert "at most 2 credentials" in message and "SANDBOX_MAX_CREDENTIALS" in message
    assert [c["name"] for c in tenant.call("GET", "/credentials").json()] == ["one", "two"]
    assert tenant.call("DELETE", f"/credentials/{first['id']}").status_code == 204
    assert create("three").status_code == 201
