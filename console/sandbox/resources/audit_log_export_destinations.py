"""Audit-log export destinations (``/audit-logs/export/destinations``; notes §15, SDK 0.131): S3 buckets
the service delivers the organization's audit log to.

Choices where the notes and the SDK leave room:

- Create: ``type`` ``s3``, ``format`` ``jsonl.gz``, ``bucket`` (3..63 of lowercase letters, digits, ``.``
  and ``-``), ``prefix`` (may be empty, no leading ``/``), ``region`` (``xx-name-N``), ``role_arn``
  (``arn:aws:iam::<12 digits>:role/<name>``) are required; ``kms_key_id`` optional (``""`` on PATCH
  removes it). A destination is created **paused**, with a fresh ``external_id`` and the service's
  ``kernel_role_arn``; at most ``MAX_DESTINATIONS`` (5) per organization (409 ``destination_limit``).
- PATCH changes any of those and ``status`` (``active``/``paused``); activating sets ``next_attempt_at``
  to ten minutes later (a window is held ten minutes before it is delivered) and pausing clears it. The
  sandbox reaches no S3, so it never delivers: ``last_success_at`` stays empty.
- ``POST /{id}/test`` is a deterministic probe: it "assumes" the role unless the ARN's account is
  ``000000000000`` (``stage: assume_role``, ``assume_role_failed``), then "writes" unless the bucket's
  name starts with ``denied-`` (``stage: put_object``, ``put_object_failed``); otherwise
  ``{success: true, stage: complete}``. A failed probe sets ``last_error``/``last_error_at`` and counts
  in ``consecutive_failures``; a successful one resets the count.
- The list is the offset page of the service, oldest first. DELETE is 204.
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.errors import conflict, invalid
from console.sandbox.core.http import endpoint, no_content, ok, paginate, read_json, record_of
from console.sandbox.core.state import Tenant, new_id, rfc3339

TABLE = "audit_export_destinations"
MAX_DESTINATIONS = 5
KERNEL_ROLE_ARN = "arn:aws:iam::000111222333:role/kernel-audit-log-export"
HOLD = timedelta(minutes=10)
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_REGION = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d$")
_ROLE = re.compile(r"^arn:aws:iam::(\d{12}):role/[\w+=,.@/-]{1,512}$")
FIELDS = ("bucket", "prefix", "region", "role_arn", "kms_key_id")


def render(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith("_") and v is not None}


def _find(tenant: Tenant, wanted: str) -> dict:
    return record_of(tenant, TABLE, wanted, "audit log export destination")


def _check(body: dict, errors: dict, *, creating: bool) -> dict:
    kept: dict = {}
    if creating:
        if body.get("type") != "s3":
            errors["type"] = "s3"
        if body.get("format") != "jsonl.gz":
            errors["format"] = "jsonl.gz"
    for name in FIELDS:
        if name not in body or (name == "kms_key_id" and body[name] is None):
            if creating and name != "kms_key_id":
                errors[name] = "required"
            continue
        value = body[name]
        if not isinstance(value, str):
            errors[name] = "a string"
            continue
        if name == "bucket" and not _BUCKET.match(value):
            errors[name] = "3 to 63 lowercase letters, digits, '.' and '-'"
        elif name == "prefix" and (value.startswith("/") or len(value) > 512):
            errors[name] = "no leading '/', at most 512 characters"
        elif name == "region" and not _REGION.match(value):
            errors[name] = "an AWS region such as us-east-1"
        elif name == "role_arn" and not _ROLE.match(value):
            errors[name] = "arn:aws:iam::<account>:role/<name>"
        kept[name] = (value or None) if name == "kms_key_id" else value
    if not creating and "status" in body:
        if body["status"] not in ("active", "paused"):
            errors["status"] = "active or paused"
        else:
            kept["status"] = body["status"]
    return kept


@endpoint
async def create(request: Request):
    tenant = request.state.tenant
    body = await read_json(request)
    errors: dict[str, str] = {}
    kept = _check(body, errors, creating=True)
    if errors:
        raise invalid("the destination is not valid", **errors)
    if len(tenant.table(TABLE)) >= MAX_DESTINATIONS:
        raise conflict(f"at most {MAX_DESTINATIONS} destinations per organization", "destination_limit")
    now = rfc3339(tenant.now())
    record = {
        "id": new_id("ald"),
        "type": "s3",
        "format": "jsonl.gz",
        "status": "paused",
        "bucket": kept["bucket"],
        "prefix": kept["prefix"],
        "region": kept["region"],
        "role_arn": kept["role_arn"],
        "kms_key_id": kept.get("kms_key_id"),
        "external_id": str(uuid.uuid4()),
        "kernel_role_arn": KERNEL_ROLE_ARN,
        "consecutive_failures": 0,
        "created_at": now,
        "updated_at": now,
    }
    tenant.table(TABLE)[record["id"]] = record
    return ok(render(record), status=201)


@endpoint
async def list_destinations(request: Request):
    records = sorted(request.state.tenant.table(TABLE).values(), key=lambda r: (r["created_at"], r["id"]))
    return paginate(request, records, render)


@endpoint
async def retrieve(request: Request):
    return ok(render(_find(request.state.tenant, request.path_params["id"])))


@endpoint
async def update(request: Request):
    tenant = request.state.tenant
    record = _find(tenant, request.path_params["id"])
    errors: dict[str, str] = {}
    kept = _check(await read_json(request), errors, creating=False)
    if errors:
        raise invalid("the destination is not valid", **errors)
    if kept:
        now = tenant.now()
        if kept.get("status") == "active" and record["status"] != "active":
            record["next_attempt_at"] = rfc3339(now + HOLD)
        elif kept.get("status") == "paused":
            record["next_attempt_at"] = None
        record.update(kept)
        record["updated_at"] = rfc3339(now)
    return ok(render(record))


@endpoint
async def delete(request: Request):
    tenant = request.state.tenant
    record = _find(tenant, request.path_params["id"])
    del tenant.table(TABLE)[record["id"]]
    return no_content()


@endpoint
async def probe(request: Request):
    tenant = request.state.tenant
    record = _find(tenant, request.path_params["id"])
    account = _ROLE.match(record["role_arn"]).group(1)
    if account == "000000000000":
        result = {
            "success": False,
            "stage": "assume_role",
            "error": {"code": "assume_role_failed", "message": f"could not assume {record['role_arn']}"},
        }
    elif record["bucket"].startswith("denied-"):
        result = {
            "success": False,
            "stage": "put_object",
            "error": {
                "code": "put_object_failed",
                "message": f"access denied writing to s3://{record['bucket']}",
            },
        }
    else:
        result = {"success": True, "stage": "complete"}
    now = rfc3339(tenant.now())
    if result["success"]:
        record["consecutive_failures"] = 0
    else:
        record["consecutive_failures"] += 1
        record["last_error"] = result["error"]["message"]
        record["last_error_at"] = now
    return ok(result)


routes = [
    Route("/audit-logs/export/destinations", create, methods=["POST"]),
    Route("/audit-logs/export/destinations", list_destinations, methods=["GET"]),
    Route("/audit-logs/export/destinations/{id}", retrieve, methods=["GET"]),
    Route("/audit-logs/export/destinations/{id}", update, methods=["PATCH"]),
    Route("/audit-logs/export/destinations/{id}", delete, methods=["DELETE"]),
    Route("/audit-logs/export/destinations/{id}/test", probe, methods=["POST"]),
]
