"""Credentials: write-only login values and TOTP secrets, and the current TOTP code (notes §10).

Values and the TOTP secret go in and never come out: they live in the record's private ``_values`` and
``_totp_secret`` keys, which ``public()`` drops, and no error message ever quotes them. The TOTP code is
RFC 6238 (HMAC-SHA1, six digits, 30-second period) computed on read from the tenant clock, so advancing
the clock moves it deterministically.

Choices where neither the contract nor the notes say (what an operator would expect):
- ``GET /credentials/{id}/totp-code`` without a stored secret: 400 ``totp_not_configured`` (a 404 would
  read as "no such credential").
- The domain is fixed after create (the notes' PATCH has no ``domain``): sending another one is a 400.
- ``totp_secret`` and ``sso_provider`` set to ``""`` or null on PATCH remove them.
- A TOTP secret is base32 (spaces, dashes, padding and case are normalized) of at least 16 characters.
- Value names: 1-64 of letters, digits, ``_ . -``, starting alphanumeric; at most 50 values of at most
  4096 characters each. Names are unique per project (case-sensitive, like the lookup by name).
- DELETE forgets the record outright, values included (no soft delete for secrets).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import struct
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core import quotas
from console.sandbox.core.errors import ApiError, conflict, invalid
from console.sandbox.core.fields import Bad, Body, Context, Field, required_name
from console.sandbox.core.http import (
    endpoint,
    find,
    no_content,
    ok,
    paginate,
    project_of,
    public,
    read_json,
    scoped,
    text_filter,
)
from console.sandbox.core.state import Tenant, new_id, rfc3339

TOTP_DIGITS = 6
TOTP_PERIOD = 30
MIN_TOTP_SECRET_CHARS = 16  # 80 bits, the shortest secret sites commonly hand out
MAX_NAME = 255
MAX_VALUES = 50
MAX_VALUE_CHARS = 4096
KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
DOMAIN_PATTERN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"
)
SSO_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_BASE32 = re.compile(r"^[A-Z2-7]+$")


# RFC 6238 ----------------------------------------------------------------------------------------


def normalize_totp_secret(secret: str) -> str:
    """Upper-case base32 without spaces, dashes or padding; ValueError when it is not a usable secret."""
    text = re.sub(r"[\s-]", "", secret).rstrip("=").upper()
    if not text or not _BASE32.match(text):
        raise ValueError("a TOTP secret is base32: letters A-Z and digits 2-7")
    if len(text) < MIN_TOTP_SECRET_CHARS:
        raise ValueError(f"a TOTP secret has at least {MIN_TOTP_SECRET_CHARS} base32 characters")
    try:
        _secret_bytes(text)
    except binascii.Error:
        raise ValueError("the TOTP secret has a length that is not valid base32") from None
    return text


def _secret_bytes(normalized: str) -> bytes:
    return base64.b32decode(normalized + "=" * (-len(normalized) % 8))


def totp_code(secret: str, at: datetime) -> tuple[str, datetime]:
    """The RFC 6238 code of a (normalized base32) secret at ``at``, and when that code expires."""
    counter = int(at.timestamp() // TOTP_PERIOD)
    digest = hmac.new(_secret_bytes(secret), struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    value = struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF
    code = str(value % 10**TOTP_DIGITS).zfill(TOTP_DIGITS)
    return code, datetime.fromtimestamp((counter + 1) * TOTP_PERIOD, UTC)


# Validation (messages name fields and keys, never a value or a secret) ------------------------------


_named = required_name("a credential needs a name", MAX_NAME)


def _name(value, context: Context) -> str:
    value = _named(value, context)
    if "/" in value or "%" in value:
        raise Bad("a credential name cannot contain / or %", alone="name has a forbidden character")
    return value


def _domain(value, context: Context) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Bad("a credential needs the domain it logs in to", alone="domain is required")
    value = value.strip().lower().rstrip(".")
    if not DOMAIN_PATTERN.match(value):
        raise Bad(
            "give a bare host name such as accounts.example.com (no scheme, path or port)",
            alone="domain is not a host name",
        )
    return value


def _new_values(value, context: Context) -> dict[str, str]:
    """A create's login values: required, at most ``MAX_VALUES``."""
    if "values" not in context.body:
        raise Bad("give the login values, e.g. username and password", alone="values is required")
    values = _values(value)
    _count(values)
    return values


def _merged_values(value, context: Context) -> dict[str, str]:
    """An update's login values: the record's, less ``remove_value_keys``, with ``values`` (null: none)
    merged in; at most ``MAX_VALUES``."""
    values = dict(context.record["_values"])
    for key in context.kept.get("remove_value_keys", ()):
        values.pop(key, None)
    if value is not None:
        values.update(_values(value))
    _count(values)
    return values


def _values(value) -> dict[str, str]:
    """Login values (each refusal names the key, never a value)."""
    if not isinstance(value, dict):
        raise Bad("an object mapping names to strings", alone="values must be an object")
    for key, item in value.items():
        if not KEY_PATTERN.match(key):
            raise Bad(
                f"key {key[:64]!r}: 1-64 letters, digits, '_', '.' or '-', starting alphanumeric",
                alone="values has a bad key",
            )
        if not isinstance(item, str):
            raise Bad(f"the value of {key!r} must be a string", alone="values must map to strings")
        if len(item) > MAX_VALUE_CHARS:
            raise Bad(
                f"the value of {key!r} is longer than {MAX_VALUE_CHARS} characters",
                alone="values has a value that is too long",
            )
    return dict(value)


def _totp_secret(value, context: Context) -> str | None:
    """None removes the secret ("" or null); otherwise the normalized secret."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise Bad('a base32 string, or "" to remove it', alone="totp_secret must be a string")
    try:
        return normalize_totp_secret(value)
    except ValueError as exc:
        raise Bad(str(exc), alone="totp_secret is not a valid base32 secret") from None


def _sso_provider(value, context: Context) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not SSO_PATTERN.match(value.strip().lower()):
        raise Bad("a provider name such as google, microsoft or okta", alone="sso_provider is not valid")
    return value.strip().lower()


def _count(values: dict) -> None:
    if len(values) > MAX_VALUES:
        raise invalid("too many values", values=f"a credential holds at most {MAX_VALUES} values")


# A credential's create body: every field, its first problem answers alone (messages name fields and
# keys, never a value or a secret).
CREATE = Body(
    message="the credential is not valid",
    complete=True,
    fields=(
        Field("name", _name),
        Field("domain", _domain),
        Field("values", _new_values),
        Field("totp_secret", _totp_secret),
        Field("sso_provider", _sso_provider),
    ),
)


def _fixed_domain(value, context: Context) -> None:
    if value != context.record["domain"]:
        raise Bad(
            "a credential's domain is fixed; create a new credential for another domain",
            alone="domain cannot be changed",
        )


def _renamed(value, context: Context) -> str:
    name = _name(value, context)
    _unique(context.request, name, except_id=context.record["id"])
    return name


def _keys(value, context: Context) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise Bad("a list of keys", alone="remove_value_keys must be a list of strings")
    return value


# A credential's PATCH: the fields given, its first problem answering alone; ``_values`` is the merge.
UPDATE = Body(
    message="the change is not valid",
    fields=(
        Field("domain", _fixed_domain, apply=lambda value: {}),
        Field("name", _renamed),
        Field("remove_value_keys", _keys),
        Field("values", _merged_values, always=True, key="_values"),
        Field("totp_secret", _totp_secret, key="_totp_secret"),
        Field("sso_provider", _sso_provider),
    ),
)


def _unique(request: Request, name: str, *, except_id: str | None = None) -> None:
    for record in scoped(request, "credentials"):
        if record["name"] == name and record["id"] != except_id:
            raise conflict(
                f"a credential named {name!r} already exists in this project", code="credential_name_taken"
            )


# Rendering ---------------------------------------------------------------------------------------


def render(record: dict, *, single: bool = False, code_at: datetime | None = None) -> dict:
    """The public shape: ``value_keys`` on single-item responses; the TOTP code only when just set."""
    body = public(record)
    body["has_values"] = bool(record["_values"])
    body["has_totp_secret"] = record["_totp_secret"] is not None
    if single:
        body["value_keys"] = list(record["_values"])
    if code_at is not None and record["_totp_secret"] is not None:
        code, expires_at = totp_code(record["_totp_secret"], code_at)
        body["totp_code"] = code
        body["totp_code_expires_at"] = rfc3339(expires_at)
    return body


def _new(tenant: Tenant, project: str, **fields) -> dict:
    now = rfc3339(tenant.now())
    record = {
        "id": new_id("cred"),
        "name": fields["name"],
        "domain": fields["domain"],
        "sso_provider": fields.get("sso_provider"),
        "created_at": now,
        "updated_at": now,
        "_project": project,
        "_values": dict(fields.get("values") or {}),
        "_totp_secret": fields.get("totp_secret"),
    }
    tenant.table("credentials")[record["id"]] = record
    return record


# Endpoints ---------------------------------------------------------------------------------------


@endpoint
async def list_credentials(request: Request):
    items = scoped(request, "credentials")
    domain = (request.query_params.get("domain") or "").strip().lower().rstrip(".")
    if domain:
        items = [c for c in items if c["domain"] == domain]
    return paginate(request, text_filter(items, request, "name", "domain"), render=render)


@endpoint
async def create_credential(request: Request):
    tenant: Tenant = request.state.tenant
    fields = CREATE.validate(await read_json(request))
    name, domain, values = fields["name"], fields["domain"], fields["values"]
    totp_secret, sso_provider = fields["totp_secret"], fields["sso_provider"]
    _unique(request, name)
    quotas.check_count(tenant, "credentials")
    record = _new(
        tenant,
        project_of(request),
        name=name,
        domain=domain,
        values=values,
        totp_secret=totp_secret,
        sso_provider=sso_provider,
    )
    code_at = tenant.now() if totp_secret else None
    return ok(render(record, single=True, code_at=code_at), status=201)


@endpoint
async def get_credential(request: Request):
    return ok(
        render(find(request, "credentials", request.path_params["id_or_name"], "credential"), single=True)
    )


@endpoint
async def update_credential(request: Request):
    tenant: Tenant = request.state.tenant
    record = find(request, "credentials", request.path_params["id_or_name"], "credential")
    changes = UPDATE.validate(await read_json(request), creating=False, record=record, request=request)
    values = changes.pop("_values")
    changes.pop("remove_value_keys", None)
    secret_set = changes.get("_totp_secret") is not None
    record.update(changes, _values=values, updated_at=rfc3339(tenant.now()))
    return ok(render(record, single=True, code_at=tenant.now() if secret_set else None))


@endpoint
async def delete_credential(request: Request):
    record = find(request, "credentials", request.path_params["id_or_name"], "credential")
    # Really forget the values, rather than keeping them behind a deleted flag.
    del request.state.tenant.table("credentials")[record["id"]]
    return no_content()


@endpoint
async def get_totp_code(request: Request):
    record = find(request, "credentials", request.path_params["id_or_name"], "credential")
    if record["_totp_secret"] is None:
        raise ApiError(
            400,
            "totp_not_configured",
            f"credential {record['name']!r} has no TOTP secret; set totp_secret to use TOTP codes",
        )
    code, expires_at = totp_code(record["_totp_secret"], request.state.tenant.now())
    return ok({"code": code, "expires_at": rfc3339(expires_at)})


# Demo data ---------------------------------------------------------------------------------------


def seed(tenant: Tenant) -> None:
    default = tenant.default_project_id
    demo = [
        dict(
            name="github-ci",
            domain="github.com",
            values={"username": "acme-ci-bot", "password": "demo-gh-Xk29!pass"},
            totp_secret="JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP",
        ),
        dict(
            name="shop-admin",
            domain="admin.shop.example.com",
            values={"username": "ops@acme.example", "password": "demo-shop-Pw7#"},
        ),
        dict(name="okta-sso", domain="acme.okta.com", values={}, sso_provider="google"),
        dict(
            name="aws-console",
            domain="signin.aws.amazon.com",
            values={"account": "123456789012", "username": "release-bot", "password": "demo-aws-Q8v$"},
            totp_secret="GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ",
        ),
        dict(
            name="jira-bot",
            domain="acme.atlassian.net",
            values={"email": "jira-bot@acme.example", "api_token": "demo-atl-token-3fz"},
        ),
    ]
    for fields in demo:
        _new(tenant, default, **fields)
    checkout = next((p for p in tenant.table("projects").values() if p["name"] == "checkout-flows"), None)
    if checkout is not None:
        _new(
            tenant,
            checkout["id"],
            name="stripe-dashboard",
            domain="dashboard.stripe.com",
            values={"email": "payments@acme.example", "password": "demo-stripe-Lm4&"},
            totp_secret="KRSXG5CTMVRXEZLUKN2XAZLSKNSWG4TF",
        )


routes = [
    Route("/credentials", list_credentials, methods=["GET"]),
    Route("/credentials", create_credential, methods=["POST"]),
    Route("/credentials/{id_or_name}", get_credential, methods=["GET"]),
    Route("/credentials/{id_or_name}", update_credential, methods=["PATCH"]),
    Route("/credentials/{id_or_name}", delete_credential, methods=["DELETE"]),
    Route("/credentials/{id_or_name}/totp-code", get_totp_code, methods=["GET"]),
]
