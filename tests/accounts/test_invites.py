import re
from datetime import timedelta
from unittest import mock

import pytest
from django.test import AsyncClient, Client
from django.utils import timezone

from console.accounts.models import AuditLog, Invite, Membership, Role

pytestmark = pytest.mark.django_db(transaction=True)


async def create_invite(admin_client, role="operator") -> str:
    response = await admin_client.post("/o/acme/members/invite/", {"email": "new@example.com", "role": role})
    assert response.status_code == 200
    match = re.search(r'value="(http://testserver/invite/[^"]+/)"', response.content.decode())
    assert match, "the invite link is shown once"
    return match.group(1).removeprefix("http://testserver")


async def test_it_creates_an_invite_storing_only_a_hash(org, admin_client):
    path = await create_invite(admin_client)
    invite = await Invite.objects.aget(org=org)
    token = path.split("/")[2]
    assert invite.token_hash not in path
    assert token not in invite.token_hash
    assert invite.expires_at - timezone.now() > timedelta(days=6)
    assert await AuditLog.objects.filter(action="member.invite", outcome="ok").aexists()


async def test_it_refuses_an_invite_without_an_email(org, admin_client):
    response = await admin_client.post("/o/acme/members/invite/", {"email": " ", "role": "viewer"})
    body = response.content.decode()
    assert response.status_code == 200
    assert "Give the e-mail address of the person you invite." in body
    assert "/invite/" not in re.sub(r'action="[^"]*"|hx-post="[^"]*"', "", body)  # no link was made
    assert not await Invite.objects.aexists()
    assert not await AuditLog.objects.filter(action="member.invite").aexists()


async def test_it_refuses_invites_from_an_operator(org, operator_client):
    response = await operator_client.post("/o/acme/members/invite/", {"role": "admin"})
    assert response.status_code == 403
    assert not await Invite.objects.aexists()


async def test_it_creates_an_account_from_an_invite(org, admin_client):
    path = await create_invite(admin_client)
    client = AsyncClient()
    page = await client.get(path)
    assert b"Create account and join" in page.content
    response = await client.post(
        path,
        {"username": "newbie", "email": "", "password1": "a-fine-pass-991", "password2": "a-fine-pass-991"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/o/acme/"
    membership = await Membership.objects.select_related("user").aget(org=org, user__username="newbie")
    assert membership.role == Role.OPERATOR
    assert (await client.get("/o/acme/")).status_code == 200
    # The link works once.
    assert (await AsyncClient().get(path)).status_code == 410


async def test_it_offers_the_link_with_a_copy_button_and_prefills_the_invited_address(org, admin_client):
    invite = {"email": "new@example.com", "role": "viewer"}
    response = await admin_client.post("/o/acme/members/invite/", invite)
    link = re.search(r'value="(http://testserver/invite/[^"]+/)"', response.content.decode()).group(1)
    assert f'data-copy="{link}"' in response.content.decode()
    page = (await AsyncClient().get(link.removeprefix("http://testserver"))).content.decode()
    assert re.search(r'<input[^>]*name="email"[^>]*value="new@example.com"', page)
    assert re.search(r'<input[^>]*name="username"[^>]*value="new"', page)


async def test_it_adds_an_existing_user_from_an_invite(org, admin_client, outsider):
    path = await create_invite(admin_client, role="viewer")
    client = AsyncClient()
    await client.aforce_login(outsider, backend="console.accounts.backends.UsernameOrEmailBackend")
    page = await client.get(path)
    assert b"Join as olga" in page.content
    response = await client.post(path)
    assert response.status_code == 302
    assert await Membership.objects.filter(org=org, user=outsider, role=Role.VIEWER).aexists()


async def test_it_refuses_an_expired_invite(org, admin_client):
    path = await create_invite(admin_client)
    later = timezone.now() + timedelta(days=8)
    with mock.patch("time.time", return_value=later.timestamp()):
        response = await AsyncClient().get(path)
    assert response.status_code == 410
    assert b"expired" in response.content


def test_it_refuses_an_invite_past_its_stored_expiry(org, admin):
    from asgiref.sync import async_to_sync

    client = AsyncClient()
    client.force_login(admin, backend="console.accounts.backends.UsernameOrEmailBackend")
    path = async_to_sync(create_invite)(client)
    Invite.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = Client().get(path)
    assert response.status_code == 410


async def test_it_gives_404_for_a_forged_token(org):
    response = await AsyncClient().get("/invite/not-a-real-token/")
    assert response.status_code == 404


async def test_it_revokes_an_invite(org, admin_client):
    await create_invite(admin_client)
    invite = await Invite.objects.aget(org=org)
    response = await admin_client.post(f"/o/acme/members/invites/{invite.pk}/revoke/")
    assert response.status_code == 302
    assert not await Invite.objects.aexists()
