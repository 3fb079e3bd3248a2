"""Org settings: "Test connection" reports success or the exact error, never the key."""

import pytest

from console.accounts.models import Organization
from tests.listener import listening

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


@pytest.fixture
def listener():
    with listening() as listener:
        yield listener


async def point_at(org, url: str) -> None:
    """Aim the org at ``url`` keeping its key, as an edit straight in the database would."""
    await Organization.objects.filter(pk=org.pk).aupdate(service_base_url=url)


@pytest.mark.parametrize("status", [200, 401, 500])
async def test_it_never_shows_the_body_of_what_answered(admin_client, org, listener, status):
    listener.status = status
    listener.body = b"root:x:0:0:SECRET-FROM-INSIDE aws_secret_access_key=AKIAEXAMPLE"
    await point_at(org, listener.url)
    body = (await admin_client.post(URL, headers=HTMX)).content.decode()
    assert len(listener.received) == 1
    assert "The connection failed" in body
    assert f"HTTP {status}" in body
    assert "SECRET-FROM-INSIDE" not in body
    assert "AKIAEXAMPLE" not in body


async def test_it_shows_only_a_code_that_looks_like_one(admin_client, org, listener):
    listener.status = 403
    listener.content_type = "application/json"
    listener.body = b'{"code": "leaked text from inside <b>", "message": "SECRET-FROM-INSIDE"}'
    await point_at(org, listener.url)
    body = (await admin_client.post(URL, headers=HTMX)).content.decode()
    assert "HTTP 403" in body
    assert "leaked text" not in body
    assert "SECRET-FROM-INSIDE" not in body


async def test_it_sends_nothing_to_a_metadata_address_set_elsewhere(admin_client, org):
    await point_at(org, "http://169.254.169.254/")
    body = (await admin_client.post(URL, headers=HTMX)).content.decode()
    assert "No answer" in body
    assert "169.254.169.254, a link-local address" in body


async def test_it_sends_nothing_to_a_private_address_when_not_allowed(admin_client, org, listener, settings):
    settings.SERVICE_URL_ALLOW_PRIVATE = False
    await point_at(org, listener.url)
    body = (await admin_client.post(URL, headers=HTMX)).content.decode()
    assert "a loopback address" in body
    assert listener.received == []
