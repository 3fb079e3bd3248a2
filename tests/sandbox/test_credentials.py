"""Sandbox conformance: credentials, write-only values and TOTP secrets, TOTP codes (notes §10)."""

import base64
from datetime import UTC, datetime

import pytest

from console.sandbox.resources.credentials import totp_code

RFC_SECRET = base64.b32encode(b"12345678901234567890").decode()  # the RFC 6238 SHA-1 test key
PASSWORD = "hunter2-Zq81!unique"


def error_shape(response):
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    assert isinstance(body["details"], list)
    return body


def field_of(response) -> str:
    return error_shape(response)["details"][0]["code"]


def create(tenant, name="github", **fields):
    body = {"name": name, "domain": "github.com", "values": {"username": "bot", "password": PASSWORD}}
    body.update(fields)
    response = tenant.call("POST", "/credentials", json=body)
    assert response.status_code == 201, response.text
    return response.json()


@pytest.mark.parametrize(
    ("seconds", "code"),
    [
        (59, "287082"),
        (1111111109, "081804"),
        (1111111111, "050471"),
        (1234567890, "005924"),
        (2000000000, "279037"),
        (20000000000, "353130"),
    ],
)
def test_it_computes_the_rfc_6238_test_vectors(seconds, code):
    at = datetime.fromtimestamp(seconds, UTC)
    assert totp_code(RFC_SECRET, at) == (code, datetime.fromtimestamp((seconds // 30 + 1) * 30, UTC))


def test_it_creates_a_credential_without_returning_its_values(tenant):
    credential = create(tenant)
    assert credential["id"].startswith("cred_")
    assert credential["name"] == "github"
    assert credential["domain"] == "github.com"
    assert credential["has_values"] is True
    assert credential["has_totp_secret"] is False
    assert credential["value_keys"] == ["username", "password"]
    assert credential["created_at"].endswith("Z")
    assert "totp_code" not in credential
    assert PASSWORD not in str(credential)
    assert not any(key.startswith("_") or key == "values" for key in credential)


def test_it_returns_the_current_code_only_when_the_secret_was_just_set(tenant):
    # The start of a 30 s window: the tenant's clock runs on from here, and every call of the test must
    # fall in the same window (from 12:00:59 a loaded machine crossed into the next code).
    tenant.set_clock("2026-03-01T12:00:30Z")
    at = datetime(2026, 3, 1, 12, 0, 30, tzinfo=UTC)
    expected, expires = totp_code(RFC_SECRET, at)
    credential = create(tenant, totp_secret=RFC_SECRET.lower())
    assert credential["has_totp_secret"] is True
    assert credential["totp_code"] == expected
    assert (
        credential["totp_code_expires_at"]
        == "2026-03-01T12:01:00.000Z"
        == expires.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )
    assert RFC_SECRET not in str(credential)
    fetched = tenant.call("GET", f"/credentials/{credential['id']}").json()
    assert "totp_code" not in fetched and "totp_code_expires_at" not in fetched
    renamed = tenant.call("PATCH", f"/credentials/{credential['id']}", json={"name": "gh"}).json()
    assert "totp_code" not in renamed
    replaced = tenant.call("PATCH", "/credentials/gh", json={"totp_secret": RFC_SECRET}).json()
    assert replaced["totp_code"] == expected


def test_it_serves_the_rfc_6238_code_on_the_tenant_clock(tenant):
    # RFC 6238's vector is for 59 s; the tenant's clock runs on, so the test starts well inside that
    # 30-second step (the same code) rather than a second before its end.
    tenant.set_clock("1970-01-01T00:00:40Z")
    create(tenant, totp_secret=RFC_SECRET)
    response = tenant.call("GET", "/credentials/github/totp-code")
    assert response.status_code == 200
    assert response.json() == {"code": "287082", "expires_at": "1970-01-01T00:01:00.000Z"}
    tenant.advance(20)
    moved = tenant.call("GET", "/credentials/github/totp-code").json()
    assert moved["code"] != "287082"
    assert moved["expires_at"] == "1970-01-01T00:01:30.000Z"


def test_it_normalizes_a_spaced_lowercase_secret(tenant):
    tenant.set_clock("1970-01-01T00:00:40Z")
    spaced = " ".join(RFC_SECRET[i : i + 4] for i in range(0, len(RFC_SECRET), 4)).lower()
    create(tenant, totp_secret=spaced + "====")
    assert tenant.call("GET", "/credentials/github/totp-code").json()["code"] == "287082"


def test_it_explains_a_totp_code_request_without_a_secret(tenant):
    create(tenant)
    response = tenant.call("GET", "/credentials/github/totp-code")
    assert response.status_code == 400
    body = error_shape(response)
    assert body["code"] == "totp_not_configured"
    assert "no TOTP secret" in body["message"]
    assert tenant.call("GET", "/credentials/nope/totp-code").status_code == 404


@pytest.mark.parametrize("secret", ["not base32!", "ABCDEFGH1", "JBSWY3DP", "JBSWY3DPEHPK3PXPJ", 42])
def test_it_refuses_a_bad_totp_secret_without_echoing_it(tenant, secret):
    response = tenant.call(
        "POST", "/credentials", json={"name": "x", "domain": "x.com", "values": {}, "totp_secret": secret}
    )
    assert response.status_code == 400
    assert field_of(response) == "totp_secret"
    assert str(secret) not in response.text
    assert tenant.call("GET", "/credentials").json() == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"domain": "x.com", "values": {}}, "name"),
        ({"name": " ", "domain": "x.com", "values": {}}, "name"),
        ({"name": "a/b", "domain": "x.com", "values": {}}, "name"),
        ({"name": "x", "values": {}}, "domain"),
        ({"name": "x", "domain": "https://x.com/login", "values": {}}, "domain"),
        ({"name": "x", "domain": "x.com"}, "values"),
        ({"name": "x", "domain": "x.com", "values": ["a"]}, "values"),
        ({"name": "x", "domain": "x.com", "values": {"user name": "a"}}, "values"),
        ({"name": "x", "domain": "x.com", "values": {"pin": 1234}}, "values"),
        ({"name": "x", "domain": "x.com", "values": {"k": "v" * 4097}}, "values"),
        ({"name": "x", "domain": "x.com", "values": {f"k{i}": "v" for i in range(51)}}, "values"),
        ({"name": "x", "domain": "x.com", "values": {}, "sso_provider": "Google Workspace!"}, "sso_provider"),
    ],
)
def test_it_refuses_bad_create_bodies_with_field_details(tenant, body, field):
    response = tenant.call("POST", "/credentials", json=body)
    assert response.status_code == 400
    assert field_of(response) == field


def test_it_never_echoes_a_value_in_a_validation_error(tenant):
    secret_value = "s3cret-VALUE-never-echoed"
    response = tenant.call(
        "POST", "/credentials", json={"name": "x", "domain": "x.com", "values": {"pin": secret_value * 200}}
    )
    assert response.status_code == 400
    assert secret_value not in response.text


def test_it_keeps_names_unique_per_project(tenant):
    create(tenant, "dup")
    response = tenant.call("POST", "/credentials", json={"name": "dup", "domain": "a.com", "values": {}})
    assert response.status_code == 409
    assert error_shape(response)["code"] == "credential_name_taken"
    tenant.call("POST", "/org/projects", json={"name": "other"})
    elsewhere = tenant.call(
        "POST",
        "/credentials",
        json={"name": "dup", "domain": "a.com", "values": {}},
        headers={"X-Kernel-Project": "other"},
    )
    assert elsewhere.status_code == 201
    create(tenant, "second")
    rename = tenant.call("PATCH", "/credentials/second", json={"name": "dup"})
    assert rename.status_code == 409


def test_it_merges_values_on_patch(tenant):
    create(tenant, values={"username": "bot", "password": PASSWORD, "recovery": "r"})
    response = tenant.call(
        "PATCH",
        "/credentials/github",
        json={"values": {"password": "new-pass", "email": "bot@x.com"}, "remove_value_keys": ["recovery"]},
    )
    assert response.status_code == 200
    assert response.json()["value_keys"] == ["username", "password", "email"]
    # remove_value_keys applies before the merge, so a key both removed and given is set.
    body = {"values": {"email": "e"}, "remove_value_keys": ["email", "nope"]}
    both = tenant.call("PATCH", "/credentials/github", json=body).json()
    assert both["value_keys"] == ["username", "password", "email"]
    emptied = tenant.call(
        "PATCH", "/credentials/github", json={"remove_value_keys": ["username", "password", "email"]}
    ).json()
    assert emptied["value_keys"] == []
    assert emptied["has_values"] is False


def test_it_replaces_and_removes_the_totp_secret_and_sso_provider(tenant):
    create(tenant, totp_secret=RFC_SECRET, sso_provider="Google")
    fetched = tenant.call("GET", "/credentials/github").json()
    assert fetched["sso_provider"] == "google"
    removed = tenant.call("PATCH", "/credentials/github", json={"totp_secret": "", "sso_provider": ""}).json()
    assert removed["has_totp_secret"] is False
    assert removed["sso_provider"] is None
    assert tenant.call("GET", "/credentials/github/totp-code").status_code == 400
    again = tenant.call("PATCH", "/credentials/github", json={"sso_provider": "okta"}).json()
    assert again["sso_provider"] == "okta"
    cleared = tenant.call("PATCH", "/credentials/github", json={"sso_provider": None}).json()
    assert cleared["sso_provider"] is None


def test_it_applies_a_patch_all_or_nothing(tenant):
    create(tenant)
    response = tenant.call(
        "PATCH", "/credentials/github", json={"name": "renamed", "values": {"a": "b"}, "totp_secret": "bad!"}
    )
    assert response.status_code == 400
    assert field_of(response) == "totp_secret"
    unchanged = tenant.call("GET", "/credentials/github").json()
    assert unchanged["value_keys"] == ["username", "password"]


def test_it_refuses_to_move_a_credential_to_another_domain(tenant):
    create(tenant)
    response = tenant.call("PATCH", "/credentials/github", json={"domain": "gitlab.com"})
    assert response.status_code == 400
    assert field_of(response) == "domain"


def test_it_bumps_updated_at_on_patch(tenant):
    credential = create(tenant)
    tenant.advance(60)
    updated = tenant.call("PATCH", "/credentials/github", json={"values": {"otp": "1"}}).json()
    assert updated["updated_at"] > credential["updated_at"]
    assert updated["created_at"] == credential["created_at"]


def test_it_lists_without_value_keys_with_filters_and_paging(tenant):
    for i in range(12):
        create(tenant, f"site-{i:02d}", domain=f"s{i % 3}.example.com")
    first = tenant.call("GET", "/credentials", params={"limit": 5})
    assert first.headers["X-Has-More"] == "true"
    assert first.headers["X-Next-Offset"] == "5"
    items = first.json()
    assert [c["name"] for c in items] == [f"site-{i:02d}" for i in range(5)]
    assert all("value_keys" not in c and c["has_values"] for c in items)
    last = tenant.call("GET", "/credentials", params={"limit": 5, "offset": 10})
    assert last.headers["X-Has-More"] == "false"
    assert len(last.json()) == 2
    by_domain = tenant.call("GET", "/credentials", params={"domain": "S1.example.com"}).json()
    assert [c["name"] for c in by_domain] == ["site-01", "site-04", "site-07", "site-10"]
    by_query = tenant.call("GET", "/credentials", params={"query": "E-1"}).json()
    assert [c["name"] for c in by_query] == ["site-10", "site-11"]
    by_id = tenant.call("GET", "/credentials", params={"query": items[2]["id"]}).json()
    assert [c["name"] for c in by_id] == ["site-02"]
    assert len(tenant.call("GET", "/credentials", params={"query": "s2.example"}).json()) == 4


def test_it_gets_by_id_or_name_and_deletes(tenant):
    credential = create(tenant)
    assert tenant.call("GET", f"/credentials/{credential['id']}").json()["name"] == "github"
    assert tenant.call("DELETE", "/credentials/github").status_code == 204
    missing = tenant.call("GET", f"/credentials/{credential['id']}")
    assert missing.status_code == 404
    assert error_shape(missing)["code"] == "not_found"
    assert tenant.call("DELETE", "/credentials/github").status_code == 404
    create(tenant)  # the name is free again


def test_it_scopes_credentials_to_the_project(tenant):
    create(tenant)
    tenant.call("POST", "/org/projects", json={"name": "other"})
    other = {"X-Kernel-Project": "other"}
    assert tenant.call("GET", "/credentials", headers=other).json() == []
    assert tenant.call("GET", "/credentials/github", headers=other).status_code == 404


def test_it_seeds_demo_credentials_with_and_without_totp(demo_tenant):
    listed = {c["name"]: c for c in demo_tenant.call("GET", "/credentials").json()}
    assert {"github-ci", "shop-admin", "okta-sso"} <= set(listed)
    assert listed["github-ci"]["has_totp_secret"] is True
    assert listed["shop-admin"]["has_totp_secret"] is False
    assert listed["okta-sso"]["sso_provider"] == "google"
    assert listed["okta-sso"]["has_values"] is False
    detail = demo_tenant.call("GET", "/credentials/github-ci").json()
    assert detail["value_keys"] == ["username", "password"]
    code = demo_tenant.call("GET", "/credentials/github-ci/totp-code").json()
    assert len(code["code"]) == 6 and code["code"].isdigit()
