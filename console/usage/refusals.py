"""A refusal at a project's cap (429), counted for the usage page and explained with the capacity now.

Here, not in ``console.capacity``: the capacity model sits below the usage records it is sampled into."""

from __future__ import annotations

import contextlib

from console import capacity
from console.service import CapReached, ServiceError
from console.usage.models import Refusal


async def explain(request, error: CapReached) -> str:
    """``capacity.refusal`` with the capacity measured now, and the refusal counted for the usage page."""
    project = request.service.project
    if not project:
        with contextlib.suppress(ServiceError):
            project = await capacity.scope_project(request.service)
    await Refusal.objects.acreate(org=request.org, project_id=project or "", cap=error.cap)
    return capacity.refusal(request, error, await capacity.measure_quietly(request))
