"""Alert states: pending → firing → resolved, and the notifications each transition writes.

``apply`` runs after a round's reads, in one transaction per rule that first locks the rule's active alerts
(``select_for_update``; SQLite's IMMEDIATE transactions take the write lock at BEGIN). A transition and the
notification it causes (and a delivery per channel, and the worker's task to send it) are written in that
same transaction, numbered per alert (``Notification.seq``, unique): a transition is said once, whatever
the number of workers, and nothing said is lost if the process dies after the commit.

- A subject whose condition holds becomes a pending alert; it fires once it has held ``for_seconds``.
- A firing alert is said again every ``repeat_minutes`` until it is acknowledged or resolved.
- It resolves only when a round that could read its data no longer finds it (never by a timer alone,
  never because a read failed); the resolve is said when the firing was.
- A silence covering the alert keeps the notification from channels (it is written, marked silenced); once
  the silence ends, a firing alert that was never said is said at the next round.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.urls import reverse

from console.alerts.evaluate import Finding, Outcome
from console.alerts.models import Alert, Channel, Delivery, Notification, Rule, Silence

SUBJECT_URLS = {
    "auth": ("auth:detail", "connection_id"),
    "session": ("browsers:detail", "session_id"),
    "pool": ("pools:detail", "pool_id"),
    "proxy": ("proxies:detail", "proxy_id"),
    "invocation": ("invocations:detail", "invocation_id"),
    "deployment": ("deployments:detail", "deployment_id"),
    "project": ("projects:detail", "project_id"),
    "api_key": ("api_keys:list", None),
    "projects": ("projects:list", None),
    "sessions": ("browsers:list", None),
    "audit_logs": ("audit_logs:list", None),
    "settings": ("settings", None),
}


def subject_path(org_slug: str, subject_kind: str, subject_id: str) -> str:
    """The console path of what an alert is about ("" when there is none)."""
    name, arg = SUBJECT_URLS.get(subject_kind, (None, None))
    if name is None or (arg and not subject_id):
        return ""
    kwargs = {"org_slug": org_slug, **({arg: subject_id} if arg else {})}
    try:
        return reverse(name, kwargs=kwargs)
    except Exception:  # an id no console URL can hold (a "/"): no link
        return ""


def alert_path(org_slug: str, alert_id: int) -> str:
    return reverse("alerts:detail", kwargs={"org_slug": org_slug, "alert_id": alert_id})


def absolute(path: str) -> str:
    return settings.CONSOLE_BASE_URL.rstrip("/") + path if path else ""


def payload(alert: Alert, event: str, seq: int) -> dict:
    """What channels say: the alert as it is now (documented in docs/alerts-webhooks.md)."""
    org, rule = alert.org, alert.rule
    return {
        "version": 1,
        "event": event,
        "seq": seq,
        "organization": {"slug": org.slug, "name": org.name},
        "rule": {
            "id": rule.pk,
            "name": rule.name,
            "kind": rule.kind,
            "severity": rule.severity,
            "project": rule.project_id or None,
        },
        "alert": {
            "id": alert.pk,
            "state": alert.state,
            "subject": {
                "key": alert.subject_key,
                "label": alert.subject_label,
                "kind": alert.subject_kind or None,
                "id": alert.subject_id or None,
                "url": absolute(subject_path(org.slug, alert.subject_kind, alert.subject_id)) or None,
            },
            "summary": alert.summary,
            "values": alert.values,
            "started_at": _iso(alert.started_at),
            "fired_at": _iso(alert.fired_at),
            "resolved_at": _iso(alert.resolved_at),
            "acknowledged_at": _iso(alert.acknowledged_at),
            "url": absolute(alert_path(org.slug, alert.pk)),
        },
    }


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def silence_for(alert: Alert, silences: list[Silence], now: datetime) -> Silence | None:
    return next((s for s in silences if s.covers(alert, now)), None)


def active_silences(org_id: int, now: datetime) -> list[Silence]:
    return list(Silence.objects.filter(org_id=org_id, starts_at__lte=now, ends_at__gt=now))


def notify(alert: Alert, event: str, now: datetime, silences: list[Silence], enqueue) -> Notification:
    """Write the alert's next notification and one delivery per enabled channel of its rule (unless a
    silence covers it). Runs inside the caller's transaction, with the alert locked."""
    seq = alert.notified_seq + 1
    silence = silence_for(alert, silences, now)
    note = Notification.objects.create(
        alert=alert,
        org_id=alert.org_id,
        event=event,
        seq=seq,
        payload=payload(alert, event, seq),
        silenced_by=silence,
        created_at=now,
    )
    alert.notified_seq = seq
    if silence is None:
        alert.last_notified_at = now
        deliver_to(note, list(alert.rule.channels.filter(enabled=True)), now, enqueue)
    return note


def deliver_to(note: Notification, channels: list[Channel], now: datetime, enqueue) -> list[Delivery]:
    made = []
    for channel in channels:
        if channel.kind == Channel.Kind.CONSOLE:
            # The console shows every alert from the database itself: nothing to send.
            made.append(
                Delivery.objects.create(
                    notification=note, channel=channel, state=Delivery.State.SENT, sent_at=now, created_at=now
                )
            )
            continue
        delivery = Delivery.objects.create(
            notification=note, channel=channel, next_attempt_at=now, created_at=now
        )
        enqueue(delivery)
        made.append(delivery)
    return made


def _fire(alert: Alert, now: datetime, silences, enqueue) -> None:
    alert.state = Alert.State.FIRING
    alert.fired_at = now
    notify(alert, Notification.Event.FIRING, now, silences, enqueue)


def _still_firing(alert: Alert, rule: Rule, now: datetime, silences, enqueue) -> None:
    """Say a firing alert again when due: first said after its silence ended, or repeated."""
    if alert.acknowledged_at is not None or silence_for(alert, silences, now) is not None:
        return
    if alert.last_notified_at is None:
        notify(alert, Notification.Event.FIRING, now, silences, enqueue)
    elif rule.repeat_minutes and alert.last_notified_at + timedelta(minutes=rule.repeat_minutes) <= now:
        notify(alert, Notification.Event.REPEAT, now, silences, enqueue)


def _update(alert: Alert, finding: Finding, now: datetime) -> None:
    alert.subject_label = finding.label[:300]
    alert.summary = finding.summary[:500]
    alert.values = finding.values
    alert.subject_kind = finding.subject_kind
    alert.subject_id = finding.subject_id[:200]
    alert.last_seen_at = now


def apply(rule: Rule, outcome: Outcome, now: datetime, enqueue) -> dict[str, int]:
    """Move the rule's alerts to what the round found; counts of what changed (for the round's record)."""
    changed = {"new": 0, "fired": 0, "resolved": 0, "notified": 0}
    if outcome.findings is None:
        return changed
    with transaction.atomic():
        silences = active_silences(rule.org_id, now)
        active = {
            a.subject_key: a
            for a in Alert.objects.select_for_update()
            .select_related("org", "rule")
            .filter(rule=rule, state__in=Alert.ACTIVE)
        }
        found = {f.key: f for f in outcome.findings}
        for key, finding in found.items():
            alert = active.get(key)
            before = alert.notified_seq if alert else 0
            if alert is None:
                alert = Alert(org_id=rule.org_id, rule=rule, subject_key=key[:300], started_at=now)
                alert.org, alert.rule = rule.org, rule
                _update(alert, finding, now)
                alert.save()
                changed["new"] += 1
            else:
                _update(alert, finding, now)
            if (
                alert.state == Alert.State.PENDING
                and alert.started_at + timedelta(seconds=rule.for_seconds) <= now
            ):
                _fire(alert, now, silences, enqueue)
                changed["fired"] += 1
            elif alert.state == Alert.State.FIRING:
                _still_firing(alert, rule, now, silences, enqueue)
            changed["notified"] += alert.notified_seq - before
            alert.save()
        for key, alert in active.items():
            if key in found or (outcome.seen is not None and key not in outcome.seen):
                continue
            was_said = alert.state == Alert.State.FIRING and alert.last_notified_at is not None
            alert.state = Alert.State.RESOLVED
            alert.resolved_at = now
            if was_said:
                notify(alert, Notification.Event.RESOLVED, now, silences, enqueue)
                changed["notified"] += 1
            alert.save()
            changed["resolved"] += 1
    return changed


def retire(rule: Rule, now: datetime) -> int:
    """A rule disabled or deleted: its active alerts end (resolved, without notifications: nobody watches)."""
    return Alert.objects.filter(rule=rule, state__in=Alert.ACTIVE).update(
        state=Alert.State.RESOLVED, resolved_at=now, summary="The rule was turned off."
    )
