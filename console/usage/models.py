"""Usage over time, kept by the console where the service has no history (console/usage/sampler.py).

A ``Sample`` is one project's figures for one interval: what happened in it (sessions started and ended,
browser seconds, invocations finished, refusals at the cap) and what stood at its end (sessions running
and in standby, pools, capacity used and the cap). ``raw`` samples are one per ``USAGE_SAMPLE_SECONDS``;
after ``USAGE_RAW_HOURS`` they are folded into ``hour`` samples (sums of what happened, the peak and the
mean of what stood), kept ``USAGE_RETENTION_DAYS``. The unique (org, project, resolution, interval start)
makes a second writer of one interval fail, whatever the number of workers.
"""

from __future__ import annotations

from django.db import models

from console.accounts.models import Organization


class Sample(models.Model):
    class Resolution(models.TextChoices):
        RAW = "raw"
        HOUR = "hour"

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="usage_samples")
    project_id = models.CharField(max_length=200, blank=True)  # "" = the org's default project
    resolution = models.CharField(max_length=8, choices=Resolution.choices, default=Resolution.RAW)
    interval_start = models.DateTimeField()
    seconds = models.PositiveIntegerField()
    # What happened in the interval.
    sessions_started = models.PositiveIntegerField(default=0)
    sessions_ended = models.PositiveIntegerField(default=0)
    headful_seconds = models.FloatField(default=0)
    headless_seconds = models.FloatField(default=0)
    invocations_succeeded = models.PositiveIntegerField(default=0)
    invocations_failed = models.PositiveIntegerField(default=0)
    refusals = models.PositiveIntegerField(default=0)
    # What stood at its end (an hour sample: the peak of capacity_used, the mean of the others).
    running = models.PositiveIntegerField(default=0)
    standby = models.PositiveIntegerField(default=0)
    capacity_used = models.PositiveIntegerField(default=0)
    cap = models.PositiveIntegerField(null=True, blank=True)
    pool_size = models.PositiveIntegerField(default=0)
    pool_acquired = models.PositiveIntegerField(default=0)
    invocations_running = models.PositiveIntegerField(default=0)
    complete = models.BooleanField(default=True)  # False: a list was cut at its bound

    class Meta:
        ordering = ["interval_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["org", "project_id", "resolution", "interval_start"], name="one_sample_per_interval"
            )
        ]
        indexes = [models.Index(fields=["org", "project_id", "interval_start"])]

    def __str__(self):
        return f"{self.org_id}/{self.project_id} {self.resolution} {self.interval_start:%Y-%m-%d %H:%M}"


class Refusal(models.Model):
    """A create the service refused at a cap (429) as the console saw it: the usage page counts them."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="cap_refusals")
    project_id = models.CharField(max_length=200, blank=True)
    cap = models.CharField(max_length=64)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self):
        return f"{self.org_id}/{self.project_id} {self.cap} at {self.at:%Y-%m-%d %H:%M}"
