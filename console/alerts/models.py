"""Alerting state, all in the database so every console replica and worker agrees (docs/architecture.md).

- ``Rule``: what to watch in an organization (optionally one project), how bad it is, how long the
  condition must hold before it fires (``for_seconds``) and how often to say it again while it fires.
- ``Alert``: one per (rule, subject) while it is pending or firing (a partial unique constraint), then kept
  as history once resolved.
- ``Notification``: one per thing worth saying about an alert (firing, a repeat, resolved), numbered per
  alert (``seq``, unique): a transition is written once, in the transaction that makes it.
- ``Delivery``: a notification to one channel (unique per pair), claimed by one worker at a time under a
  lease; every try is a ``DeliveryAttempt`` with its status and latency.
- ``Silence``: a rule, a subject or everything kept quiet until a time. ``EvaluationRound``: one
  evaluation of an organization (unique per slot), and what it could not read.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from console.accounts import crypto
from console.accounts.models import Organization
from console.alerts import kinds


class Channel(models.Model):
    class Kind(models.TextChoices):
        CONSOLE = "console", "In the console"
        EMAIL = "email", "E-mail"
        WEBHOOK = "webhook", "Webhook"

    class Format(models.TextChoices):
        JSON = "json", "JSON (documented schema)"
        SLACK = "slack", "Slack-compatible"

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="alert_channels")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    name = models.CharField(max_length=100)
    enabled = models.BooleanField(default=True)
    # E-mail: addresses, one per line or comma-separated.
    addresses = models.TextField(blank=True)
    # Webhook: where to POST, the body's shape, and the signing secret (Fernet, never rendered).
    url = models.URLField(max_length=500, blank=True)
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.JSON)
    secret_encrypted = models.TextField(blank=True, editable=False)
    secret_last4 = models.CharField(max_length=4, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "name"]
        constraints = [
            # The in-console channel exists once per organization.
            models.UniqueConstraint(fields=["org"], condition=Q(kind="console"), name="one_console_channel"),
        ]

    def __str__(self):
        return f"{self.get_kind_display()}: {self.name}"

    def set_secret(self, secret: str) -> None:
        self.secret_encrypted = crypto.encrypt(secret)
        self.secret_last4 = secret[-4:]

    @property
    def secret(self) -> str:
        return crypto.decrypt(self.secret_encrypted) if self.secret_encrypted else ""

    @property
    def secret_hint(self) -> str:
        return f"••••{self.secret_last4}" if self.secret_encrypted else "(not set)"

    @property
    def address_list(self) -> list[str]:
        return [a.strip() for a in self.addresses.replace(",", "\n").splitlines() if a.strip()]

    @property
    def target(self) -> str:
        if self.kind == self.Kind.EMAIL:
            return ", ".join(self.address_list)
        if self.kind == self.Kind.WEBHOOK:
            return self.url
        return "the bell and the alerts page"


class Rule(models.Model):
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="alert_rules")
    kind = models.CharField(max_length=30, choices=kinds.CHOICES)
    name = models.CharField(max_length=100)
    # A service project id; blank: the organization's default project (org-wide kinds ignore it).
    project_id = models.CharField("project", max_length=100, blank=True)
    severity = models.CharField(max_length=10, choices=kinds.SEVERITIES, default="warning")
    threshold = models.PositiveIntegerField(null=True, blank=True)
    window_minutes = models.PositiveIntegerField(null=True, blank=True)
    for_seconds = models.PositiveIntegerField("pending for (seconds)", default=0)
    repeat_minutes = models.PositiveIntegerField("repeat every (minutes)", default=240)
    enabled = models.BooleanField(default=True)
    # The built-in rule (the service itself) cannot be deleted or disabled.
    builtin = models.BooleanField(default=False, editable=False)
    channels = models.ManyToManyField(Channel, blank=True, related_name="rules")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-builtin", "name"]
        constraints = [
            models.UniqueConstraint(fields=["org"], condition=Q(builtin=True), name="one_builtin_rule"),
        ]

    def __str__(self):
        return self.name

    @property
    def spec(self) -> kinds.Kind:
        return kinds.KINDS[self.kind]

    @property
    def effective_threshold(self) -> int | None:
        return self.threshold if self.threshold is not None else self.spec.threshold_default

    @property
    def effective_window(self) -> int | None:
        return self.window_minutes if self.window_minutes else self.spec.window_default


class Alert(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        FIRING = "firing", "Firing"
        RESOLVED = "resolved", "Resolved"

    ACTIVE = (State.PENDING, State.FIRING)

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="alerts")
    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="alerts")
    # What the alert is about: a stable key (kind:id), words for people, and what to link to.
    subject_key = models.CharField(max_length=300)
    subject_label = models.CharField(max_length=300)
    subject_kind = models.CharField(max_length=30, blank=True)
    subject_id = models.CharField(max_length=200, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    summary = models.CharField(max_length=500, blank=True)
    values = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(default=timezone.now)  # first seen (pending from)
    fired_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(default=timezone.now)
    last_notified_at = models.DateTimeField(null=True, blank=True)
    # The number of the last notification written for this alert (Notification.seq).
    notified_seq = models.PositiveIntegerField(default=0)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    ack_note = models.CharField(max_length=500, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["rule", "subject_key"],
                condition=Q(state__in=["pending", "firing"]),
                name="one_active_alert_per_subject",
            ),
        ]
        indexes = [models.Index(fields=["org", "state", "-started_at"])]

    def __str__(self):
        return f"{self.rule} — {self.subject_label} ({self.state})"

    @property
    def active(self) -> bool:
        return self.state in self.ACTIVE


class Notification(models.Model):
    class Event(models.TextChoices):
        FIRING = "firing", "Firing"
        REPEAT = "repeat", "Still firing"
        RESOLVED = "resolved", "Resolved"
        TEST = "test", "Test"

    alert = models.ForeignKey(
        Alert, null=True, blank=True, on_delete=models.CASCADE, related_name="notifications"
    )
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=10, choices=Event.choices)
    seq = models.PositiveIntegerField(default=0)
    # The alert as it was said (so a later change never rewrites what was sent).
    payload = models.JSONField(default=dict)
    # Kept quiet by a silence: written (the history says so), never delivered.
    silenced_by = models.ForeignKey(
        "Silence", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["alert", "seq"], condition=Q(alert__isnull=False), name="one_notification_per_seq"
            ),
        ]

    def __str__(self):
        return f"{self.get_event_display()} #{self.seq} of alert {self.alert_id}"


class Delivery(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "Waiting"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Gave up"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    notification = models.ForeignKey(Notification, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    # While SENDING: who holds it and until when; past it another worker takes it over.
    lease_until = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=64, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["notification", "channel"], name="one_delivery_per_channel"),
        ]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    def __str__(self):
        return f"{self.notification} to {self.channel} ({self.state})"


class DeliveryAttempt(models.Model):
    class Outcome(models.TextChoices):
        OK = "ok", "Delivered"
        REFUSED = "refused", "Refused"
        ERROR = "error", "Failed"
        INTERRUPTED = "interrupted", "Interrupted (worker stopped)"
        SENDING = "sending", "Sending…"

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    worker = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=12, choices=Outcome.choices, default=Outcome.SENDING)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-started_at", "-number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="one_attempt_per_number")]

    def __str__(self):
        return f"attempt {self.number} of {self.delivery_id}: {self.outcome}"


class Silence(models.Model):
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="alert_silences")
    # Both empty: everything in the organization. A subject silence keeps its rule too.
    rule = models.ForeignKey(Rule, null=True, blank=True, on_delete=models.CASCADE, related_name="silences")
    subject_key = models.CharField(max_length=300, blank=True)
    subject_label = models.CharField(max_length=300, blank=True)
    starts_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField()
    note = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-ends_at"]

    def __str__(self):
        return f"silence of {self.scope} until {self.ends_at:%Y-%m-%d %H:%M}"

    @property
    def scope(self) -> str:
        if self.subject_key:
            return f"{self.subject_label or self.subject_key} ({self.rule})"
        if self.rule_id:
            return f"rule “{self.rule}”"
        return "every alert"

    def covers(self, alert: Alert, now) -> bool:
        if not (self.starts_at <= now < self.ends_at):
            return False
        if self.rule_id and self.rule_id != alert.rule_id:
            return False
        return not self.subject_key or self.subject_key == alert.subject_key


class EvaluationRound(models.Model):
    class State(models.TextChoices):
        RUNNING = "running", "Running"
        OK = "ok", "Complete"
        INCOMPLETE = "incomplete", "Incomplete"

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="alert_rounds")
    slot = models.BigIntegerField()
    worker = models.CharField(max_length=64, blank=True)
    state = models.CharField(max_length=12, choices=State.choices, default=State.RUNNING)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    requests = models.PositiveIntegerField(default=0)
    # What could not be read or decided, in words (shown on the alerts page: the round is incomplete).
    notes = models.JSONField(default=list, blank=True)
    # What was read only in part, by design (the telemetry of some sessions, a backlog): said, not a failure.
    remarks = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-slot"]
        constraints = [models.UniqueConstraint(fields=["org", "slot"], name="one_round_per_slot")]

    def __str__(self):
        return f"round {self.slot} of {self.org_id} ({self.state})"


class OrgEvaluation(models.Model):
    """The lease of one organization's evaluation: a round runs only while it holds it, so a slow round is
    never overlapped by the next one (on another worker), and what rounds remember between them."""

    org = models.OneToOneField(Organization, primary_key=True, on_delete=models.CASCADE, related_name="+")
    lease_until = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=64, blank=True)

    def __str__(self):
        return f"evaluation lease of {self.org_id}"


class TelemetryMark(models.Model):
    """What rounds learnt from a session's telemetry: where its next read starts, and recent counts.

    ``crashes`` holds the crash events seen (time, type) within the longest window; ``minutes`` holds
    errors and failed requests per minute (epoch minute → [errors, failed]) for the same span.
    """

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    project_key = models.CharField(max_length=100, blank=True)
    session_id = models.CharField(max_length=200)
    offset = models.CharField(max_length=200, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)
    ended = models.BooleanField(default=False)
    crashes = models.JSONField(default=list, blank=True)
    minutes = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["org", "project_key", "session_id"], name="one_mark_per_session")
        ]

    def __str__(self):
        return f"telemetry of {self.session_id}"
