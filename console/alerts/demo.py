"""The Demo organization's alert rules (``manage.py demo``): on the in-console channel, so once the worker's
first round has run the bell shows the demo tenant's logins that need a human. Idempotent."""

from __future__ import annotations

from console.alerts import builtins, kinds
from console.alerts.models import Rule

RULES = [
    ("Logins that need a human", kinds.AUTH_NEEDS_HUMAN, "critical"),
    ("Browsers that crash", kinds.SESSION_CRASHED, "warning"),
    ("Failing invocations", kinds.INVOCATION_FAILED, "warning"),
    ("Pools with no browser left", kinds.POOL_EXHAUSTED, "warning"),
]


def rules(org) -> list[Rule]:
    builtins.ensure(org)
    console = builtins.console_channel(org)
    made = []
    for name, kind, severity in RULES:
        rule, created = Rule.objects.get_or_create(
            org=org, name=name, defaults={"kind": kind, "severity": severity}
        )
        if created:
            rule.channels.add(console)
        made.append(rule)
    return made
