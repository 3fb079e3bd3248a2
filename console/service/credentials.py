"""Credentials: login values and TOTP secrets for automatic re-authentication (notes §10).

Values and the TOTP secret are write-only: they go out in request bodies and never come back. Nothing in
this module logs them or keeps them on a record.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import datetime
from typing import Any

from console.service.collection import Collection, given
from console.service.http import Service, request
from console.service.records import Record

__all__ = [
    "Credential",
    "TotpCode",
    "create_credential",
    "delete_credential",
    "get_credential",
    "get_totp_code",
    "list_credentials",
    "normalize_totp_secret",
    "update_credential",
]

MIN_TOTP_SECRET_CHARS = 16
_BASE32 = re.compile(r"^[A-Z2-7]+$")


class Credential(Record):
    id: str
    name: str | None = None
    domain: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    has_values: bool | None = None
    has_totp_secret: bool | None = None
    sso_provider: str | None = None
    # Only on single-item responses (get, create, update); None on list items.
    value_keys: list[str] | None = None
    # Only in a create/update response that just set the TOTP secret.
    totp_code: str | None = None
    totp_code_expires_at: datetime | None = None


class TotpCode(Record):
    code: str
    expires_at: datetime | None = None


def normalize_totp_secret(secret: str) -> str:
    """Upper-case base32 without spaces, dashes or padding; ValueError (never quoting it) if unusable."""
    text = re.sub(r"[\s-]", "", secret).rstrip("=").upper()
    if not text or not _BASE32.match(text):
        raise ValueError("A TOTP secret is base32: only letters A to Z and digits 2 to 7.")
    if len(text) < MIN_TOTP_SECRET_CHARS:
        raise ValueError(f"A TOTP secret has at least {MIN_TOTP_SECRET_CHARS} base32 characters.")
    try:
        base64.b32decode(text + "=" * (-len(text) % 8))
    except binascii.Error:
        raise ValueError("This TOTP secret has a length that is not valid base32.") from None
    return text


CREDENTIALS = Collection("/credentials", Credential, filters=("domain", "query"))
list_credentials = CREDENTIALS.list
get_credential = CREDENTIALS.get
delete_credential = CREDENTIALS.delete


async def create_credential(
    svc: Service,
    *,
    name: str,
    domain: str,
    values: dict[str, str],
    totp_secret: str | None = None,
    sso_provider: str | None = None,
) -> Credential:
    body: dict[str, Any] = {"name": name, "domain": domain, "values": values}
    if totp_secret:
        body["totp_secret"] = totp_secret
    if sso_provider:
        body["sso_provider"] = sso_provider
    return await CREDENTIALS.create(svc, body)


async def update_credential(
    svc: Service,
    id_or_name: str,
    *,
    name: str | None = None,
    values: dict[str, str] | None = None,
    remove_value_keys: list[str] | None = None,
    totp_secret: str | None = None,
    sso_provider: str | None = None,
) -> Credential:
    """Change only what is given. ``values`` merge into the stored ones after ``remove_value_keys`` are
    dropped; ``totp_secret=""`` removes the secret and ``sso_provider=""`` the provider; None leaves
    either unchanged."""
    body = given(name=name, totp_secret=totp_secret, sso_provider=sso_provider)
    if values:
        body["values"] = values
    if remove_value_keys:
        body["remove_value_keys"] = list(remove_value_keys)
    return await CREDENTIALS.update(svc, id_or_name, body)


async def get_totp_code(svc: Service, id_or_name: str) -> TotpCode:
    """The current code and its expiry; ``Invalid`` (400) when the credential has no TOTP secret."""
    return TotpCode.from_json((await request(svc, "GET", CREDENTIALS.at(id_or_name, "/totp-code"))).data)
