"""The session's requests, put together from its network telemetry: the waterfall, one request's detail,
"copy as curl" and the HAR 1.2 export (notes §6.4).

The service reports a request in pieces sharing a CDP ``request_id``: ``network_request`` when it is sent,
``network_response`` once its body has loaded (status, headers, a truncated text body), or
``network_loading_failed``, and ``proxy_error`` when the session's proxy refused it. A redirect is a new
``network_request`` under the same id. There are no finer timings than the events' own times: a request's
start is its ``network_request``, its end the event that finished it; the HAR says so (``wait`` holds the
whole duration, ``send`` and ``receive`` are 0).

Everything here comes from envelopes already redacted as they were read (console.redaction, through
console/service/telemetry.py): headers, bodies and URLs hold no secret by the time they reach a request,
so neither the pages, the curl command nor the HAR can carry one.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import parse_qsl, urlsplit

from console.browsers.finding import Finding, rfc3339
from console.service import telemetry
from console.service.http import Service
from console.service.telemetry import Envelope

NETWORK_TYPES = ("network_request", "network_response", "network_loading_failed", "proxy_error")
PAGES = 20  # service pages of 100 read at most for one waterfall or HAR (2,000 network events)
# Chromium's errors for a request the browser, an extension or a policy refused.
BLOCKED_ERRORS = (
    "net::ERR_BLOCKED_BY_CLIENT",
    "net::ERR_BLOCKED_BY_RESPONSE",
    "net::ERR_BLOCKED_BY_ADMINISTRATOR",
)


@dataclass
class Request:
    request_id: str
    hop: int  # 0, then 1, 2… for each redirect under the same id
    method: str = "GET"
    url: str = ""
    resource_type: str = ""
    started: datetime | None = None
    ended: datetime | None = None
    status: int | None = None
    status_text: str = ""
    mime_type: str = ""
    request_headers: dict = field(default_factory=dict)
    response_headers: dict = field(default_factory=dict)
    post_data: str = ""
    body: str | None = None
    body_truncated: bool = False
    error_text: str = ""
    canceled: bool = False
    proxy_error: str = ""  # the service's code: destination_blocked, upstream_timeout…
    redirected_to: str = ""
    target_id: str = ""
    seqs: list[int] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.request_id}~{self.hop}" if self.hop else self.request_id

    @property
    def first_seq(self) -> int | None:
        return self.seqs[0] if self.seqs else None

    @property
    def failed(self) -> bool:
        return bool(self.error_text or self.proxy_error) or (self.status is not None and self.status >= 400)

    @property
    def blocked(self) -> bool:
        return self.error_text in BLOCKED_ERRORS or self.proxy_error == "destination_blocked"

    @property
    def pending(self) -> bool:
        return self.ended is None

    @property
    def duration_ms(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return max(0.0, (self.ended - self.started).total_seconds() * 1000)

    @property
    def size(self) -> int | None:
        """Bytes of the response body: its Content-Length, else what the service captured of it."""
        for name, value in self.response_headers.items():
            if str(name).lower() == "content-length" and str(value).strip().isdigit():
                return int(str(value).strip())
        return len(self.body.encode()) if self.body is not None else None

    @property
    def state(self) -> str:
        """What the status column says."""
        if self.proxy_error:
            return f"proxy: {self.proxy_error}"
        if self.error_text:
            return "canceled" if self.canceled else self.error_text
        if self.redirected_to:
            return "redirect"
        if self.status is not None:
            return str(self.status)
        return "pending"

    @property
    def severity(self) -> str:
        if self.canceled and not self.proxy_error:
            return "info"
        if self.error_text or self.proxy_error or (self.status or 0) >= 500:
            return "error"
        return "warn" if (self.status or 0) >= 400 else "info"


def _headers(value) -> dict:
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


def collect(envelopes: Iterable[Envelope]) -> list[Request]:
    """The requests the envelopes tell of, in the order they were sent."""
    found: list[Request] = []
    latest: dict[str, Request] = {}
    for envelope in envelopes:
        event = envelope.event
        if event is None or event.type not in NETWORK_TYPES:
            continue
        data = event.fields
        rid = data.get("request_id")
        if not isinstance(rid, str | int) or rid == "":
            continue
        rid = str(rid)
        when = event.time
        request = latest.get(rid)
        if event.type == "network_request":
            if request is not None:
                # The same id again: the previous hop was redirected to this one.
                request.redirected_to = str(data.get("url") or "")
                request.ended = request.ended or when
            request = Request(request_id=rid, hop=request.hop + 1 if request else 0)
            request.method = str(data.get("method") or "GET")
            request.url = str(data.get("url") or "")
            request.resource_type = str(data.get("resource_type") or "")
            request.started = when
            request.request_headers = _headers(data.get("headers"))
            request.post_data = str(data.get("post_data") or "")
            request.target_id = str(data.get("target_id") or "")
            latest[rid] = request
            found.append(request)
        elif request is None:
            # Its request fell outside the window (or was never reported): shown from what is known.
            request = Request(request_id=rid, hop=0, started=when)
            request.url = str(data.get("url") or "") if event.type == "network_response" else ""
            request.target_id = str(data.get("target_id") or "")
            latest[rid] = request
            found.append(request)
        if event.type == "network_response":
            request.status = data["status"] if isinstance(data.get("status"), int) else None
            request.status_text = str(data.get("status_text") or "")
            request.mime_type = str(data.get("mime_type") or "")
            request.response_headers = _headers(data.get("headers"))
            request.body = data["body"] if isinstance(data.get("body"), str) else None
            request.body_truncated = bool(event.truncated or data.get("_truncated"))
            request.resource_type = request.resource_type or str(data.get("resource_type") or "")
            request.method = str(data.get("method") or request.method)
            request.url = request.url or str(data.get("url") or "")
            request.ended = when
        elif event.type == "network_loading_failed":
            request.error_text = str(data.get("error_text") or "failed")
            request.canceled = data.get("canceled") is True
            request.ended = when
        elif event.type == "proxy_error":
            request.proxy_error = str(data.get("code") or "proxy_error")
            request.status = data["status"] if isinstance(data.get("status"), int) else 502
            request.ended = request.ended or when
        if envelope.seq is not None:
            request.seqs.append(envelope.seq)
    return found


def keep(requests: list[Request], finding: Finding) -> list[Request]:
    """The requests the page's filters keep: text (URL, method, type, status), errors only, the tab."""
    kept = []
    needle = finding.text.casefold()
    for r in requests:
        if finding.target and r.target_id != finding.target:
            continue
        if finding.errors and r.severity != "error":
            continue
        if needle and needle not in f"{r.method} {r.url} {r.resource_type} {r.state}".casefold():
            continue
        kept.append(r)
    return kept


async def read(svc: Service, session, finding: Finding) -> tuple[list[Request], bool]:
    """The session's requests in the page's window (oldest first) and whether the read stopped at its bound.

    Ascending pages from the window's start (the session's creation when it has none: the service's own
    default is the last 5 minutes), network events only."""
    since = finding.service_since
    if since is None and isinstance(session.created_at, datetime):
        since = rfc3339(session.created_at)
    envelopes: list[Envelope] = []
    cursor = None
    for _ in range(PAGES):
        page = await telemetry.list_events(
            svc,
            session.session_id,
            order="asc",
            limit=100,
            offset=cursor,
            since=since,
            until=finding.service_until,
            categories=["network"],
        )
        envelopes += page.items
        cursor = page.next_offset if page.has_more else None
        if cursor is None:
            return collect(envelopes), False
    return collect(envelopes), True


def find(requests: list[Request], key: str) -> Request | None:
    return next((r for r in requests if r.key == key), None)


# Waterfall ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    """Where a request's bar sits on the waterfall, as percentages of its width (SVG attributes: the CSP
    refuses style attributes)."""

    left: str
    width: str


def bars(requests: list[Request]) -> tuple[list[tuple[Request, Bar]], float]:
    """Each request with its bar, and the span (ms) the waterfall covers."""
    starts = [r.started for r in requests if r.started is not None]
    if not starts:
        return [(r, Bar("0", "0.5")) for r in requests], 0.0
    t0 = min(starts)
    ends = [r.ended or r.started for r in requests if r.started is not None]
    span = max(1.0, (max(ends) - t0).total_seconds() * 1000)
    placed = []
    for r in requests:
        if r.started is None:
            placed.append((r, Bar("0", "0.5")))
            continue
        left = (r.started - t0).total_seconds() * 1000 / span * 100
        width = (r.duration_ms if r.duration_ms is not None else span - left * span / 100) / span * 100
        width = max(0.4, min(width, 100 - left))
        placed.append((r, Bar(f"{min(left, 99.6):.2f}", f"{width:.2f}")))
    return placed, span


def size_label(size: int | None) -> str:
    if size is None:
        return "—"
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} kB"
    return f"{size / 1024 / 1024:.1f} MB"


def ms_label(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


# Copy as curl ---------------------------------------------------------------------------------------


def curl(request: Request) -> str:
    """The request as a curl command (its headers and body as the service reported them: redacted values
    stay ``[redacted]``, so the command says what it cannot repeat rather than guessing)."""
    parts = ["curl", shlex.quote(request.url)]
    if request.method != "GET" or request.post_data:
        parts += ["-X", shlex.quote(request.method)]
    for name, value in request.request_headers.items():
        if name.startswith(":"):
            continue  # HTTP/2 pseudo-headers: curl makes its own
        parts += ["-H", shlex.quote(f"{name}: {_header_value(value)}")]
    if request.post_data:
        parts += ["--data-raw", shlex.quote(request.post_data)]
    return " \\\n  ".join(_pairs(parts))


def _pairs(parts: list[str]) -> list[str]:
    """``curl 'url'`` first, then each option with its value on a line of its own."""
    lines = [" ".join(parts[:2])]
    rest = parts[2:]
    for i in range(0, len(rest), 2):
        lines.append(" ".join(rest[i : i + 2]))
    return lines


def _header_value(value) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value).replace("\r", " ").replace("\n", " ")


# HAR 1.2 --------------------------------------------------------------------------------------------


def _har_headers(values: dict) -> list[dict]:
    found = []
    for name, value in values.items():
        for one in value if isinstance(value, list) else [value]:
            found.append({"name": str(name), "value": _header_value(one)})
    return found


def _har_query(url: str) -> list[dict]:
    try:
        query = urlsplit(url).query
    except ValueError:
        return []
    return [{"name": k, "value": v} for k, v in parse_qsl(query, keep_blank_values=True)]


def _header(values: dict, wanted: str) -> str:
    for name, value in values.items():
        if str(name).lower() == wanted:
            return _header_value(value)
    return ""


def har_entry(request: Request) -> dict:
    duration = request.duration_ms if request.duration_ms is not None else 0.0
    started = request.started or request.ended
    body_size = request.size
    content: dict = {
        "size": body_size if body_size is not None else 0,
        "mimeType": request.mime_type or _header(request.response_headers, "content-type") or "x-unknown",
    }
    if request.body is not None:
        content["text"] = request.body
        if request.body_truncated:
            content["comment"] = (
                "truncated by the service (8 KB of JSON, XML or form data; 4 KB of other text)"
            )
    entry: dict = {
        "startedDateTime": rfc3339(started) if started else "1970-01-01T00:00:00Z",
        "time": round(duration, 3),
        "request": {
            "method": request.method,
            "url": request.url,
            "httpVersion": "",
            "cookies": [],
            "headers": _har_headers(request.request_headers),
            "queryString": _har_query(request.url),
            "headersSize": -1,
            "bodySize": len(request.post_data.encode()) if request.post_data else 0,
        },
        "response": {
            "status": request.status if request.status is not None else 0,
            "statusText": request.status_text,
            "httpVersion": "",
            "cookies": [],
            "headers": _har_headers(request.response_headers),
            "content": content,
            "redirectURL": request.redirected_to or _header(request.response_headers, "location"),
            "headersSize": -1,
            "bodySize": body_size if body_size is not None else -1,
        },
        "cache": {},
        # The service reports when a request was sent and when it finished, nothing finer.
        "timings": {
            "blocked": -1,
            "dns": -1,
            "connect": -1,
            "ssl": -1,
            "send": 0,
            "wait": round(duration, 3),
            "receive": 0,
        },
        "_resourceType": request.resource_type.lower(),
        "_requestId": request.request_id,
    }
    if request.post_data:
        entry["request"]["postData"] = {
            "mimeType": _header(request.request_headers, "content-type") or "application/octet-stream",
            "text": request.post_data,
        }
    if request.error_text or request.proxy_error:
        # Chrome's own HAR writes a failed request's error here.
        entry["response"]["_error"] = request.proxy_error or request.error_text
    if request.pending:
        entry["comment"] = "no answer reported in the window"
    return entry


def har(requests: list[Request], *, session_id: str, version: str, comment: str) -> dict:
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "Operator Console", "version": version},
            "entries": [har_entry(r) for r in requests if r.url],
            "comment": f"Browser session {session_id}: {comment}. Secrets were redacted by the console.",
        }
    }
