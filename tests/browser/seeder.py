"""The hands of a browser test inside a running console's database: one long-lived process per console.

Started by ``tests/browser/conftest.py`` with the console's own environment (the same database file and
keys), it reads one JSON request per line on stdin and answers one JSON line on stdout, so a test makes an
organization of its own, signs a user in or removes a membership in milliseconds rather than paying for a
``manage.py shell`` start each time. Test code only; the console never imports it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from datetime import timedelta

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
django.setup()

from django.conf import settings  # noqa: E402  (after django.setup())
from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.hashers import make_password  # noqa: E402
from django.contrib.sessions.models import Session  # noqa: E402
from django.db import transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from console.accounts.models import ControlLease, Membership, Organization  # noqa: E402
from console.alerts import builtins as alert_builtins  # noqa: E402
from console.alerts import rounds as alert_rounds  # noqa: E402
from console.alerts.models import Alert, Rule  # noqa: E402
from console.signin.models import OrgSignIn, SsoDomain  # noqa: E402

User = get_user_model()
# One hash for every user a test makes (the console's own hasher, Argon2): the password is the same, and
# hashing it once per user would cost a tenth of a second each.
PASSWORD_HASH = make_password(os.environ["DEMO_PASSWORD"])


@transaction.atomic
def team(slug: str, name: str, base_url: str, api_key: str, users: dict[str, str]) -> dict:
    """An organization bound to a sandbox tenant, and a member per ``users`` entry (username: role)."""
    org = Organization(slug=slug, name=name, service_base_url=base_url)
    org.set_api_key(api_key)
    org.save()
    for username, role in users.items():
        user, _ = User.objects.get_or_create(
            username=username, defaults={"email": f"{username}@example.com", "password": PASSWORD_HASH}
        )
        Membership.objects.update_or_create(user=user, org=org, defaults={"role": role})
    return {"org_id": org.pk}


def sign_in(username: str) -> dict:
    """A signed-in Django session of the user, as the login form would leave it: its cookie."""
    client = Client()
    client.force_login(User.objects.get(username=username))
    return {"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value}


def add_member(username: str, slug: str, role: str) -> dict:
    user = User.objects.get(username=username)
    Membership.objects.update_or_create(
        user=user, org=Organization.objects.get(slug=slug), defaults={"role": role}
    )
    return {}


def remove_membership(username: str, slug: str) -> dict:
    _, removed = Membership.objects.filter(user__username=username, org__slug=slug).delete()
    return {"removed": removed.get("accounts.Membership", 0)}  # (not what went with it: a control lease)


def set_role(username: str, slug: str, role: str) -> dict:
    changed = Membership.objects.filter(user__username=username, org__slug=slug).update(role=role)
    return {"changed": changed}


def flush_sessions(username: str) -> dict:
    """What "sign out everywhere" does: every Django session of the user is deleted."""
    user = User.objects.get(username=username)
    gone = [s.pk for s in Session.objects.all() if str(s.get_decoded().get("_auth_user_id")) == str(user.pk)]
    Session.objects.filter(pk__in=gone).delete()
    return {"flushed": len(gone)}


def alert_rule(slug: str, kind: str, name: str = "") -> dict:
    """A rule of the organization on its in-console channel."""
    org = Organization.objects.get(slug=slug)
    rule = Rule.objects.create(org=org, kind=kind, name=name or kind)
    rule.channels.add(alert_builtins.console_channel(org))
    return {"rule_id": rule.pk}


_slots = iter(range(1, 10**9))


def evaluate_alerts(slug: str) -> dict:
    """One evaluation round of the organization, as the worker runs it (its deliveries left to a worker)."""
    org = Organization.objects.get(slug=slug)
    record = alert_rounds.run(org.pk, next(_slots), lambda delivery: None)
    firing = Alert.objects.filter(org=org, state=Alert.State.FIRING).count()
    return {"state": record.state, "notes": record.notes, "firing": firing}


def sso(slug: str, **values) -> dict:
    """The organization's sign-in policy and single sign-on (console/signin): ``values`` as the settings
    page writes them (``client_secret`` in clear, ``domains`` a list, ``break_glass`` a username)."""
    org = Organization.objects.get(slug=slug)
    signin = OrgSignIn.objects.filter(org=org).first() or OrgSignIn(org=org)
    for name, value in values.items():
        if name == "client_secret":
            signin.set_client_secret(value)
        elif name == "domains":
            SsoDomain.objects.filter(org=org).delete()
            SsoDomain.objects.bulk_create([SsoDomain(org=org, domain=d) for d in value])
        elif name == "break_glass":
            signin.break_glass = User.objects.get(username=value) if value else None
        else:
            setattr(signin, name, value)
    signin.save()
    return {}


def member(slug: str, email: str) -> dict:
    """The membership of the user with this address in the org: its username and role, or nulls."""
    row = Membership.objects.filter(org__slug=slug, user__email__iexact=email).select_related("user").first()
    return {"username": row.user.username, "role": row.role} if row else {"username": None, "role": None}


def expire_control(slug: str, session_id: str) -> dict:
    """The session's control lease as it is once its time ran out (a settable time, not a wait)."""
    gone = timezone.now() - timedelta(seconds=1)
    rows = ControlLease.objects.filter(org__slug=slug, session_id=session_id)
    return {"expired": rows.update(expires_at=gone)}


def control_holder(slug: str, session_id: str) -> dict:
    """Who holds the session's control lease in the database (its user's name), if any row."""
    rows = ControlLease.objects.filter(org__slug=slug, session_id=session_id).select_related("holder")
    lease = rows.first()
    return {"holder": lease.holder.username if lease else None}


def set_active(username: str, active: bool) -> dict:
    return {"changed": User.objects.filter(username=username).update(is_active=active)}


COMMANDS = {
    f.__name__: f
    for f in (
        team,
        sign_in,
        add_member,
        remove_membership,
        set_role,
        flush_sessions,
        alert_rule,
        evaluate_alerts,
        sso,
        member,
        set_active,
        expire_control,
        control_holder,
    )
}


def main() -> None:
    answers = sys.stdout
    sys.stdout = sys.stderr  # whatever Django or a command prints never mixes with the answers
    for line in sys.stdin:
        request = json.loads(line)
        try:
            with contextlib.redirect_stdout(sys.stderr):
                answer = {"ok": COMMANDS[request["command"]](**request.get("args", {}))}
        except Exception as exc:  # the test reads the failure; the process lives on for the next request
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
