"""The organization's sign-in settings page: the client secret is write-only and encrypted at rest, the
issuer URL passes the service URL's target check, domains belong to one org."""

from __future__ import annotations

import pytest

from console.accounts.models import AuditLog
from console.signin.models import OrgSignIn, SsoDomain

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/o/acme/settings/sign-in/"
SECRET = "client-secret-that-must-never-show-9f3k"


def form(**values) -> dict:
    return {
        "sso_enabled": "on",
        "issuer_url": "http://127.0.0.1:9/o",
        "client_id": "console",
        "client_secret": SECRET,
        "domains": "acme.test",
        "default_role": "viewer",
        "role_claim": "groups",
        "role_mapping": "console-admins = admin\nconsole-operators = operator",
        **values,
    }


async def test_it_keeps_the_client_secret_write_only(admin_client, org):
    response = await admin_client.post(URL, form())
    assert response.status_code == 302
    signin = await OrgSignIn.objects.aget(org=org)
    assert signin.client_secret == SECRET
    assert SECRET not in signin.client_secret_encrypted
    assert signin.role_mapping == [["console-admins", "admin"], ["console-operators", "operator"]]
    page = await admin_client.get(URL)
    assert SECRET.encode() not in page.content
    assert "••••9f3k".encode() in page.content
    row = await AuditLog.objects.aget(action="org.signin")
    assert SECRET not in row.detail and "client_secret" in row.detail
    # Sent back with an error elsewhere, the form does not carry the typed secret either.
    again = await admin_client.post(URL, form(client_secret="another-secret-xyz", role_mapping="x = boss"))
    assert again.status_code == 200
    assert b"another-secret-xyz" not in again.content
    assert "not a role" in again.content.decode()


@pytest.mark.parametrize(
    "issuer, said",
    [
        ("http://169.254.169.254/o", "link-local"),
        ("http://[fd00:ec2::254]/o", "metadata"),
        ("ftp://idp.example/o", "http"),
    ],
)
async def test_it_refuses_an_issuer_the_service_url_could_not_be(admin_client, org, issuer, said):
    response = await admin_client.post(URL, form(issuer_url=issuer))
    assert response.status_code == 200
    assert said in response.content.decode()
    assert not await OrgSignIn.objects.filter(org=org).aexists()


async def test_it_refuses_private_issuers_unless_allowed(admin_client, org, settings):
    settings.SERVICE_URL_ALLOW_PRIVATE = False
    response = await admin_client.post(URL, form(issuer_url="http://127.0.0.1:9/o"))
    assert "loopback" in response.content.decode()
    assert not await OrgSignIn.objects.filter(org=org).aexists()


async def test_it_asks_for_the_secret_again_when_the_issuer_changes(admin_client, org):
    await admin_client.post(URL, form())
    response = await admin_client.post(URL, form(issuer_url="http://127.0.0.2:9/o", client_secret=""))
    assert "enter the client secret for the new issuer" in response.content.decode()
    signin = await OrgSignIn.objects.aget(org=org)
    assert signin.issuer_url == "http://127.0.0.1:9/o"
    # Whatever changes the issuer (the shell, the admin) loses the secret with it.
    signin.issuer_url = "http://127.0.0.2:9/o"
    await signin.asave()
    assert (await OrgSignIn.objects.aget(org=org)).client_secret == ""


async def test_it_gives_a_domain_to_one_organization(admin_client, org, other_org):
    await SsoDomain.objects.acreate(org=other_org, domain="acme.test")
    response = await admin_client.post(URL, form())
    assert "already another organization" in response.content.decode()
    assert not await OrgSignIn.objects.filter(org=org).aexists()


async def test_it_takes_an_admin_as_break_glass_only(admin_client, admin, viewer, org):
    response = await admin_client.post(URL, form(sso_required="on", break_glass=str(viewer.pk)))
    assert response.status_code == 200
    assert not await OrgSignIn.objects.filter(org=org).aexists()
    response = await admin_client.post(URL, form(sso_required="on", break_glass=str(admin.pk)))
    assert response.status_code == 302
    signin = await OrgSignIn.objects.aget(org=org)
    assert signin.sso_required and signin.break_glass_id == admin.pk


async def test_it_shows_the_settings_to_admins_only(viewer_client, operator_client):
    assert (await viewer_client.get(URL)).status_code == 403
    assert (await operator_client.post(URL, form())).status_code == 403
