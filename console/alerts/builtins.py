"""What every organization has: the in-console channel and the rule on the service itself.

Made when an organization is created (signals.py), by the migration for those that existed, and again by
every evaluation round, so no path (the admin, the shell, a restore) leaves an organization without them.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from console.alerts import kinds
from console.alerts.models import Channel, Rule

CONSOLE_CHANNEL_NAME = "Console"
SERVICE_RULE_NAME = "Service unreachable or refusing the key"
# One failed probe may be a blip (reads are retried already); two rounds apart is an outage.
SERVICE_RULE_FOR_SECONDS = 60


def console_channel(org, *, new: bool = False) -> Channel:
    """The organization's console channel, made if missing (``new``: see ``ensure``)."""
    if not new:
        channel = Channel.objects.filter(org=org, kind=Channel.Kind.CONSOLE).first()
        if channel is not None:
            return channel
    try:
        with transaction.atomic():
            return Channel.objects.create(org=org, kind=Channel.Kind.CONSOLE, name=CONSOLE_CHANNEL_NAME)
    except IntegrityError:  # made at the same moment by another process
        return Channel.objects.get(org=org, kind=Channel.Kind.CONSOLE)


def ensure(org, *, new: bool = False) -> Rule:
    """The organization's console channel and built-in rule (made if missing); the rule. ``new``: the
    organization has just been created, so neither can exist yet and the two lookups are skipped (a
    concurrent maker still ends on the unique constraints, as it does without it)."""
    channel = console_channel(org, new=new)
    if not new:
        rule = Rule.objects.filter(org=org, builtin=True).first()
        if rule is not None:
            return rule
    try:
        with transaction.atomic():
            rule = Rule.objects.create(
                org=org,
                kind=kinds.SERVICE,
                name=SERVICE_RULE_NAME,
                severity="critical",
                for_seconds=SERVICE_RULE_FOR_SECONDS,
                repeat_minutes=60,
                builtin=True,
            )
            rule.channels.add(channel)
            return rule
    except IntegrityError:
        return Rule.objects.get(org=org, builtin=True)
