"""The worker's tasks (django-tasks, database backend) and the alerts' periodic jobs.

- every ``ALERTS_EVALUATION_SECONDS``: one ``evaluate`` task per organization for that slot;
- every ``SWEEP_SECONDS``: ``sweep`` sends what is due (retries, deliveries whose worker died) and prunes;
- a transition enqueues ``deliver`` for each new delivery in its own transaction (state.notify), so it is
  sent at once; the sweep is the safety net.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from django_tasks import task
from django_tasks_db.models import DBTaskResult

from console.accounts.models import Organization
from console.alerts import delivery, rounds
from console.alerts.models import Delivery
from console.worker import periodic

SWEEP_SECONDS = 5.0
# Finished task rows are kept this long (the queue's history), then deleted by the sweep.
KEEP_TASKS = timedelta(days=1)
PRUNE_EVERY = 720  # sweeps (an hour at 5 s)


@task(priority=10)
def deliver(delivery_id: str) -> bool:
    return delivery.deliver(delivery_id)


@task()
def evaluate(org_id: int, slot: int) -> str:
    record = rounds.run(org_id, slot, enqueue_delivery)
    return record.state if record else "taken"


@task(priority=5)
def sweep(slot: int) -> int:
    handled = delivery.deliver_due()
    if slot % PRUNE_EVERY == 0:
        DBTaskResult.objects.filter(
            status__in=["SUCCESSFUL", "FAILED"], finished_at__lt=timezone.now() - KEEP_TASKS
        ).delete()
    return handled


def enqueue_delivery(row: Delivery) -> None:
    deliver.enqueue(str(row.pk))


def enqueue_rounds(slot: int) -> None:
    for org_id in Organization.objects.values_list("pk", flat=True):
        evaluate.enqueue(org_id, slot)


periodic.register("alerts.evaluate", lambda: settings.ALERTS_EVALUATION_SECONDS, enqueue_rounds)
periodic.register("alerts.sweep", lambda: SWEEP_SECONDS, lambda slot: sweep.enqueue(slot))
