"""Whether a signed-in session may use an organization: the one rule ``org_view`` and the stream guard apply.

Three refusals, in this order:

- ``SCOPE``: the session was signed in by an organization's single sign-on, and this is another
  organization. An identity provider vouches for its own organization only: an org admin who controls
  the provider must not reach the user's other organizations through it.
- ``SSO``: the organization requires single sign-on and this session did not come through its provider
  (its break-glass admin excepted).
- ``MFA``: the organization requires two-factor authentication and the user has no second factor (an
  authenticator app or a security key; recovery codes alone do not count), unless the session came through
  the organization's own single sign-on (its provider's sign-in, second factor included, is then what
  vouches: the console cannot see it, and a member made by single sign-on has no password to re-enter).

The session says how it was signed in (``METHOD``, ``SSO_ORGS``: written at sign-in by
``adapters.AccountAdapter.login``). Models only: imported by console/web and console/live, never the
other way round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from allauth.mfa.models import Authenticator
from django.db.models import Exists, OuterRef, QuerySet

SCOPE = "scope"
SSO = "sso"
MFA = "mfa"

# Session keys: how this session was signed in, and the organizations whose provider signed it in.
METHOD = "signin_method"
SSO_ORGS = "signin_sso_orgs"
METHOD_SSO = "sso"
METHOD_PASSWORD = "password"  # noqa: S105  (a name, not a password)

SECOND_FACTORS = (Authenticator.Type.TOTP, Authenticator.Type.WEBAUTHN)


@dataclass(frozen=True)
class Policy:
    mfa_required: bool = False
    sso_required: bool = False
    break_glass_id: int | None = None

    @classmethod
    def of(cls, org) -> Policy:
        """The policy of an Organization loaded with ``select_related("signin")`` (none: an empty one)."""
        signin = getattr(org, "signin", None)
        if signin is None:
            return cls()
        return cls(signin.mfa_required, signin.sso_required and signin.sso_ready, signin.break_glass_id)


def refusal(policy: Policy, *, user_id: int, org_id: int, has_second_factor: bool, session: Mapping) -> str:
    """Why this session may not use the org (SCOPE, SSO, MFA), or "" when it may."""
    sso_orgs = session.get(SSO_ORGS) or []
    if session.get(METHOD) == METHOD_SSO and org_id not in sso_orgs:
        return SCOPE
    if policy.sso_required and org_id not in sso_orgs and user_id != policy.break_glass_id:
        return SSO
    # A session of this org's own provider is exempt: the provider's sign-in (and its second factor) vouches.
    if policy.mfa_required and not has_second_factor and org_id not in sso_orgs:
        return MFA
    return ""


REASONS = {
    SCOPE: "this session was signed in by another organization's single sign-on",
    SSO: "the organization requires single sign-on",
    MFA: "the organization requires two-factor authentication",
}

# What the stream guard reads with a membership row, in one query (``with_policy``).
FIELDS = (
    "org__signin__mfa_required",
    "org__signin__sso_required",
    "org__signin__sso_enabled",
    "org__signin__issuer_url",
    "org__signin__client_id",
    "org__signin__break_glass_id",
    "has_second_factor",
)


def with_policy(memberships: QuerySet) -> QuerySet:
    """Membership rows annotated with whether their user has a second factor (``FIELDS`` to read)."""
    factors = Authenticator.objects.filter(user_id=OuterRef("user_id"), type__in=SECOND_FACTORS)
    return memberships.annotate(has_second_factor=Exists(factors))


def policy_of_row(values) -> tuple[Policy, bool]:
    """The policy and the second-factor flag from a row's ``FIELDS`` values."""
    mfa_required, sso_required, sso_enabled, issuer, client_id, break_glass_id, has_factor = values
    sso_ready = bool(sso_enabled and issuer and client_id)
    return Policy(bool(mfa_required), bool(sso_required and sso_ready), break_glass_id), bool(has_factor)


def has_second_factor(user) -> bool:
    return Authenticator.objects.filter(user=user, type__in=SECOND_FACTORS).exists()


async def second_factor_users(org) -> set[int]:
    """The members of ``org`` who have a second factor (the members page's column)."""
    rows = Authenticator.objects.filter(user__memberships__org=org, type__in=SECOND_FACTORS).values_list(
        "user_id", flat=True
    )
    return {pk async for pk in rows}
