"""Apps: the app versions the service runs, with their actions and schemas (spec: App summary)."""

from __future__ import annotations

from typing import Any

from console.service.collection import Collection
from console.service.http import Service
from console.service.records import Id, LinkName, Record

__all__ = ["Action", "AppSummary", "get_app_version", "list_app_versions", "list_apps"]


class Action(Record):
    name: LinkName  # a path segment of the invoke page's URL
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None


class AppSummary(Record):
    """One app version. ``env_vars`` values are redacted by the service; only the names are used."""

    id: str
    # Both are path segments of the app pages' URLs (an app name "" or "a/b" made the list a 500).
    app_name: LinkName
    version: LinkName
    region: str | None = None
    deployment: Id | None = None  # the id of the deployment that serves this version
    actions: list[Action] | None = None
    env_vars: dict[str, str] | None = None

    @property
    def env_var_names(self) -> list[str]:
        return sorted(self.env_vars or {})

    def action(self, name: str) -> Action | None:
        return next((a for a in self.actions or () if a.name == name), None)


# ``GET /apps``: limit 1..100 (default 20), offset >= 0; ``query`` searches by name.
APPS = Collection("/apps", AppSummary, filters=("query", "app_name", "version"))
list_apps = APPS.list


async def list_app_versions(svc: Service, app_name: str) -> list[AppSummary]:
    """Every deployed version of one app (one page of 100: an app rarely runs more versions at once)."""
    return (await list_apps(svc, app_name=app_name, limit=100)).items


async def get_app_version(svc: Service, app_name: str, version: str) -> AppSummary | None:
    """The summary of one app version, or None when no running deployment serves it."""
    page = await list_apps(svc, app_name=app_name, version=version, limit=1)
    return page.items[0] if page.items else None
