"""The audit rows of a user's own sign-in events: every organization they belong to gets one, since a
sign-in or a second factor is the user's, not one org's (the org-level changes are audited in views.py and
flows.py)."""

from __future__ import annotations

from allauth.account.internal.flows.login import get_authentication_records
from allauth.account.signals import user_logged_in
from allauth.mfa import signals as mfa_signals
from django.dispatch import receiver

from console.accounts.models import AuditLog, Membership
from console.signin import policy


def audit_user(request, user, action: str, *, detail: str = "", outcome: str = AuditLog.Outcome.OK) -> None:
    client_ip = request.META.get("REMOTE_ADDR") or None if request is not None else None
    AuditLog.objects.bulk_create(
        AuditLog(
            org_id=org_id,
            actor=user,
            actor_username=user.get_username(),
            action=action,
            target_id=user.get_username(),
            outcome=outcome,
            detail=detail[:500],
            client_ip=client_ip,
        )
        for org_id in Membership.objects.filter(user=user).values_list("org_id", flat=True)
    )


@receiver(user_logged_in)
def on_signed_in(sender, request, user, **kwargs):
    methods = [r.get("method") for r in get_authentication_records(request, user)]
    how = "single sign-on" if request.session.get(policy.METHOD) == policy.METHOD_SSO else "password"
    factors = [r.get("type") for r in get_authentication_records(request, user) if r.get("method") == "mfa"]
    if factors:
        how += " and " + factors[-1].replace("_", " ")
    audit_user(request, user, "signin", detail=how if methods else "")


@receiver(mfa_signals.authenticator_added)
def on_factor_added(sender, request, user, authenticator, **kwargs):
    audit_user(request, user, "signin.mfa.add", detail=authenticator.type)


@receiver(mfa_signals.authenticator_removed)
def on_factor_removed(sender, request, user, authenticator, **kwargs):
    audit_user(request, user, "signin.mfa.remove", detail=authenticator.type)


@receiver(mfa_signals.authenticator_reset)
def on_factor_reset(sender, request, user, authenticator, **kwargs):
    audit_user(request, user, "signin.mfa.reset", detail=authenticator.type)


@receiver(mfa_signals.authentication_failed)
def on_factor_failed(sender, request, user, authenticator, **kwargs):
    audit_user(request, user, "signin.mfa.failed", detail=authenticator.type, outcome=AuditLog.Outcome.DENIED)
