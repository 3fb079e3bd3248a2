"""The usage sampler (console/usage/sampler.py): one row per project and interval whatever the number of
workers, figures that follow the sandbox's clock, hours folded after two days, nothing past 90 days."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from asgiref.sync import async_to_sync
from django.utils import timezone

from console.usage import sampler
from console.usage.models import Refusal, Sample
from console.worker.models import Beat
from tests.alerts.test_worker import until, worker


def minute(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def default_project(tenant) -> str:
    return tenant.call("GET", "/org/projects", params={"name": "default"}).json()[0]["id"]


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def test_two_workers_write_one_row_per_interval(org, tenant, settings):
    tenant.call("POST", "/browsers", json={"headless": True, "timeout_seconds": 3600})
    fast = {"USAGE_SAMPLE_SECONDS": "1", "ALERTS_EVALUATION_SECONDS": "3600"}
    with worker("u1", **fast), worker("u2", **fast):
        until(lambda: Sample.objects.filter(org=org).count() >= 5, what="five samples")
    rows = list(Sample.objects.filter(org=org).values_list("project_id", "interval_start"))
    assert len(rows) == len(set(rows))  # never two rows of one interval
    slots = list(Beat.objects.filter(name="usage.sample").values_list("slot", flat=True))
    assert len(slots) == len(set(slots))
    newest = Sample.objects.filter(org=org).last()
    assert newest.project_id == default_project(tenant) and newest.seconds == 1
    assert (newest.running, newest.capacity_used, newest.cap) == (1, 1, 500)


def test_a_second_sample_of_an_interval_writes_nothing(org, tenant):
    start = minute(timezone.now()) - timedelta(minutes=1)
    assert async_to_sync(sampler.sample_org)(org, start) == 1
    assert async_to_sync(sampler.sample_org)(org, start) == 0
    assert Sample.objects.filter(org=org).count() == 1


def test_it_counts_what_happened_in_the_interval_by_the_services_clock(org, tenant, settings):
    settings.USAGE_SAMPLE_SECONDS = 60
    start = minute(timezone.now()) - timedelta(days=3)
    tenant.set_clock(rfc3339(start))
    headful = tenant.call("POST", "/browsers", json={"timeout_seconds": 3600}).json()
    created = time.monotonic()
    tenant.call("POST", "/browsers", json={"headless": True, "timeout_seconds": 3600})
    tenant.advance(30)
    tenant.call("DELETE", f"/browsers/{headful['session_id']}")
    # The tenant's clock runs meanwhile: a loaded machine adds its real seconds to the 30 s moved.
    slack = time.monotonic() - created
    tenant.advance(30)
    Refusal.objects.create(org=org, project_id=default_project(tenant), cap="max_concurrent_sessions")
    Refusal.objects.filter(org=org).update(at=start + timedelta(seconds=10))
    assert async_to_sync(sampler.sample_org)(org, start) == 1
    row = Sample.objects.get(org=org)
    assert (row.sessions_started, row.sessions_ended, row.refusals) == (2, 1, 1)
    assert 29 <= row.headful_seconds <= 31 + slack  # created at the start, deleted 30 s later
    assert 59 - slack <= row.headless_seconds <= 60  # created just after the start
    assert (row.running, row.capacity_used) == (1, 1)
    # The next interval: nothing started or ended, the headless session ran through it.
    tenant.advance(60)
    async_to_sync(sampler.sample_org)(org, start + timedelta(minutes=1))
    later = Sample.objects.filter(org=org).last()
    assert (later.sessions_started, later.sessions_ended, later.headful_seconds) == (0, 0, 0)
    assert 59 <= later.headless_seconds <= 60


def test_it_folds_old_samples_into_hours_and_forgets_past_the_retention(org):
    now = timezone.now().replace(minute=30, second=0, microsecond=0)
    hour = now.replace(minute=0) - timedelta(days=3)
    for i, (used, started) in enumerate([(3, 1), (7, 2), (5, 0)]):
        Sample.objects.create(
            org=org,
            project_id="p",
            interval_start=hour + timedelta(minutes=i),
            seconds=60,
            sessions_started=started,
            capacity_used=used,
            cap=10,
            running=used,
            headless_seconds=60,
        )
    recent = Sample.objects.create(
        org=org, project_id="p", interval_start=now - timedelta(hours=1), seconds=60
    )
    Sample.objects.create(
        org=org, project_id="p", resolution="hour", interval_start=now - timedelta(days=91), seconds=3600
    )
    folded, deleted = sampler.prune(now)
    assert (folded, deleted) == (3, 1)
    hourly = Sample.objects.get(org=org, resolution="hour")
    assert hourly.interval_start == hour and hourly.seconds == 180
    assert (hourly.sessions_started, hourly.capacity_used, hourly.cap, hourly.running) == (3, 7, 10, 5)
    assert hourly.headless_seconds == 180
    assert list(Sample.objects.filter(org=org, resolution="raw")) == [recent]
