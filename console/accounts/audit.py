"""The audit log: who did what to which organization, and how it went.

Callers pass identifiers and short descriptions only, never a secret (API keys, credential values).
What the service says back is recorded too, so a view that sends secrets names them (``secrets=``):
they are blanked out of the error before the row, the form or the banner sees it.

Every mutation sent to the service goes through ``audited``, so it leaves exactly one row whatever its
end: ``ok``; ``error`` with the service's code and request id when the service refused it (or nothing
was sent: no connection); ``unknown`` when the request went out and no readable answer came back
(timeout, dropped connection, malformed body, 504), or the view was cancelled mid-call. A form the
console itself refuses sends nothing and is not audited: nothing happened to the organization.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from console.accounts.models import AuditLog
from console.service import errors
from console.service.http import last_request_id

DETAIL_MAX = 500
UNKNOWN_NOTE = "the result is unknown: check the resource before trying again"


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
