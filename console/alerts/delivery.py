"""Sending notifications: claimed under a lease, one attempt row per try, retried with growing waits.

``claim`` takes one delivery that is due (waiting and past its ``next_attempt_at``, or sending with a lease
that ran out: its worker died mid-send) in a short transaction that locks the row (``SKIP LOCKED`` on
PostgreSQL, so two workers never take the same one; SQLite's write lock at BEGIN does the same), marks it
sending under a lease of ``ALERTS_DELIVERY_LEASE_SECONDS`` and opens the attempt row; the send happens after
that transaction, and its result is written in another, only by the worker that still holds the lease.

A worker killed mid-send leaves the attempt "sending": the next claim, once the lease ran out, writes it
down as interrupted and sends again, once. A receiver that got the interrupted request and the new one
sees the same ``X-Alert-Delivery`` id on both (docs/alerts-webhooks.md): delivery is at least once, and
exactly once whenever the receiver answers.
"""

from __future__ import annotations

import logging
import os
import smtplib
import socket
import time
from datetime import datetime, timedelta

from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.mail import EmailMessage
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from console.alerts import webhooks
from console.alerts.models import Channel, Delivery, DeliveryAttempt
from console.service import errors as service_errors
from console.service import targets

log = logging.getLogger("console.alerts")

ERROR_MAX = 500
RETRY_CAP_SECONDS = 3600


def worker_id() -> str:
    return os.environ.get("CONSOLE_WORKER_ID") or f"{socket.gethostname()}:{os.getpid()}"


def due(now: datetime):
    return Delivery.objects.filter(
        Q(state=Delivery.State.PENDING, next_attempt_at__lte=now)
        | Q(state=Delivery.State.SENDING, lease_until__lt=now)
    )


def claim(delivery_id=None, *, now: datetime | None = None) -> tuple[Delivery, DeliveryAttempt] | None:
    """Take one due delivery (that one, or the oldest due) for this worker; None when there is none."""
    now = now or timezone.now()
    with transaction.atomic():
        rows = due(now).order_by("next_attempt_at")
        if delivery_id is not None:
            rows = rows.filter(pk=delivery_id)
        if connection.features.has_select_for_update_skip_locked:
            rows = rows.select_for_update(skip_locked=True, of=("self",))
        delivery = rows.select_related("channel", "notification").first()
        if delivery is None:
            return None
        if delivery.state == Delivery.State.SENDING:
            # Its worker stopped mid-send (the lease ran out): say so on that attempt, then try again.
            DeliveryAttempt.objects.filter(delivery=delivery, outcome=DeliveryAttempt.Outcome.SENDING).update(
                outcome=DeliveryAttempt.Outcome.INTERRUPTED,
                finished_at=now,
                error="the worker stopped before the answer was known",
            )
        delivery.state = Delivery.State.SENDING
        delivery.attempts += 1
        delivery.worker = worker_id()
        delivery.lease_until = now + timedelta(seconds=settings.ALERTS_DELIVERY_LEASE_SECONDS)
        delivery.save(update_fields=["state", "attempts", "worker", "lease_until"])
        attempt = DeliveryAttempt.objects.create(
            delivery=delivery, number=delivery.attempts, worker=delivery.worker, started_at=now
        )
    return delivery, attempt


class Refused(Exception):
    """The receiver answered, but not with a success: retried."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def send(delivery: Delivery) -> int | None:
    """Send one delivery now; the HTTP status (webhooks) or None. Raises on failure."""
    channel, note = delivery.channel, delivery.notification
    if channel.kind == Channel.Kind.EMAIL:
        send_email(channel, note.payload, delivery)
        return None
    if channel.kind == Channel.Kind.WEBHOOK:
        return send_webhook(channel, note.payload, delivery)
    return None


def send_email(channel: Channel, payload: dict, delivery: Delivery) -> None:
    subject, body = webhooks.email_text(payload)
    message = EmailMessage(
        subject=subject,
        body=body,
        to=channel.address_list,
        headers={"X-Alert-Delivery": str(delivery.pk)},
    )
    message.send(fail_silently=False)


def send_webhook(channel: Channel, payload: dict, delivery: Delivery) -> int:
    body = webhooks.body(payload, channel.format, delivery_id=str(delivery.pk))
    headers = webhooks.headers(
        body, channel.secret, delivery_id=str(delivery.pk), event=payload.get("event", "")
    )
    answer = async_to_sync(webhooks.post)(
        channel.url, body, headers, allow_private=settings.ALERTS_WEBHOOK_ALLOW_PRIVATE
    )
    if not 200 <= answer.status < 300:
        raise Refused(f"HTTP {answer.status}: {answer.preview}".strip().rstrip(":"), answer.status)
    return answer.status


def deliver(delivery_id=None) -> bool:
    """Claim and send one delivery (that one, or the oldest due); True when one was handled."""
    claimed = claim(delivery_id)
    if claimed is None:
        return False
    delivery, attempt = claimed
    started = time.monotonic()
    status, error, outcome = None, "", DeliveryAttempt.Outcome.OK
    try:
        status = send(delivery)
    except Refused as exc:
        status, error, outcome = exc.status, str(exc), DeliveryAttempt.Outcome.REFUSED
    except (targets.ForbiddenTarget, service_errors.ServiceError) as exc:
        error, outcome = exc.message, DeliveryAttempt.Outcome.ERROR
    except (smtplib.SMTPException, OSError, ValueError) as exc:
        error, outcome = f"{type(exc).__name__}: {exc}", DeliveryAttempt.Outcome.ERROR
    latency = int((time.monotonic() - started) * 1000)
    finish(delivery, attempt, outcome=outcome, status=status, error=error, latency=latency)
    return True


def finish(
    delivery: Delivery, attempt: DeliveryAttempt, *, outcome: str, status, error: str, latency: int
) -> None:
    """Record the attempt and what comes next, if this worker still holds the delivery."""
    now = timezone.now()
    with transaction.atomic():
        held = Delivery.objects.select_for_update().filter(
            pk=delivery.pk, state=Delivery.State.SENDING, worker=delivery.worker, attempts=delivery.attempts
        )
        current = held.first()
        DeliveryAttempt.objects.filter(pk=attempt.pk).update(
            outcome=outcome, status_code=status, latency_ms=latency, error=error[:ERROR_MAX], finished_at=now
        )
        if current is None:  # another worker took it over meanwhile (our lease ran out): its result stands
            return
        current.lease_until = None
        current.last_error = error[:ERROR_MAX]
        if outcome == DeliveryAttempt.Outcome.OK:
            current.state, current.sent_at = Delivery.State.SENT, now
        elif current.attempts >= settings.ALERTS_MAX_ATTEMPTS:
            current.state = Delivery.State.FAILED
        else:
            wait = min(settings.ALERTS_RETRY_SECONDS * 2 ** (current.attempts - 1), RETRY_CAP_SECONDS)
            current.state, current.next_attempt_at = Delivery.State.PENDING, now + timedelta(seconds=wait)
        current.save(update_fields=["state", "sent_at", "next_attempt_at", "lease_until", "last_error"])
        # A retry is sent by the sweep every worker runs (tasks.sweep) once its time has come.


def deliver_due(limit: int = 50) -> int:
    """Send what is due (retries, expired leases, a task lost): the sweep the worker's clock runs."""
    handled = 0
    while handled < limit and deliver():
        handled += 1
    return handled
