"""What one tenant may keep in the sandbox: how many stored records of a kind, and how many bytes.

Every tenant's records live in the sandbox's memory and in its state file, and anyone who reaches the
sandbox may create a tenant (``SANDBOX_MAX_TENANTS``), so what a tenant stores is bounded per tenant:

- extensions: ``SANDBOX_MAX_EXTENSIONS`` (default 100) and ``SANDBOX_MAX_EXTENSION_BYTES`` (default 1 GiB,
  the sum of the archives' sizes; each archive is at most 100 MiB);
- profiles: ``SANDBOX_MAX_PROFILES`` (default 1000; each may hold a session's cookies and local storage);
- credentials: ``SANDBOX_MAX_CREDENTIALS`` (default 1000; each at most 50 values of 4096 characters).

Only live records count (a deleted extension or profile no longer holds its content). Past a bound the
create answers 403 ``insufficient_plan``, the body the notes give for a plan's count limits (vaults,
managed auth connections), with a message naming the bound and the setting; nothing is stored. The
demo data and a saved state are loaded whatever the bounds.
"""

from __future__ import annotations

import os

from console.sandbox.core.errors import ApiError
from console.sandbox.core.state import Tenant

GIB = 1024 * 1024 * 1024

# kind (the table) → (setting, default count, what one is called)
COUNTS = {
    "extensions": ("SANDBOX_MAX_EXTENSIONS", 100, "extensions"),
    "profiles": ("SANDBOX_MAX_PROFILES", 1000, "profiles"),
    "credentials": ("SANDBOX_MAX_CREDENTIALS", 1000, "credentials"),
}
EXTENSION_BYTES = ("SANDBOX_MAX_EXTENSION_BYTES", GIB)


def setting(name: str, default: int) -> int:
    """A positive whole number from the environment; the default when unset or not a number."""
    try:
        return max(1, int(os.environ.get(name) or default))
    except ValueError:
        return default


def _live(tenant: Tenant, table: str) -> list[dict]:
    return [r for r in tenant.table(table).values() if not r.get("_deleted")]


def check_count(tenant: Tenant, table: str) -> None:
    """Refuse to store one more record in ``table`` when the tenant holds its bound already."""
    name, default, noun = COUNTS[table]
    bound = setting(name, default)
    if len(_live(tenant, table)) >= bound:
        raise ApiError(
            403,
            "insufficient_plan",
            f"this sandbox keeps at most {bound} {noun} per organization ({name}); delete one first",
        )


def check_extension_bytes(tenant: Tenant, adding: int) -> None:
    """Refuse an archive of ``adding`` bytes that would take the tenant's extensions past their bound."""
    name, default = EXTENSION_BYTES
    bound = setting(name, default)
    used = sum(int(r.get("size_bytes") or 0) for r in _live(tenant, "extensions"))
    if used + adding > bound:
        raise ApiError(
            403,
            "insufficient_plan",
            f"this sandbox keeps at most {_size(bound)} of extensions per organization ({name}); "
            f"{_size(used)} are stored and this archive is {_size(adding)}: delete one first",
        )


def _size(count: int) -> str:
    for unit, scale in (("GiB", GIB), ("MiB", 1024 * 1024), ("KiB", 1024)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"
