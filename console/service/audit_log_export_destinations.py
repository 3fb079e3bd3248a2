"""Audit-log export destinations: S3 buckets the service delivers the organization's audit log to (notes §15,
SDK 0.131 ``audit_logs.export_destinations``). A destination is created paused; a probe (``test``) checks
the role and the bucket; ``status`` resumes or pauses delivery. 409 on a concurrent change.
"""

from __future__ import annotations

from datetime import datetime

from console.service.collection import Collection, fetch_one, filled
from console.service.http import Service
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


DESTINATIONS = Collection("/audit-logs/export/destinations", Destination, filters=())
list_destinations = DESTINATIONS.list
get_destination = DESTINATIONS.get
delete_destination = DESTINATIONS.delete


async def create_destination(
    svc: Service, *, bucket: str, prefix: str, region: str, role_arn: str, kms_key_id: str | None = None
) -> Destination:
    body = {"type": "s3", "format": "jsonl.gz", "bucket": bucket, "prefix": prefix, "region": region}
    body.update(role_arn=role_arn, **filled(kms_key_id=kms_key_id))
    return await DESTINATIONS.create(svc, body)


async def update_destination(svc: Service, destination_id: str, **changes: str) -> Destination:
    """Only what is given changes: ``status`` (active|paused) and the ``EDITABLE`` fields (``kms_key_id``
    ``""`` removes the key)."""
    body = {k: v for k, v in changes.items() if k in (*EDITABLE, "status")}
    return await DESTINATIONS.update(svc, destination_id, body)


async def test_destination(svc: Service, destination_id: str) -> ProbeResult:
    return await fetch_one(svc, ProbeResult, "POST", DESTINATIONS.at(destination_id, "/test"), retry=False)
