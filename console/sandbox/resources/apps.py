"""Apps (spec: App summary; notes §13): the app versions that running deployments serve.

``GET /apps`` lists one summary per running deployment (an app version): ``id``, ``app_name``,
``version``, ``region``, ``deployment`` (its id), ``actions`` with their schemas and ``env_vars`` with
values redacted to ``""``. A stopped or failed deployment serves nothing, so its version disappears.
Filters: ``app_name`` and ``version`` (exact), ``query`` (case-insensitive substring of the name).
Order: by app name, then newest deployment first. Paging: ``limit`` 1..100 (default 20), ``offset``
>= 0; anything else is 400 with a detail naming the parameter (spec: Limits).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.http import endpoint, paginate, project_of
from console.sandbox.core.state import Tenant
from console.sandbox.resources import deployments


@endpoint
async def list_apps(request: Request):
    tenant: Tenant = request.state.tenant
    params = request.query_params
    serving = deployments.running(tenant, project_of(request))
    items = sorted(serving, key=lambda d: d["app_name"])  # stable: newest first within an app
    if params.get("app_name"):
        items = [d for d in items if d["app_name"] == params["app_name"]]
    if params.get("version"):
        items = [d for d in items if d["version"] == params["version"]]
    query = (params.get("query") or "").strip().casefold()
    if query:
        items = [d for d in items if query in d["app_name"].casefold()]
    return paginate(request, items, render=deployments.app_summary)


def seed(tenant: Tenant) -> None:
    """Apps are derived from deployments; nothing to store."""


routes = [Route("/apps", list_apps, methods=["GET"])]
