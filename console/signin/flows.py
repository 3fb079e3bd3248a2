"""Signing in: the password form's hand-over to allauth's login stages, and single sign-on's account rules.

Both end in allauth's ``perform_login``, whose stages ask for the second factor of a user who has one
(a TOTP code, a security key or a recovery code) before Django's ``login`` runs; ``AccountAdapter.login``
then writes in the session how it was signed in (console/signin/policy.py).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from allauth.account.internal.flows.login import perform_login, record_authentication
from allauth.account.models import Login
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from console.accounts.models import AuditLog, Membership, Organization, Role
from console.signin import policy
from console.signin.adapters import PENDING_SSO
from console.signin.models import NO_ACCESS, OrgSignIn, SsoIdentity


def sso_only_orgs(user) -> list[Organization]:
    """The user's organizations that refuse this user a password sign-in (break-glass admins excepted)."""
    rows = Membership.objects.filter(user=user, org__signin__sso_required=True).select_related("org__signin")
    return [
        m.org for m in rows if policy.Policy.of(m.org).sso_required and m.org.signin.break_glass_id != user.pk
    ]


def password_refusal(user) -> str:
    """Why the password may not sign this user in ("" when it may): every organization of theirs requires
    single sign-on. With at least one other organization the password signs in, and the pages of the
    organizations that require single sign-on send the member through their provider (org_view)."""
    required = sso_only_orgs(user)
    if not required or Membership.objects.filter(user=user).count() > len(required):
        return ""
    names = ", ".join(org.name for org in required)
    return f"{names} requires single sign-on: use “Sign in with SSO” below with your work e-mail."


def password_login(request, user, redirect_url: str):
    """The login form checked the password: on to allauth's stages (the second factor), then login."""
    record_authentication(request, user, method="password", username=user.get_username())
    return perform_login(request, Login(user=user, redirect_url=redirect_url))


def sso_login(request, user, org: Organization, redirect_url: str):
    """The provider vouched for ``user`` in ``org``: allauth's stages, then login scoped to ``org``."""
    request.session[PENDING_SSO] = {"user": user.pk, "org": org.pk}
    record_authentication(request, user, method="sso", org=org.slug)
    return perform_login(request, Login(user=user, redirect_url=redirect_url))


class Refused(Exception):
    """The provider's answer does not let this person in; ``str()`` is the sentence shown to them."""

    def __init__(self, why: str, *, user=None, subject: str = ""):
        super().__init__(why)
        self.user = user
        self.subject = subject


@dataclass
class Outcome:
    user: object
    role: str
    joined: bool
    old_role: str


def audit(org, user, action, *, target="", detail="", outcome=AuditLog.Outcome.OK, client_ip=None):
    AuditLog.objects.create(
        org=org,
        actor=user,
        actor_username=user.get_username() if user else "",
        action=action,
        target_id=str(target)[:200],
        outcome=outcome,
        detail=detail[:500],
        client_ip=client_ip,
    )


def _new_username(claims: dict, email: str) -> str:
    User = get_user_model()
    base = str(claims.get("preferred_username") or email.split("@", 1)[0] or "sso-user")
    base = re.sub(r"[^\w.@+-]", "-", base)[:120] or "sso-user"
    name = base
    while User.objects.filter(username__iexact=name).exists():
        name = f"{base}-{secrets.token_hex(3)}"
    return name


def admit(signin: OrgSignIn, claims: dict, *, client_ip=None) -> Outcome:
    """The console user these verified ID-token claims sign in as, with their membership made or updated
    to the role the claim mapping gives (just-in-time membership). Raises ``Refused`` (audited by the
    caller); what changed before a refusal (a membership ended) stays changed and audited.

    Identities are linked by the provider's ``sub``: a new one to the org's member with the same e-mail
    address, else to a new user. Never to an account outside the org (that would let an org's provider
    take over another org's member), and a mapping that gives no role ends the membership."""
    org = signin.org
    subject = str(claims.get("sub") or "")
    email = str(claims.get("email") or "").strip()
    if not subject:
        raise Refused("the identity provider sent no subject")
    domain = email.rpartition("@")[2].lower()
    if not email or domain not in set(signin.domains):
        raise Refused(
            f"the address {email or '(none)'} is not of a domain {org.name} allows", subject=subject
        )
    role = signin.role_for(claims)
    with transaction.atomic():
        result = _admit(org, subject, email, role, claims, client_ip)
    if isinstance(result, Refused):
        raise result
    return result


def _admit(org, subject: str, email: str, role: str, claims: dict, client_ip) -> Outcome | Refused:
    User = get_user_model()
    # The org's admins first, locked, as every membership change does (the last-admin rule).
    admins = list(
        Membership.objects.select_for_update()
        .filter(org=org, role=Role.ADMIN)
        .order_by("pk")
        .values_list("user_id", flat=True)
    )
    identity = SsoIdentity.objects.select_related("user").filter(org=org, subject=subject).first()
    if identity is not None:
        user = identity.user
    else:
        user = (
            User.objects.filter(memberships__org=org, email__iexact=email)
            .exclude(sso_identities__org=org)
            .order_by("pk")
            .first()
        )
        if user is None:
            if User.objects.filter(email__iexact=email).exists():
                return Refused(
                    f"an account with the address {email} already exists: ask an admin of {org.name} to "
                    "invite it, then sign in with SSO again",
                    subject=subject,
                )
            if role == NO_ACCESS:
                return Refused(f"the identity provider gives {email} no role in {org.name}", subject=subject)
            user = User(username=_new_username(claims, email), email=email)
            user.set_unusable_password()
            user.save()
        identity = SsoIdentity.objects.create(org=org, subject=subject, user=user, email=email)
    if not user.is_active:
        return Refused("this account is disabled", user=user, subject=subject)
    identity.last_sign_in_at = timezone.now()
    identity.email = email
    identity.save(update_fields=["last_sign_in_at", "email"])
    membership = Membership.objects.select_for_update().filter(org=org, user=user).first()
    old_role = membership.role if membership else ""
    name = user.get_username()
    if role == NO_ACCESS:
        if membership is not None and not (old_role == Role.ADMIN and admins == [user.pk]):
            membership.delete()
            audit(
                org,
                user,
                "member.remove",
                target=name,
                detail="by single sign-on: the provider gives no role",
                client_ip=client_ip,
            )
        return Refused(
            f"the identity provider gives {email} no role in {org.name}", user=user, subject=subject
        )
    if membership is None:
        Membership.objects.create(org=org, user=user, role=role)
        audit(
            org,
            user,
            "member.join",
            target=name,
            detail=f"role={role} by single sign-on",
            client_ip=client_ip,
        )
        return Outcome(user, role, True, "")
    if role != old_role:
        if old_role == Role.ADMIN and admins == [user.pk]:
            # The org keeps an admin: the last one is not demoted, whatever the provider says.
            audit(
                org,
                user,
                "member.role",
                target=name,
                outcome=AuditLog.Outcome.DENIED,
                detail=f"by single sign-on: {old_role} -> {role} refused, the last admin",
                client_ip=client_ip,
            )
            return Outcome(user, old_role, False, old_role)
        Membership.objects.filter(pk=membership.pk).update(role=role)
        audit(
            org,
            user,
            "member.role",
            target=name,
            detail=f"by single sign-on: {old_role} -> {role}",
            client_ip=client_ip,
        )
    return Outcome(user, role, False, old_role)
