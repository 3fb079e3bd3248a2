"""The usage sampler's periodic jobs on the worker (django-tasks, console/worker/periodic.py), as the alerts'
evaluation is scheduled: every ``USAGE_SAMPLE_SECONDS`` one ``sample`` task per organization for the
interval that just ended; every hour ``prune`` folds old samples into hours and drops what is past retention.
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.conf import settings
from django_tasks import task

from console.accounts.models import Organization
from console.usage import sampler
from console.worker import periodic

PRUNE_SECONDS = 3600.0


@task()
def sample(org_id: int, slot: int) -> int:
    org = Organization.objects.filter(pk=org_id).first()
    if org is None or not org.service_base_url:
        return 0
    return async_to_sync(sampler.sample_org)(org, sampler.interval_of(slot))


@task(priority=1)
def prune(slot: int) -> int:
    folded, deleted = sampler.prune()
    return folded + deleted


def enqueue_samples(slot: int) -> None:
    for org_id in Organization.objects.values_list("pk", flat=True):
        sample.enqueue(org_id, slot)


periodic.register("usage.sample", lambda: getattr(settings, "USAGE_SAMPLE_SECONDS", 60), enqueue_samples)
periodic.register("usage.prune", lambda: PRUNE_SECONDS, lambda slot: prune.enqueue(slot))
