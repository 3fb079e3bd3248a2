"""Deployments: upload an app, follow its build, stop and delete it (notes §13; spec: state table)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import datetime

from console.service import sse
from console.service.collection import Collection
from console.service.contract import TERMINAL_DEPLOYMENT_STATUSES
from console.service.http import Service
from console.service.records import LinkName, Record, Text
from console.service.uploads import FileSource, upload_file

__all__ = [
    "Deployment",
    "create_deployment",
    "delete_deployment",
    "events",
    "get_deployment",
    "list_deployments",
]

UPLOAD_TIMEOUT = 300.0


class Deployment(Record):
    id: str
    created_at: datetime | None = None
    updated_at: datetime | None = None
    region: str | None = None
    status: str | None = None  # queued | in_progress | running | failed | stopped
    status_reason: Text | None = None
    entrypoint_rel_path: str | None = None
    env_vars: dict[str, str] | None = None  # values redacted by the service
    source_type: str | None = None  # file | github
    source_url: str | None = None
    source_ref: str | None = None
    source_path: str | None = None
    source_checksum: str | None = None
    # Not in the notes' record; shown (and linked to the app's pages) when the service sends them.
    app_name: LinkName | None = None
    version: LinkName | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_DEPLOYMENT_STATUSES

    @property
    def env_var_names(self) -> list[str]:
        return sorted(self.env_vars or {})


# Newest first. ``app_version`` filters only together with ``app_name``.
DEPLOYMENTS = Collection("/deployments", Deployment, filters=("app_name", "app_version", "query"))
list_deployments = DEPLOYMENTS.list
get_deployment = DEPLOYMENTS.get


async def create_deployment(
    svc: Service,
    *,
    file: FileSource,
    filename: str,
    entrypoint_rel_path: str,
    version: str | None = None,
    env_vars: Mapping[str, str] | None = None,
    force: bool = False,
    region: str | None = None,
) -> Deployment:
    """Upload a zip (multipart; ``env_vars[KEY]`` parts first, then the file: notes §0)."""
    data: dict[str, str] = {"entrypoint_rel_path": entrypoint_rel_path}
    if version:
        data["version"] = version
    if region:
        data["region"] = region
    if force:
        data["force"] = "true"
    for key, value in (env_vars or {}).items():
        data[f"env_vars[{key}]"] = value
    reply = await upload_file(
        svc,
        "/deployments",
        field="file",
        source=file,
        filename=filename,
        content_type="application/zip",
        data=data,
        timeout=UPLOAD_TIMEOUT,
    )
    return Deployment.from_json(reply.data)


async def delete_deployment(svc: Service, deployment_id: str) -> None:
    """Stops a running deployment and marks it for deletion; a stopped or failed one is unchanged."""
    await DEPLOYMENTS.delete(svc, deployment_id)


def events_path(deployment_id: str) -> str:
    return DEPLOYMENTS.at(deployment_id, "/events")


def events(svc: Service, deployment_id: str, *, since: str | None = None) -> AsyncIterator[sse.ServerEvent]:
    """``log``, ``deployment_state``, ``app_version_summary``, ``error``, ``sse_heartbeat`` (in
    ``event.data["event"]``); ends when the deployment is stopped or failed."""
    return sse.events(svc, events_path(deployment_id), params={"since": since} if since else None)
