"""One evaluation round of one organization: read (evaluate.py), then move alert states (state.py).

A round runs only when it is the first for its (organization, slot) (``EvaluationRound`` is unique on it)
and holds the organization's lease (``OrgEvaluation``: a conditional update, atomic on every database), so
two workers never evaluate the same organization at once, and a round slower than the interval makes the
next one step aside (and say so) rather than overlap it. What a round could not read is written on it and
shown on the alerts page.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from console.accounts.models import Organization
from console.alerts import builtins, evaluate, state
from console.alerts.delivery import worker_id
from console.alerts.models import EvaluationRound, OrgEvaluation, Rule

log = logging.getLogger("console.alerts")

# Rounds kept per organization (the newest): the alerts page shows the last; older ones tell a story.
KEEP_ROUNDS = 200


def take_lease(org: Organization, now) -> bool:
    try:
        with transaction.atomic():
            OrgEvaluation.objects.get_or_create(org=org)
    except IntegrityError:
        pass
    until = now + timedelta(seconds=2 * settings.ALERTS_ROUND_SECONDS + 30)
    taken = (
        OrgEvaluation.objects.filter(org=org)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(lease_until=until, worker=worker_id())
    )
    return taken == 1


def release_lease(org: Organization) -> None:
    OrgEvaluation.objects.filter(org=org, worker=worker_id()).update(lease_until=None)


def run(org_id: int, slot: int, enqueue) -> EvaluationRound | None:
    """Evaluate one organization for one slot; None when another worker has (or had) that round."""
    org = Organization.objects.filter(pk=org_id).first()
    if org is None:
        return None
    try:
        with transaction.atomic():
            record = EvaluationRound.objects.create(org=org, slot=slot, worker=worker_id())
    except IntegrityError:
        return None
    now = timezone.now()
    if not take_lease(org, now):
        record.state, record.finished_at = EvaluationRound.State.INCOMPLETE, timezone.now()
        record.notes = ["skipped: the previous round of this organization was still running"]
        record.save(update_fields=["state", "finished_at", "notes"])
        return record
    try:
        builtins.ensure(org)
        rules = list(Rule.objects.filter(org=org, enabled=True).select_related("org"))
        outcomes, reader = async_to_sync(evaluate.observe)(org.service(), org.pk, rules, now)
        notes = list(reader.notes)
        for rule in rules:
            outcome = outcomes.get(rule.pk)
            if outcome is None:
                continue
            if outcome.note:
                notes.append(f"{rule.name}: {outcome.note}")
            state.apply(rule, outcome, now, enqueue)
        record.requests = reader.requests
        record.notes = notes[:50]
        record.remarks = reader.remarks[:50]
        record.state = EvaluationRound.State.INCOMPLETE if notes else EvaluationRound.State.OK
    except Exception as exc:
        log.exception("the alert round of %s failed", org.slug)
        record.notes = [f"the round failed: {type(exc).__name__}"]
        record.state = EvaluationRound.State.INCOMPLETE
        raise
    finally:
        record.finished_at = timezone.now()
        record.save(update_fields=["state", "finished_at", "notes", "remarks", "requests"])
        release_lease(org)
        stale = (
            EvaluationRound.objects.filter(org=org)
            .order_by("-slot")
            .values_list("slot", flat=True)[KEEP_ROUNDS:]
        )
        if stale:
            EvaluationRound.objects.filter(org=org, slot__lte=max(stale)).delete()
    return record
