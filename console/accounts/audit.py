"""The audit log: who did what to which organization, and how it went.

Callers pass identifiers and short descriptions only, never a secret (API keys, credential values).
What the service says back is recorded too, so a view that sends secrets names them (``secrets=``):
they are blanked out of the error before the row, the form or the banner sees it.

Every mutation sent to the service goes through ``audited``, so it leaves exactly one row whatever its
end: ``ok``; ``error`` with the service's code and request id when the service refused it (or nothing
was sent: no connection); ``unknown`` when the request went out and no readable answer came back
(timeout, dropped connection, malformed body, 504), or the view was cancelled mid-call. A form the
console itself refuses sends nothing and is not audited: nothing happened to the organization.

A member refused an action their role does not allow (``deny``) leaves a ``denied`` row, without letting
them flood the log: the same refusal repeated is one row with a count, and past a limit per user the
answer is 429 (``REFUSAL_*`` in settings.py).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NoReturn

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from console.accounts.models import AuditLog, RefusalCounter
from console.service import errors
from console.service.http import last_request_id

DETAIL_MAX = 500
UNKNOWN_NOTE = "the result is unknown: check the resource before trying again"
# Where a throttled member's refusals of anything new are counted (``deny``).
THROTTLED = "access.throttled"


async def record(
    request, action, *, target_id="", outcome="ok", request_id: str | None = None, detail=""
) -> AuditLog:
    user = await request.auser()
    actor = user if user.is_authenticated else None
    if request_id is None:
        # The service request this view made last (mutations record right after their call).
        request_id = last_request_id.get()
    return await AuditLog.objects.acreate(
        org=request.org,
        actor=actor,
        actor_username=actor.get_username() if actor else "",
        action=action,
        target_id=str(target_id or "")[:200],
        outcome=outcome,
        request_id=request_id or "",
        detail=detail[:DETAIL_MAX],
        # REMOTE_ADDR is the client as uvicorn sees it (it applies X-Forwarded-For from trusted proxies).
        client_ip=request.META.get("REMOTE_ADDR") or None,
    )


@dataclass
class Entry:
    """What the row will say; the block may fill in the target or detail once the service answered."""

    target_id: str = ""
    detail: str = ""


@asynccontextmanager
async def audited(
    request, action: str, *, target_id="", detail="", secrets: Iterable[str] = ()
) -> AsyncIterator[Entry]:
    """``async with audited(request, "proxy.delete", target_id=pid) as entry:`` around the service call.

    Records one row when the block ends, then lets any exception through so the view's own handling
    (form errors, 404, the banner) still runs. Keep only the service call (and filling in ``entry``)
    inside the block. ``secrets``: what the call sends that must not come back in an error message.
    """
    entry = Entry(target_id=str(target_id or ""), detail=detail)
    try:
        yield entry
    except errors.ServiceError as exc:
        scrub(exc, secrets)
        unknown = errors.leaves_outcome_unknown(exc)
        if unknown:
            # Views that show the message (form errors) then tell the operator too; the banner has its own.
            exc.message = f"{exc.message}; {UNKNOWN_NOTE}"
        what = " ".join(p for p in (f"HTTP {exc.status}" if exc.status else "", exc.code or "") if p)
        await record(
            request,
            action,
            target_id=entry.target_id,
            outcome=AuditLog.Outcome.UNKNOWN if unknown else AuditLog.Outcome.ERROR,
            request_id=exc.request_id or "",
            detail=_joined(entry.detail, f"{what}: {exc.message}" if what else exc.message),
        )
        raise
    except BaseException as exc:
        # Cancelled (the browser left) or a bug after the request went out: it may have taken effect.
        # Shielded: a second cancellation must not lose the row.
        row = record(
            request,
            action,
            target_id=entry.target_id,
            outcome=AuditLog.Outcome.UNKNOWN,
            request_id="",
            detail=_joined(entry.detail, f"interrupted ({type(exc).__name__})"),
        )
        await asyncio.shield(row)
        raise
    else:
        await record(request, action, target_id=entry.target_id, detail=entry.detail)


class TooManyRefusals(PermissionDenied):
    """Refused too often: answered 429 (console/web/errors.py) for ``retry_after`` more seconds.

    A PermissionDenied still, so whatever does not know it answers 403, never lets the action through.
    """

    def __init__(self, retry_after: int):
        super().__init__(f"Too many refused attempts: try again in {retry_after} s.")
        self.retry_after = retry_after


async def deny(request, action: str, *, needed: str, target_id="") -> NoReturn:
    """Refuse the current member ``action`` (their role is below ``needed``) and audit the refusal.

    The first refusal is written at once. The same one again (same org, member, action and target) within
    REFUSAL_COLLAPSE_SECONDS of that first row adds to its ``count`` and moves its ``last_at``: a flood of
    one refusal is one row that says how many. Past REFUSAL_LIMIT refusals of the user within
    REFUSAL_WINDOW_SECONDS the answer is 429 rather than 403 until the window ends, and a refusal with no
    open row of its own is counted on the member's ``access.throttled`` row instead of starting one: what a
    member can write while throttled is bounded, and each attempt is still counted somewhere.
    """
    user = request.user
    throttled_for = await sync_to_async(_count_refusal)(
        org_id=request.org.pk,
        user=user,
        action=action,
        target_id=str(target_id or "")[:200],
        client_ip=request.META.get("REMOTE_ADDR") or None,
        now=timezone.now(),
    )
    if throttled_for is not None:
        raise TooManyRefusals(throttled_for)
    raise PermissionDenied(f"This needs the {needed} role.")


def _count_refusal(*, org_id, user, action, target_id, client_ip, now: datetime) -> int | None:
    """Count one refusal and write or grow its row; the seconds the user stays throttled, or None.

    One transaction that first locks the user's counter row, so one user's refusals are counted one at a
    time whatever process serves them (several replicas, PostgreSQL): no count is lost, and two refusals
    of the same action never both start a row. On SQLite the transaction's BEGIN IMMEDIATE does the same.
    """
    limit, window = settings.REFUSAL_LIMIT, timedelta(seconds=settings.REFUSAL_WINDOW_SECONDS)
    with transaction.atomic():
        counter = _locked_counter(user, now)
        if counter.window_start <= now - window:
            counter.window_start, counter.count = now, 0
        counter.count += 1
        counter.save(update_fields=["window_start", "count"])
        throttled = counter.count > limit

        key = {"org_id": org_id, "actor": user, "action": action, "target_id": target_id}
        row = _open_refusal(key, now)
        if row is None and throttled:
            key = {**key, "action": THROTTLED, "target_id": ""}
            row = _open_refusal(key, now)
        if row is not None:
            AuditLog.objects.filter(pk=row.pk).update(count=F("count") + 1, last_at=now)
        else:
            detail = ""
            if key["action"] == THROTTLED:
                detail = (
                    f"more than {limit} refusals in {settings.REFUSAL_WINDOW_SECONDS} s, answered 429; "
                    f"counted here whatever the action or target (first: {action} {target_id})"
                )
            AuditLog.objects.create(
                **key,
                actor_username=user.get_username(),
                outcome=AuditLog.Outcome.DENIED,
                detail=detail.strip()[:DETAIL_MAX],
                client_ip=client_ip,
                created_at=now,
            )
    if not throttled:
        return None
    return max(1, math.ceil((counter.window_start + window - now).total_seconds()))


def _locked_counter(user, now: datetime) -> RefusalCounter:
    counter = RefusalCounter.objects.select_for_update().filter(user=user).first()
    if counter is not None:
        return counter
    try:
        with transaction.atomic():
            return RefusalCounter.objects.create(user=user, window_start=now, count=0)
    except IntegrityError:
        # Another process made it first (PostgreSQL): wait for its transaction, then count on its row.
        return RefusalCounter.objects.select_for_update().get(user=user)


def _open_refusal(key: dict, now: datetime) -> AuditLog | None:
    """The row this refusal adds to: the newest of the same key begun within the collapse window."""
    since = now - timedelta(seconds=settings.REFUSAL_COLLAPSE_SECONDS)
    rows = AuditLog.objects.filter(**key, outcome=AuditLog.Outcome.DENIED, created_at__gt=since)
    return rows.order_by("-created_at", "-id").first()


def scrub(error: errors.ServiceError, secrets: Iterable[str]) -> errors.ServiceError:
    """Blank out anything we sent as a secret, should the service ever quote it back in an error."""
    secrets = sorted({s for s in secrets if isinstance(s, str) and len(s) >= 3}, key=len, reverse=True)
    if not secrets:
        return error

    def clean(text):
        if not isinstance(text, str):
            return text
        for secret in secrets:
            text = text.replace(secret, "•••")
        return text

    error.message = clean(error.message)
    error.args = (error.message,)
    error.details = [{k: clean(v) for k, v in d.items()} if isinstance(d, dict) else d for d in error.details]
    if isinstance(error.inner_error, dict):
        error.inner_error = {k: clean(v) for k, v in error.inner_error.items()}
    return error


def _joined(detail: str, outcome: str) -> str:
    return f"{detail} — {outcome}" if detail else outcome
