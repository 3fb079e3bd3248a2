"""Credential vault pages: list, detail, create, edit (merge), delete, TOTP code; secrets never leak."""

import base64

import pytest

from console.accounts.models import AuditLog

RFC_SECRET = base64.b32encode(b"12345678901234567890").decode()
# Distinctive, so a leak anywhere would be found by a plain substring search.
USERNAME = "leak-probe-user-7Hq2"
PASSWORD = "leak-probe-PASS-x9Zr4!"
NEW_PASSWORD = "leak-probe-NEWPASS-m3Kd8"
SECRET = "MFRGG43FMZXXIZLSMFZW63LFNBQXG2DP"  # base32, valid, and nowhere else in the code
SECRETS = (PASSWORD, NEW_PASSWORD, SECRET, SECRET.lower(), "mfrg g43f mzxx")


def url(path=""):
    return f"/o/acme/credentials/{path}"


def hx(target):
    return {"HX-Request": "true", "HX-Target": target}


def stored(tenant, name="github"):
    response = tenant.call("GET", f"/credentials/{name}")
    return response.json() if response.status_code == 200 else None


@pytest.fixture
def credential(tenant):
    body = {
        "name": "github",
        "domain": "github.com",
        "values": {"username": USERNAME, "password": PASSWORD},
        "totp_secret": RFC_SECRET,
        "sso_provider": "google",
    }
    return tenant.call("POST", "/credentials", json=body).json()


def form(**fields):
    data = {
        "name": "github",
        "domain": "github.com",
        "new_key": ["username", "password", ""],
        "new_value": [USERNAME, PASSWORD, ""],
        "totp_secret": "",
        "sso_provider": "",
    }
    data.update(fields)
    return data


def posts(tenant):
    return [r for r in tenant.requests() if r["method"] in ("POST", "PATCH", "DELETE")]


def assert_no_secret(body: str):
    for secret in SECRETS:
        assert secret not in body


# List --------------------------------------------------------------------------------------------


async def test_it_lists_credentials_with_their_flags(viewer_client, credential, tenant):
    tenant.call("POST", "/credentials", json={"name": "shop", "domain": "shop.example.com", "values": {}})
    response = await viewer_client.get(url())
    assert response.status_code == 200
    body = response.content.decode()
    assert "github" in body and "github.com" in body and "google" in body and "shop.example.com" in body
    assert "TOTP" in body and "stored" in body
    assert "New credential" not in body  # viewers do not create


async def test_it_searches_filters_by_domain_and_pages(viewer_client, tenant):
    for i in range(23):
        tenant.call(
            "POST", "/credentials", json={"name": f"site-{i:02d}", "domain": f"d{i % 2}.com", "values": {}}
        )
    body = (await viewer_client.get(url())).content.decode()
    assert "site-19" in body and "site-20" not in body and 'rel="next"' in body
    assert "site-22" in (await viewer_client.get(url(), {"offset": 20})).content.decode()
    found = (await viewer_client.get(url(), {"q": "e-07"})).content.decode()
    assert "site-07" in found and "site-08" not in found
    by_domain = (await viewer_client.get(url(), {"domain": "d1.com"})).content.decode()
    assert "site-01" in by_domain and "site-02" not in by_domain
    empty = (await viewer_client.get(url(), {"q": "zzz"})).content.decode()
    assert "No credential matches" in empty


async def test_it_serves_the_table_partial_to_htmx(viewer_client, credential):
    response = await viewer_client.get(url(), headers=hx("credentials-table"))
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="credentials-table">')
    assert "<html" not in body and "github" in body


async def test_it_hides_every_page_from_outsiders(outsider_client, credential):
    for path in (
        "",
        "new/",
        f"{credential['id']}/",
        f"{credential['id']}/edit/",
        f"{credential['id']}/totp/",
    ):
        assert (await outsider_client.get(url(path))).status_code == 404


# Detail ------------------------------------------------------------------------------------------


async def test_it_shows_value_names_but_never_values(viewer_client, credential):
    response = await viewer_client.get(url(f"{credential['id']}/"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "<code>username</code>" in body and "<code>password</code>" in body
    assert USERNAME not in body and PASSWORD not in body
    assert "A TOTP secret is stored" in body
    assert "Show current code" not in body  # viewers cannot reveal codes
    assert "Edit" not in body


async def test_it_finds_a_credential_by_name_and_404s_a_missing_one(viewer_client, credential):
    assert (await viewer_client.get(url("github/"))).status_code == 200
    assert (await viewer_client.get(url("missing/"))).status_code == 404


async def test_it_offers_the_code_to_operators_and_admin_actions_to_admins(
    operator_client, admin_client, credential
):
    body = (await operator_client.get(url(f"{credential['id']}/"))).content.decode()
    assert "Show current code" in body and "Delete…" not in body
    admin_body = (await admin_client.get(url(f"{credential['id']}/"))).content.decode()
    assert "Delete…" in admin_body and "/edit/" in admin_body


# TOTP code ---------------------------------------------------------------------------------------


async def test_it_shows_the_current_code_to_an_operator_and_audits_the_reveal(
    operator_client, credential, tenant
):
    tenant.set_clock("1970-01-01T00:00:59Z")
    response = await operator_client.get(url(f"{credential['id']}/totp/"), headers=hx("totp-code"))
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="totp-code"')
    assert "287082" in body
    assert 'hx-trigger="load delay:' in body and "?n=1" in body
    assert "data-totp-seconds" in body
    entry = await AuditLog.objects.aget(action="credential.totp_code")
    assert entry.target_id == credential["id"]
    assert "287082" not in entry.detail


async def test_it_refreshes_the_code_after_it_expires(operator_client, credential, tenant):
    tenant.set_clock("1970-01-01T00:00:59Z")
    tenant.advance(1)
    body = (
        await operator_client.get(url(f"{credential['id']}/totp/"), {"n": 1}, headers=hx("totp-code"))
    ).content
    assert b"287082" not in body and b"?n=2" in body
    assert await AuditLog.objects.filter(action="credential.totp_code").acount() == 0


async def test_it_stops_refreshing_after_a_while(operator_client, credential, tenant):
    response = await operator_client.get(url(f"{credential['id']}/totp/"), {"n": 10}, headers=hx("totp-code"))
    body = response.content.decode()
    assert "hidden again" in body and "Show current code" in body and "hx-trigger" not in body
    assert not [r for r in tenant.requests() if r["path"].endswith("/totp-code")]


async def test_it_serves_the_code_as_a_page_without_htmx(admin_client, credential):
    response = await admin_client.get(url(f"{credential['id']}/totp/"))
    assert response.status_code == 200
    assert b"<html" in response.content and b"Current TOTP code" in response.content


async def test_it_forbids_the_code_to_viewers(viewer_client, credential, tenant):
    response = await viewer_client.get(url(f"{credential['id']}/totp/"), headers=hx("totp-code"))
    assert response.status_code == 403
    assert not [r for r in tenant.requests() if r["path"].endswith("/totp-code")]


async def test_it_explains_a_credential_without_totp(operator_client, tenant):
    tenant.call("POST", "/credentials", json={"name": "plain", "domain": "x.com", "values": {}})
    body = (await operator_client.get(url("plain/totp/"), headers=hx("totp-code"))).content.decode()
    assert "has no TOTP secret" in body


async def test_it_says_when_the_credential_is_gone(operator_client, tenant):
    body = (await operator_client.get(url("missing/totp/"), headers=hx("totp-code"))).content.decode()
    assert "no longer exists" in body
    assert (await operator_client.get(url("missing/totp/"))).status_code == 404


# Create ------------------------------------------------------------------------------------------


async def test_it_creates_a_credential_and_audits_names_only(admin_client, tenant, admin):
    response = await admin_client.post(
        url("new/"), form(totp_secret="mfrg g43f mzxx izls mfzw 63lf nbqx g2dp", sso_provider="Google")
    )
    assert response.status_code == 302, response.content.decode()
    created = stored(tenant)
    assert response["Location"] == url(f"{created['id']}/")
    assert created["value_keys"] == ["username", "password"]
    assert created["has_totp_secret"] and created["sso_provider"] == "google"
    entry = await AuditLog.objects.aget(action="credential.create")
    assert entry.target_id == created["id"] and entry.actor_id == admin.pk and entry.outcome == "ok"
    assert "username, password" in entry.detail and "TOTP: set" in entry.detail
    assert_no_secret(entry.detail)


async def test_it_shows_the_services_refusal_to_keep_another_credential(admin_client, tenant):
    # The body the sandbox answers past SANDBOX_MAX_CREDENTIALS (tests/sandbox/test_quotas.py).
    message = "this sandbox keeps at most 1000 credentials per organization (SANDBOX_MAX_CREDENTIALS)"
    tenant.fault(method="POST", path="^/credentials$", status=403, code="insufficient_plan", message=message)
    response = await admin_client.post(url("new/"), form())
    body = response.content.decode()
    assert response.status_code == 200
    assert "The service refused to keep another credential" in body and "SANDBOX_MAX_CREDENTIALS" in body
    assert await AuditLog.objects.filter(action="credential.create", outcome="error").aexists()


async def test_it_takes_the_host_of_a_pasted_login_url(admin_client, tenant):
    response = await admin_client.post(url("new/"), form(domain="https://GitHub.com/login?x=1"))
    assert response.status_code == 302
    assert stored(tenant)["domain"] == "github.com"


async def test_it_creates_a_credential_with_sso_only(admin_client, tenant):
    response = await admin_client.post(url("new/"), form(new_key=[""], new_value=[""], sso_provider="okta"))
    assert response.status_code == 302
    assert stored(tenant)["has_values"] is False


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": " "}, "needs a name"),
        ({"name": "a/b"}, "cannot contain / or %"),
        ({"domain": "not a domain"}, "bare host name"),
        ({"totp_secret": "not-base32-1890"}, "base32"),
        ({"totp_secret": "JBSWY3DP"}, "at least 16"),
        ({"new_key": ["username", ""], "new_value": [USERNAME, PASSWORD]}, "has a value but no name"),
        ({"new_key": ["username", "password"], "new_value": [USERNAME, ""]}, "Enter a value for “password”"),
        ({"new_key": ["user name"], "new_value": [PASSWORD]}, "is not a valid value name"),
        ({"new_key": ["pw", "pw"], "new_value": [PASSWORD, NEW_PASSWORD]}, "given twice"),
        ({"sso_provider": "Google Workspace"}, "short name"),
    ],
)
async def test_it_refuses_bad_input_without_calling_the_service(admin_client, tenant, fields, message):
    response = await admin_client.post(url("new/"), form(**fields))
    assert response.status_code == 200
    body = response.content.decode()
    assert message in body
    assert posts(tenant) == []
    assert_no_secret(body)


async def test_it_rerenders_names_but_never_values_after_an_error(admin_client, tenant):
    response = await admin_client.post(
        url("new/"), form(name="", totp_secret=SECRET), headers=hx("credential-form")
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<form id="credential-form"')
    assert 'value="username"' in body and 'value="password"' in body
    assert USERNAME not in body and PASSWORD not in body and SECRET not in body
    assert "type them again" in body


async def test_it_shows_the_services_field_errors_next_to_the_values(admin_client, tenant):
    rows = {"new_key": [f"k{i}" for i in range(51)], "new_value": [f"{PASSWORD}{i}" for i in range(51)]}
    response = await admin_client.post(url("new/"), form(**rows))
    assert response.status_code == 200
    body = response.content.decode()
    assert "at most 50 values" in body
    assert PASSWORD not in body
    entry = await AuditLog.objects.aget(action="credential.create")
    assert entry.outcome == "error" and entry.request_id.startswith("req_")
    assert_no_secret(entry.detail)


async def test_it_explains_a_name_conflict_inline(admin_client, credential):
    response = await admin_client.post(url("new/"), form())
    assert response.status_code == 200
    assert (
        "already exists" in response.content.decode() and "Choose another name" in response.content.decode()
    )


async def test_it_shows_an_unavailable_service_as_a_banner_without_secrets(admin_client, tenant):
    tenant.fault(method="POST", path="^/credentials$", status=503)
    response = await admin_client.post(url("new/"), form(totp_secret=SECRET), headers=hx("credential-form"))
    assert response.status_code == 200
    assert response["HX-Retarget"] == "#banner"
    assert_no_secret(response.content.decode())


async def test_it_forbids_creating_below_admin(viewer_client, operator_client, tenant):
    assert (await viewer_client.get(url("new/"))).status_code == 403
    assert (await operator_client.post(url("new/"), form())).status_code == 403
    assert posts(tenant) == []


# Edit --------------------------------------------------------------------------------------------


async def test_it_merges_values_on_edit(admin_client, credential, tenant):
    response = await admin_client.post(
        url(f"{credential['id']}/edit/"),
        {
            "name": "github",
            "existing_key": ["username", "password"],
            "existing_value": ["", NEW_PASSWORD],
            "remove_key": ["username"],
            "new_key": ["email", ""],
            "new_value": ["ci@example.com", ""],
            "totp_action": "keep",
            "sso_provider": "google",
        },
    )
    assert response.status_code == 302, response.content.decode()
    assert stored(tenant)["value_keys"] == ["password", "email"]
    patch = [r for r in tenant.requests() if r["method"] == "PATCH"]
    assert len(patch) == 1
    entry = await AuditLog.objects.aget(action="credential.update")
    assert "set values: password, email" in entry.detail and "removed values: username" in entry.detail
    assert_no_secret(entry.detail)


async def test_it_replaces_and_removes_the_totp_secret(admin_client, credential, tenant):
    edit = url(f"{credential['id']}/edit/")
    base = {"name": "github", "sso_provider": "google"}
    replaced = await admin_client.post(edit, {**base, "totp_action": "replace", "totp_secret": SECRET})
    assert replaced.status_code == 302
    entry = await AuditLog.objects.filter(action="credential.update").afirst()
    assert entry.detail == "TOTP secret replaced"
    assert stored(tenant)["has_totp_secret"] is True
    typed = await admin_client.post(edit, {**base, "totp_action": "keep", "totp_secret": RFC_SECRET})
    assert typed.status_code == 302  # typing a secret means replacing it
    removed = await admin_client.post(edit, {**base, "totp_action": "remove", "sso_provider": ""})
    assert removed.status_code == 302
    after = stored(tenant)
    assert after["has_totp_secret"] is False and after["sso_provider"] is None


async def test_it_renames_and_explains_a_conflict(admin_client, credential, tenant):
    tenant.call("POST", "/credentials", json={"name": "taken", "domain": "x.com", "values": {}})
    edit = url(f"{credential['id']}/edit/")
    conflict = await admin_client.post(
        edit, {"name": "taken", "totp_action": "keep", "sso_provider": "google"}
    )
    assert conflict.status_code == 200 and "already exists" in conflict.content.decode()
    renamed = await admin_client.post(
        edit, {"name": "github-ci", "totp_action": "keep", "sso_provider": "google"}
    )
    assert renamed.status_code == 302
    assert stored(tenant, "github-ci")["id"] == credential["id"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "Nothing to change"),
        ({"totp_action": "replace"}, "Enter the new TOTP secret"),
        ({"totp_action": "remove", "totp_secret": SECRET}, "leave the new-secret field empty"),
        ({"totp_action": "replace", "totp_secret": "1234-not-base32"}, "base32"),
        (
            {"existing_key": ["password"], "existing_value": [NEW_PASSWORD], "remove_key": ["password"]},
            "choose one",
        ),
        (
            {
                "new_key": ["password"],
                "new_value": [NEW_PASSWORD],
                "existing_key": ["password"],
                "existing_value": [PASSWORD],
            },
            "given twice",
        ),
    ],
)
async def test_it_refuses_bad_edits_without_calling_the_service(
    admin_client, credential, tenant, fields, message
):
    data = {"name": "github", "totp_action": "keep", "sso_provider": "google", **fields}
    response = await admin_client.post(url(f"{credential['id']}/edit/"), data)
    assert response.status_code == 200
    body = response.content.decode()
    assert message in body
    assert_no_secret(body)
    assert [r for r in tenant.requests() if r["method"] == "PATCH"] == []


async def test_it_keeps_the_remove_marks_but_not_the_values_after_an_error(admin_client, credential):
    data = {
        "name": "",
        "existing_key": ["username", "password"],
        "existing_value": ["", NEW_PASSWORD],
        "remove_key": ["username"],
        "totp_action": "keep",
    }
    response = await admin_client.post(url(f"{credential['id']}/edit/"), data, headers=hx("credential-form"))
    body = response.content.decode()
    assert body.lstrip().startswith('<form id="credential-form"')
    assert 'value="username" checked' in body
    assert NEW_PASSWORD not in body


async def test_it_forbids_editing_below_admin(operator_client, credential, tenant):
    assert (await operator_client.get(url(f"{credential['id']}/edit/"))).status_code == 403
    response = await operator_client.post(
        url(f"{credential['id']}/edit/"), {"name": "x", "totp_action": "keep"}
    )
    assert response.status_code == 403
    assert [r for r in tenant.requests() if r["method"] == "PATCH"] == []


async def test_it_404s_editing_a_missing_credential(admin_client):
    assert (await admin_client.get(url("missing/edit/"))).status_code == 404


# Delete ------------------------------------------------------------------------------------------


async def test_it_confirms_then_deletes_and_audits(admin_client, credential, tenant):
    confirm = await admin_client.get(url(f"{credential['id']}/delete/"))
    assert confirm.status_code == 200 and b"Delete credential" in confirm.content
    assert stored(tenant) is not None
    response = await admin_client.post(url(f"{credential['id']}/delete/"))
    assert response.status_code == 302 and response["Location"] == url()
    assert stored(tenant) is None
    entry = await AuditLog.objects.aget(action="credential.delete")
    assert entry.target_id == credential["id"] and entry.detail == "github"


async def test_it_answers_htmx_deletes_with_a_client_redirect(admin_client, credential):
    response = await admin_client.post(url(f"{credential['id']}/delete/"), headers={"HX-Request": "true"})
    assert response["HX-Redirect"] == url()


async def test_it_forbids_deleting_below_admin(operator_client, credential, tenant):
    assert (await operator_client.post(url(f"{credential['id']}/delete/"))).status_code == 403
    assert stored(tenant) is not None


# Secrets -----------------------------------------------------------------------------------------


async def test_it_never_shows_values_or_the_secret_anywhere(admin_client, operator_client, tenant):
    created = await admin_client.post(url("new/"), form(totp_secret=SECRET, sso_provider="google"))
    assert created.status_code == 302
    cred_id = stored(tenant)["id"]
    bad = form(
        name="github", new_key=["username", "password"], new_value=[USERNAME, PASSWORD], totp_secret=SECRET
    )
    bodies = [
        (await admin_client.get(url())).content,
        (await admin_client.get(url(), headers=hx("credentials-table"))).content,
        (await admin_client.get(url(f"{cred_id}/"))).content,
        (await admin_client.get(url(f"{cred_id}/edit/"))).content,
        (await admin_client.get(url(f"{cred_id}/delete/"))).content,
        (await operator_client.get(url(f"{cred_id}/totp/"))).content,
        (await operator_client.get(url(f"{cred_id}/totp/"), headers=hx("totp-code"))).content,
        (await admin_client.post(url("new/"), bad)).content,  # 409: the name is taken
        (await admin_client.post(url("new/"), {**bad, "name": ""})).content,
        (await admin_client.post(url("new/"), {**bad, "name": "x"}, headers=hx("credential-form"))).content,
        (
            await admin_client.post(
                url(f"{cred_id}/edit/"),
                {
                    "name": "",
                    "existing_key": ["password"],
                    "existing_value": [NEW_PASSWORD],
                    "totp_action": "replace",
                    "totp_secret": SECRET,
                },
            )
        ).content,
    ]
    for body in bodies:
        text = body.decode()
        assert USERNAME not in text
        assert_no_secret(text)
    async for entry in AuditLog.objects.all():
        row = " ".join(str(v) for v in (entry.action, entry.target_id, entry.detail, entry.request_id))
        assert USERNAME not in row
        assert_no_secret(row)


async def test_it_fills_a_new_credential_from_a_provider_item_picked_by_search(admin_client, tenant):
    token = "ops_" + "p1ck3r" * 5
    tenant.call(
        "POST",
        "/org/credential_providers",
        json={"name": "1p", "provider_type": "onepassword", "token": token},
    )
    page = (await admin_client.get("/o/acme/credentials/new/")).content.decode()
    assert 'name="credential_item"' in page and "/credential_providers/picker/" in page
    filled = await admin_client.get("/o/acme/credentials/new/", {"credential_item": "1p::Engineering/GitHub"})
    body = filled.content.decode()
    assert 'value="github"' in body and 'value="github.com"' in body and "filled in from GitHub" in body
    unknown = await admin_client.get("/o/acme/credentials/new/", {"credential_item": "nope::A/B"})
    assert "No credential provider named" in unknown.content.decode()
