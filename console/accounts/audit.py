"""The audit log: who did what to which organization, and how it went.

Callers pass identifiers and short descriptions only, never a secret (API keys, credential values).
"""

from console.accounts.models import AuditLog
from console.service.http import last_request_id

DETAIL_MAX = 500


async def record(request, action, *, target_id="", outcome="ok", request_id="", detail="") -> AuditLog:
    user = await request.auser()
    actor = user if user.is_authenticated else None
    return await AuditLog.objects.acreate(
        org=request.org,
        actor=actor,
        actor_username=actor.get_username() if actor else "",
        action=action,
        target_id=str(target_id)[:200],
        outcome=outcome,
        # By default, the service request this view made last (mutations record right after their call).
        request_id=request_id or last_request_id.get(),
        detail=detail[:DETAIL_MAX],
        # REMOTE_ADDR is the client as uvicorn sees it (it applies X-Forwarded-For from trusted proxies).
        client_ip=request.META.get("REMOTE_ADDR") or None,
    )
