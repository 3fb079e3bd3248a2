"""What a notification says on each channel: the webhook's JSON (or Slack's shape), its signature, and the
e-mail's text. The schema and the signature are documented in docs/alerts-webhooks.md.

Signature: ``X-Alert-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed with the channel's secret>``.
The body carries the delivery's id and when it was sent, so a receiver can refuse a replay and drop a
duplicate (the same id again after a worker died mid-send).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime

from django.conf import settings

from console.service import http

SIGNATURE_HEADER = "X-Alert-Signature"
DELIVERY_HEADER = "X-Alert-Delivery"
EVENT_HEADER = "X-Alert-Event"
WHAT = "the webhook URL"

EVENT_WORDS = {
    "firing": "FIRING",
    "repeat": "STILL FIRING",
    "resolved": "RESOLVED",
    "test": "TEST",
}


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(body: bytes, secret: str, header: str) -> bool:
    """What a receiver does (and the tests): compare in constant time."""
    return hmac.compare_digest(sign(body, secret).encode(), (header or "").encode())


def title(payload: dict) -> str:
    alert, rule = payload.get("alert") or {}, payload.get("rule") or {}
    subject = (alert.get("subject") or {}).get("label") or ""
    word = EVENT_WORDS.get(payload.get("event", ""), payload.get("event", "").upper())
    return f"[{word}] [{rule.get('severity', '')}] {rule.get('name', '')}: {subject}".strip()


def body(payload: dict, fmt: str, *, delivery_id: str, sent_at: datetime | None = None) -> bytes:
    sent = (sent_at or datetime.now(UTC)).isoformat()
    if fmt == "slack":
        alert = payload.get("alert") or {}
        lines = [f"*{title(payload)}*", alert.get("summary") or ""]
        url = alert.get("url")
        if url:
            lines.append(f"<{url}|Open in the console>")
        document = {
            "text": "\n".join(line for line in lines if line),
            "delivery_id": delivery_id,
            "sent_at": sent,
        }
    else:
        document = {**payload, "delivery_id": delivery_id, "sent_at": sent}
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def headers(content: bytes, secret: str, *, delivery_id: str, event: str) -> dict[str, str]:
    sent = {
        "Content-Type": "application/json",
        DELIVERY_HEADER: delivery_id,
        EVENT_HEADER: event,
    }
    if secret:
        sent[SIGNATURE_HEADER] = sign(content, secret)
    return sent


async def post(url: str, content: bytes, sent_headers: dict[str, str], *, allow_private: bool) -> http.Posted:
    return await http.post_outside(
        url,
        content=content,
        headers=sent_headers,
        allow_private=allow_private,
        timeout=settings.ALERTS_SEND_TIMEOUT,
        what=WHAT,
    )


def email_text(payload: dict) -> tuple[str, str]:
    """The subject line and plain-text body of an alert's e-mail."""
    alert, rule, org = (
        payload.get("alert") or {},
        payload.get("rule") or {},
        payload.get("organization") or {},
    )
    subject = (alert.get("subject") or {}) or {}
    lines = [
        title(payload),
        "",
        alert.get("summary") or "",
        "",
        f"Organization: {org.get('name', '')}",
        f"Rule: {rule.get('name', '')} ({rule.get('kind', '')}, {rule.get('severity', '')})",
        f"Subject: {subject.get('label', '')}",
        f"State: {alert.get('state', '')}",
        f"Started: {alert.get('started_at') or '-'}",
    ]
    if alert.get("fired_at"):
        lines.append(f"Fired: {alert['fired_at']}")
    if alert.get("resolved_at"):
        lines.append(f"Resolved: {alert['resolved_at']}")
    values = alert.get("values") or {}
    if values:
        lines += ["", "Values seen:"] + [f"  {k}: {v}" for k, v in sorted(values.items())]
    if subject.get("url"):
        lines += ["", f"What it is about: {subject['url']}"]
    if alert.get("url"):
        lines += [f"The alert: {alert['url']}"]
    return title(payload)[:200], "\n".join(lines) + "\n"


def test_payload(org, channel) -> dict:
    """What "Send test" sends: the schema's shape, saying it is a test."""
    now = datetime.now(UTC).isoformat()
    return {
        "version": 1,
        "event": "test",
        "seq": 0,
        "organization": {"slug": org.slug, "name": org.name},
        "rule": {
            "id": None,
            "name": "Test notification",
            "kind": "test",
            "severity": "info",
            "project": None,
        },
        "alert": {
            "id": None,
            "state": "firing",
            "subject": {
                "key": "test",
                "label": f"Channel {channel.name}",
                "kind": None,
                "id": None,
                "url": None,
            },
            "summary": "A test from the operator console: this channel works.",
            "values": {},
            "started_at": now,
            "fired_at": now,
            "resolved_at": None,
            "acknowledged_at": None,
            "url": None,
        },
    }
