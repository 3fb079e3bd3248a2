"""allauth's hooks: who may sign up (nobody: invites only), what a sign-in writes in the session, where it
goes next, and TOTP secrets encrypted at rest."""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.mfa.adapter import DefaultMFAAdapter
from django.conf import settings
from django.contrib import messages
from django.http import HttpResponseRedirect
from django.urls import reverse

from console.accounts import crypto
from console.accounts.models import Membership
from console.signin import policy

# Set by the single sign-on callback just before allauth's login stages: {"user": pk, "org": pk}.
PENDING_SSO = "signin_pending_sso"


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        return False  # accounts come from invites (console/accounts) and single sign-on (console/signin)

    def get_client_ip(self, request) -> str:
        # What uvicorn saw after --forwarded-allow-ips, as everywhere (the login throttle, the audit log).
        return request.META.get("REMOTE_ADDR") or "0.0.0.0"  # noqa: S104  (a value, not a bind)

    def login(self, request, user) -> None:
        """Sign in, then write in the session how: by password, or by which organizations' provider."""
        pending = request.session.pop(PENDING_SSO, None)
        before = request.session.get(policy.METHOD)
        orgs_before = list(request.session.get(policy.SSO_ORGS) or [])
        same_user = str(request.session.get("_auth_user_id")) == str(user.pk)
        super().login(request, user)
        if pending and pending.get("user") == user.pk:
            if same_user and before == policy.METHOD_PASSWORD:
                # Already signed in with the password: the provider adds its organization to this session.
                request.session[policy.SSO_ORGS] = sorted({*orgs_before, pending["org"]})
            else:
                request.session[policy.METHOD] = policy.METHOD_SSO
                request.session[policy.SSO_ORGS] = sorted(
                    {*(orgs_before if same_user else []), pending["org"]}
                )
        else:
            request.session[policy.METHOD] = policy.METHOD_PASSWORD
            request.session[policy.SSO_ORGS] = orgs_before if same_user else []

    def post_login(self, request, user, **kwargs):
        response = super().post_login(request, user, **kwargs)
        needing = needs_second_factor(request, user)
        if needing:
            names = ", ".join(org.name for org in needing)
            messages.warning(
                request,
                f"{names} requires two-factor authentication: add an authenticator app or a security key "
                "to reach its pages.",
            )
            return HttpResponseRedirect(reverse("mfa_index"))
        return response

    def add_message(
        self, request, level, message_template=None, message_context=None, extra_tags="", message=None
    ):
        # allauth's own "Successfully signed in as …" and the like: the console's pages say what matters.
        if message_template and message_template.startswith("account/messages/"):
            return
        super().add_message(request, level, message_template, message_context, extra_tags, message)


def needs_second_factor(request, user) -> list:
    """The user's organizations whose two-factor policy this session does not meet yet."""
    orgs = [
        m.org
        for m in Membership.objects.filter(user=user, org__signin__mfa_required=True).select_related(
            "org__signin"
        )
    ]
    if not orgs or policy.has_second_factor(user):
        return []
    return [
        org
        for org in orgs
        if policy.refusal(
            policy.Policy.of(org),
            user_id=user.pk,
            org_id=org.pk,
            has_second_factor=False,
            session=request.session,
        )
        == policy.MFA
    ]


class MFAAdapter(DefaultMFAAdapter):
    """TOTP secrets and the recovery codes' seed are encrypted at rest like the service API keys."""

    def encrypt(self, text: str) -> str:
        return crypto.encrypt(text)

    def decrypt(self, encrypted_text: str) -> str:
        return crypto.decrypt(encrypted_text)

    def get_totp_issuer(self) -> str:
        return settings.MFA_TOTP_ISSUER
