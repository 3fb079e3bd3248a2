"""The organization's sign-in policy where every org view passes (org_view) and where open streams are
re-checked (the stream guard): two-factor required, single sign-on required, a session of another
organization's single sign-on."""

from __future__ import annotations

import pyotp
import pytest
from allauth.mfa.totp.internal.auth import TOTP
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.contrib.sessions.backends.db import SessionStore

from console.accounts.models import Membership
from console.live.guard import Access
from console.signin import policy
from console.signin.models import OrgSignIn
from tests.live.test_revoke import assert_ended_by_the_guard, assert_still_streams, live_telemetry

pytestmark = pytest.mark.django_db(transaction=True)


def give_totp(user) -> None:
    TOTP.activate(user, pyotp.random_base32())


def require(org, **values) -> OrgSignIn:
    signin = OrgSignIn.objects.filter(org=org).first() or OrgSignIn(org=org)
    for name, value in values.items():
        setattr(signin, name, value)
    signin.save()
    return signin


def sso_ready(org, **values) -> OrgSignIn:
    return require(org, sso_enabled=True, issuer_url="http://127.0.0.1:9/o", client_id="console", **values)


def sso_session(key: str, org) -> None:
    store = SessionStore(session_key=key)
    store.update({policy.METHOD: policy.METHOD_SSO, policy.SSO_ORGS: [org.pk]})
    store.save()


async def test_it_sends_a_member_without_a_second_factor_to_add_one(
    org, viewer, viewer_client, operator, operator_client
):
    await sync_to_async(require)(org, mfa_required=True)
    await sync_to_async(give_totp)(operator)

    response = await viewer_client.get("/o/acme/")
    assert response.status_code == 302
    assert response["Location"] == "/account/two-factor/"
    # Partials and forms are refused outright: polls stop, nothing is swapped in.
    assert (await viewer_client.get("/o/acme/", headers={"HX-Request": "true"})).status_code == 403
    assert (
        await viewer_client.post("/o/acme/members/invite/", {"email": "x@example.com"})
    ).status_code == 403

    assert (await operator_client.get("/o/acme/members/")).status_code == 200


async def test_it_sends_a_password_session_through_single_sign_on_when_required(
    org, admin, admin_client, viewer_client
):
    await sync_to_async(sso_ready)(org, sso_required=True, break_glass=admin)

    response = await viewer_client.get("/o/acme/members/")
    assert response.status_code == 302
    assert response["Location"].startswith("/o/acme/sso/?why=sso")
    page = await viewer_client.get(response["Location"])
    assert b"Continue with Acme" in page.content
    assert (await viewer_client.get("/o/acme/members/", headers={"HX-Request": "true"})).status_code == 403
    # The break-glass admin keeps the password.
    assert (await admin_client.get("/o/acme/members/")).status_code == 200


async def test_it_keeps_a_single_sign_on_session_to_its_own_organization(
    org, other_org, viewer, viewer_client
):
    await Membership.objects.acreate(user=viewer, org=other_org, role="viewer")
    await sync_to_async(sso_session)(viewer_client.cookies[django_settings.SESSION_COOKIE_NAME].value, org)
    assert (await viewer_client.get("/o/acme/members/")).status_code == 200
    response = await viewer_client.get("/o/globex/members/")
    assert response.status_code == 302
    assert response["Location"].startswith("/o/globex/sso/?why=scope")


async def test_it_lets_a_single_sign_on_session_in_without_a_console_second_factor(
    org, viewer, viewer_client
):
    await sync_to_async(sso_ready)(org, mfa_required=True, sso_required=True)
    await sync_to_async(sso_session)(viewer_client.cookies[django_settings.SESSION_COOKIE_NAME].value, org)
    assert (await viewer_client.get("/o/acme/members/")).status_code == 200


async def test_it_ends_the_stream_of_a_member_once_two_factor_is_required(
    console_url, org, viewer, viewer_cookies, operator, operator_cookies, quiet, session_id
):
    await sync_to_async(give_totp)(operator)
    async with live_telemetry(console_url, session_id, viewer_cookies, operator_cookies) as (gone, stays):
        await sync_to_async(require)(org, mfa_required=True)
        await assert_ended_by_the_guard(gone)
        await assert_still_streams(stays, quiet, session_id)


async def test_it_ends_the_password_sessions_streams_once_single_sign_on_is_required(
    console_url, org, viewer, viewer_cookies, operator, operator_cookies, quiet, session_id
):
    async with live_telemetry(console_url, session_id, viewer_cookies, operator_cookies) as (gone, stays):
        await sync_to_async(sso_ready)(org, sso_required=True, break_glass=operator)
        await assert_ended_by_the_guard(gone)
        await assert_still_streams(stays, quiet, session_id)


async def test_it_refuses_in_the_guard_what_org_view_refuses(org, viewer, viewer_cookies):
    key = viewer_cookies[django_settings.SESSION_COOKIE_NAME]
    access = Access(user_id=viewer.pk, org_id=org.pk, session_key=key)
    assert await access.allowed() == (True, "")
    await sync_to_async(require)(org, mfa_required=True)
    assert await access.allowed() == (False, policy.REASONS[policy.MFA])
    await sync_to_async(give_totp)(viewer)
    assert await access.allowed() == (True, "")
    # A session of this org's single sign-on, when it is required.
    await sync_to_async(sso_ready)(org, sso_required=True)
    assert await access.allowed() == (False, policy.REASONS[policy.SSO])
    await sync_to_async(sso_session)(key, org)
    assert await access.allowed() == (True, "")
