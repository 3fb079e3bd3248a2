"""Audit-log export destinations: S3 buckets the service delivers the organization's audit log to (notes §15,
SDK 0.131 ``audit_logs.export_destinations``). A destination is created paused; a probe (``test``) checks
the role and the bucket; ``status`` resumes or pauses delivery. 409 on a concurrent change.
"""

from __future__ import annotations

from datetime import datetime

from console.service.http import Service, path_segment, request
from console.service.pagination import Page, fetch_page
from console.service.records import Count, Record, Text

__all__ = [
    "Destination",
    "ProbeResult",
    "create_destination",
    "delete_destination",
    "get_destination",
    "list_destinations",
    "test_destination",
    "update_destination",
]

PATH = "/audit-logs/export/destinations"
EDITABLE = ("bucket", "prefix", "region", "role_arn", "kms_key_id")


class Destination(Record):
    id: str
    type: str | None = None
    format: str | None = None
    status: str | None = None
    bucket: str | None = None
    prefix: str | None = None
    region: str | None = None
    role_arn: str | None = None
    kms_key_id: str | None = None
    external_id: str | None = None
    kernel_role_arn: str | None = None
    consecutive_failures: Count | None = None
    last_error: Text | None = None
    last_error_at: datetime | None = None
    last_success_at: datetime | None = None
    next_attempt_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def label(self) -> str:
        return f"s3://{self.bucket}/{self.prefix or ''}" if self.bucket else self.id

    @property
    def active(self) -> bool:
        return self.status == "active"


class ProbeError(Record):
    code: str | None = None
    message: Text | None = None


class ProbeResult(Record):
    success: bool = False
    stage: str | None = None
    error: ProbeError | None = None


def _path(destination_id: str) -> str:
    return f"{PATH}/{path_segment(destination_id)}"


async def list_destinations(svc: Service, *, limit: int = 20, offset: int = 0) -> Page[Destination]:
    return await fetch_page(svc, PATH, Destination, limit=limit, offset=offset)


async def get_destination(svc: Service, destination_id: str) -> Destination:
    return Destination.from_json((await request(svc, "GET", _path(destination_id))).data)


async def create_destination(
    svc: Service, *, bucket: str, prefix: str, region: str, role_arn: str, kms_key_id: str | None = None
) -> Destination:
    body = {"type": "s3", "format": "jsonl.gz", "bucket": bucket, "prefix": prefix, "region": region}
    body["role_arn"] = role_arn
    if kms_key_id:
        body["kms_key_id"] = kms_key_id
    return Destination.from_json((await request(svc, "POST", PATH, json=body)).data)


async def update_destination(svc: Service, destination_id: str, **changes: str) -> Destination:
    """Only what is given changes: ``status`` (active|paused) and the ``EDITABLE`` fields (``kms_key_id``
    ``""`` removes the key)."""
    body = {k: v for k, v in changes.items() if k in (*EDITABLE, "status")}
    return Destination.from_json((await request(svc, "PATCH", _path(destination_id), json=body)).data)


async def test_destination(svc: Service, destination_id: str) -> ProbeResult:
    reply = await request(svc, "POST", f"{_path(destination_id)}/test", retry=False)
    return ProbeResult.from_json(reply.data)


async def delete_destination(svc: Service, destination_id: str) -> None:
    await request(svc, "DELETE", _path(destination_id), expect="none")
