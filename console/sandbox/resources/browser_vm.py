"""Direct-to-VM routing (docs/service-changes.md §0, §2): every session record carries ``base_url``, and
SDK 0.131 sends the session's sub-resources (``curl``, ``telemetry/stream``, ``computer``, ``playwright``,
``process``, ``fs``, ``logs/stream``) straight to ``{base_url}/<sub-resource>?…&jwt=<jwt>`` without an
Authorization header, the jwt being the one in the session's ``cdp_ws_url``.

The sandbox answers that form on ``/_vm/{session_id}/…``: the jwt is checked against the session, then the
request is served by the ordinary ``/browsers/{session_id}/…`` route as the session's tenant and project.
A jwt that does not open the session, and a session id the sandbox does not know, get the same answer (401
``invalid_jwt``, same body): it was 404 for an unknown id and 401 for a known one, which told anyone which
session ids exist. With its jwt, a session that has ended is 404 (its VM is gone). Any other sub-resource
is 404, whatever the session: the VM serves only those.
"""

from __future__ import annotations

import re
import secrets
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.responses import JSONResponse
from starlette.routing import Mount

from console.sandbox.core.http import TENANT_SCOPE
from console.sandbox.core.state import Tenant, registry
from console.sandbox.resources import sessions

SUBRESOURCES = ("curl", "telemetry/stream", "computer", "playwright", "process", "fs", "logs/stream")
_PATH = re.compile(r"/_vm/([^/]+)/(.*)$")


def base_url(request_base: str, session_id: str) -> str:
    return f"{request_base.rstrip('/')}/_vm/{session_id}"


def _session(session_id: str) -> tuple[Tenant, dict] | None:
    for tenant in {id(t): t for t in registry.tenants.values()}.values():
        record = tenant.table("browsers").get(session_id)
        if record is not None:
            return tenant, record
    return None


def _jwts(record: dict) -> set[str]:
    found = {record.get("_jwt")}
    for url in (record.get("cdp_ws_url"), record.get("webdriver_ws_url")):
        found.update(dict(parse_qsl(urlsplit(url or "").query)).get("jwt", "").split())
    return {token for token in found if token}


def _opens(token: str, record: dict) -> bool:
    """Whether ``token`` is one of the session's jwts (as bytes: ``compare_digest`` raises on non-ASCII
    text)."""
    given = token.encode()
    return bool(token) and any(secrets.compare_digest(given, jwt.encode()) for jwt in _jwts(record))


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message, "details": []}, status_code=status)


async def vm_app(scope, receive, send) -> None:
    match = _PATH.search(scope["path"])
    if scope["type"] != "http" or match is None:
        await _error(404, "not_found", "no such VM route")(scope, receive, send)
        return
    session_id, rest = match.groups()
    rest = rest.strip("/")
    if not any(rest == p or rest.startswith(p + "/") for p in SUBRESOURCES):
        await _error(404, "not_found", f"the VM does not serve {rest!r}")(scope, receive, send)
        return
    query = parse_qsl(scope.get("query_string", b"").decode(), keep_blank_values=True)
    token = next((v for k, v in query if k == "jwt"), "")
    found = _session(session_id)
    if found is None or not _opens(token, found[1]):
        # One answer whether the id exists or not: no oracle of other tenants' session ids.
        await _error(401, "invalid_jwt", "the jwt does not open this session's VM")(scope, receive, send)
        return
    tenant, record = found
    if not sessions.is_active(tenant, record):
        await _error(404, "not_found", f"browser session {session_id!r} has ended")(scope, receive, send)
        return
    headers = [
        (k, v) for k, v in scope["headers"] if k.lower() not in (b"authorization", b"x-kernel-project")
    ]
    headers += [(b"x-kernel-project-id", record["_project"].encode())]
    path = f"/browsers/{session_id}/{rest}"
    inner = {
        **scope,
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": urlencode([(k, v) for k, v in query if k != "jwt"]).encode(),
        "headers": headers,
        # As the session's tenant, without its API key (the sandbox keeps only the key's digest); a
        # scope entry no client can set.
        TENANT_SCOPE: tenant,
    }
    await scope["app"](inner, receive, send)


def seed(tenant: Tenant) -> None:
    """Nothing to seed: the VM routes follow the sessions."""


routes = [Mount("/_vm", app=vm_app)]
