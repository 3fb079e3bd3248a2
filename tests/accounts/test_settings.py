import pytest
from django.contrib.auth import get_user_model
from django.test import AsyncClient, Client

from console.accounts.models import AuditLog, Organization
from tests.listener import listening

pytestmark = pytest.mark.django_db(transaction=True)


async def test_it_shows_only_the_last_four_of_the_key(org, admin_client, tenant):
    response = await admin_client.get("/o/acme/settings/")
    html = response.content.decode()
    assert response.status_code == 200
    assert f"••••{tenant.api_key[-4:]}" in html
    assert tenant.api_key not in html


async def test_it_keeps_the_key_when_the_field_is_empty(org, admin_client, tenant):
    data = {
        "name": "Acme Corp",
        "service_base_url": tenant.url,
        "api_key": "",
        "default_project_id": "proj_1",
    }
    response = await admin_client.post("/o/acme/settings/", data)
    assert response.status_code == 302
    org = await Organization.objects.aget(pk=org.pk)
    assert org.name == "Acme Corp"
    assert org.default_project_id == "proj_1"
    assert org.api_key == tenant.api_key


async def test_it_replaces_the_key_and_audits_without_it(org, admin_client, tenant):
    data = {"name": "Acme", "service_base_url": tenant.url, "api_key": "sk-new-secret-9876"}
    await admin_client.post("/o/acme/settings/", data)
    org = await Organization.objects.aget(pk=org.pk)
    assert org.api_key == "sk-new-secret-9876"
    assert "sk-new-secret" not in org.api_key_encrypted
    entry = await AuditLog.objects.aget(action="org.settings")
    assert "api_key" in entry.detail
    assert "sk-new-secret" not in entry.detail


async def test_it_shows_field_errors(org, admin_client):
    response = await admin_client.post("/o/acme/settings/", {"name": "", "service_base_url": "not a url"})
    assert response.status_code == 200
    assert b"errorlist" in response.content


async def test_it_refuses_settings_to_an_operator(org, operator_client):
    assert (await operator_client.get("/o/acme/settings/")).status_code == 403


async def test_it_never_renders_the_key(org, admin, admin_client, tenant):
    pages = ["/o/acme/", "/o/acme/settings/", "/o/acme/members/", "/o/acme/audit/"]
    for path in pages:
        assert tenant.api_key not in (await admin_client.get(path)).content.decode(), path


def test_it_never_renders_the_key_in_the_django_admin(org, tenant):
    superuser = get_user_model().objects.create_superuser("root", "root@example.com", "a-long-pass-for-root")
    client = Client()
    client.force_login(superuser, backend="console.accounts.backends.UsernameOrEmailBackend")
    for path in ["/admin/accounts/organization/", f"/admin/accounts/organization/{org.pk}/change/"]:
        response = client.get(path)
        assert response.status_code == 200, path
        html = response.content.decode()
        assert tenant.api_key not in html, path
        assert org.api_key_encrypted not in html, path
        assert f"••••{tenant.api_key[-4:]}" in html, path


async def test_it_redirects_home_to_the_first_org(org, admin_client):
    response = await admin_client.get("/")
    assert response["Location"] == "/o/acme/"


async def test_it_explains_when_there_is_no_org(transactional_db):
    user = await get_user_model().objects.acreate_user("lonely", "l@example.com", "a-long-pass-x1")
    client = AsyncClient()
    await client.aforce_login(user, backend="console.accounts.backends.UsernameOrEmailBackend")
    response = await client.get("/")
    assert b"No organization yet" in response.content


async def test_it_shows_the_dashboard_with_the_switcher(org, other_org, admin, admin_client):
    from console.accounts.models import Membership

    await Membership.objects.acreate(user=admin, org=other_org, role="viewer")
    html = (await admin_client.get("/o/acme/")).content.decode()
    assert "Your role" in html
    assert 'href="/o/globex/"' in html
    assert 'href="/o/acme/members/"' in html


@pytest.fixture
def listener():
    with listening() as listener:
        yield listener


def settings_data(url: str, api_key: str = "") -> dict:
    return {"name": "Acme", "service_base_url": url, "api_key": api_key}


async def test_it_requires_the_key_again_when_the_url_changes(org, admin_client, tenant, listener):
    response = await admin_client.post("/o/acme/settings/", settings_data(listener.url))
    assert response.status_code == 200
    assert "The service base URL changed: enter the API key" in response.content.decode()
    stored = await Organization.objects.aget(pk=org.pk)
    assert stored.service_base_url == tenant.url
    assert stored.api_key == tenant.api_key
    assert not await AuditLog.objects.filter(action="org.settings").aexists()
    assert listener.received == []


async def test_it_saves_a_new_url_with_a_new_key(org, admin_client, listener):
    response = await admin_client.post("/o/acme/settings/", settings_data(listener.url, "sk-for-the-new-url"))
    assert response.status_code == 302
    stored = await Organization.objects.aget(pk=org.pk)
    assert stored.service_base_url == listener.url
    assert stored.api_key == "sk-for-the-new-url"


async def test_it_never_sends_the_stored_key_to_a_url_changed_elsewhere(org, admin_client, tenant, listener):
    # As in the shell: the URL changes, no key is given, so the stored key is cleared on save.
    stored = await Organization.objects.aget(pk=org.pk)
    stored.service_base_url = listener.url
    await stored.asave()
    await admin_client.post("/o/acme/settings/test-connection/", headers={"HX-Request": "true"})
    assert len(listener.received) == 1
    assert tenant.api_key not in listener.authorizations()[0]
    stored = await Organization.objects.aget(pk=org.pk)
    assert stored.api_key == "" and stored.api_key_hint == "(not set)"


def test_it_requires_the_key_again_in_the_django_admin(org, tenant, listener):
    superuser = get_user_model().objects.create_superuser("root", "root@example.com", "a-long-pass-for-root")
    client = Client()
    client.force_login(superuser, backend="console.accounts.backends.UsernameOrEmailBackend")
    data = {
        "name": "Acme",
        "slug": "acme",
        "service_base_url": listener.url,
        "api_key": "",
        "default_project_id": "",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
    }
    response = client.post(f"/admin/accounts/organization/{org.pk}/change/", data)
    assert response.status_code == 200
    assert "The service base URL changed: enter the API key" in response.content.decode()
    data["service_base_url"] = "http://169.254.169.254/"
    data["api_key"] = "sk-admin-typed-key"
    response = client.post(f"/admin/accounts/organization/{org.pk}/change/", data)
    assert "link-local" in response.content.decode()
    org.refresh_from_db()
    assert org.service_base_url == tenant.url
    assert org.api_key == tenant.api_key


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "ftp://ftp.example.com/",
        "http://user:secret@127.0.0.1:8100/",
        "http://0.0.0.0:8100/",
    ],
)
async def test_it_refuses_urls_the_key_must_not_go_to(org, admin_client, tenant, url):
    response = await admin_client.post("/o/acme/settings/", settings_data(url, "sk-new-key-1234"))
    assert response.status_code == 200
    assert b"errorlist" in response.content
    stored = await Organization.objects.aget(pk=org.pk)
    assert stored.service_base_url == tenant.url
    assert stored.api_key == tenant.api_key


async def test_it_names_why_a_metadata_address_is_refused(org, admin_client):
    response = await admin_client.post(
        "/o/acme/settings/", settings_data("http://169.254.169.254/", "sk-new-key-1234")
    )
    assert "169.254.169.254, a link-local address" in response.content.decode()


async def test_it_refuses_private_addresses_unless_the_setting_allows_them(org, admin_client, settings):
    settings.SERVICE_URL_ALLOW_PRIVATE = False
    for url in ["http://10.1.2.3/", "http://192.168.0.10:8100/", "http://127.0.0.1:8100/", "http://[::1]/"]:
        response = await admin_client.post("/o/acme/settings/", settings_data(url, "sk-new-key-1234"))
        assert response.status_code == 200, url
        assert b"errorlist" in response.content, url
    settings.SERVICE_URL_ALLOW_PRIVATE = True
    response = await admin_client.post("/o/acme/settings/", settings_data("http://10.1.2.3/", "sk-new-1234"))
    assert response.status_code == 302
