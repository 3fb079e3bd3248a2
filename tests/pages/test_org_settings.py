"""Org settings: "Test connection" reports success or the exact error, never the key."""

from console.accounts.models import Organization

URL = "/o/acme/settings/test-connection/"
HTMX = {"HX-Request": "true", "HX-Target": "connection-result"}


async def test_it_reports_a_working_connection(admin_client):
    response = await admin_client.post(URL, headers=HTMX)
    body = response.content.decode()
    assert response.status_code == 200
    assert "Connected as api_key" in body
    assert "the whole organization" in body


async def test_it_reports_a_rejected_key_exactly(admin_client, org, tenant):
    stored = await Organization.objects.aget(pk=org.pk)
    stored.set_api_key("sk_revoked_key_9876")
    await stored.asave()
    body = (await admin_client.post(URL, headers=HTMX)).content.decode()
    assert "The connection failed" in body
    assert "HTTP 401" in body and "unauthorized" in body
    assert "request id" in body
    assert "sk_revoked_key_9876" not in body


async def test_it_reports_an_unreachable_service(admin_client, org):
    stored = await Organization.objects.aget(pk=org.pk)
    stored.service_base_url = "http://127.0.0.1:9"
    await stored.asave()
    body = (await admin_client.post(URL, headers=HTMX)).content.decode()
    assert "could not connect" in body
    assert "No answer" in body


async def test_it_is_for_admins_only(operator_client, outsider_client):
    assert (await operator_client.post(URL, headers=HTMX)).status_code == 403
    assert (await outsider_client.post(URL, headers=HTMX)).status_code == 404
