"""Profiles: saved browser state (cookies, local storage) that sessions and pools load (notes §8).

Names are unique within a project (409 ``profile_name_taken``) and made of ``[A-Za-z0-9._-]`` (notes §2).
Deleting a profile that a pool still references is refused (409 ``profile_in_use``): the service does not
say, and an operator would rather be told than have pools warm browsers with a missing profile.

Downloads: the real service stores zstd-compressed tars. The sandbox has no zstd library, so
``format=tar.zst`` (the default) answers ``Content-Type: application/zstd`` with an *uncompressed* tar
body; ``format=tar`` answers a real ``application/x-tar``. Both are streamed in chunks.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from datetime import timedelta

from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from console.sandbox.core import quotas
from console.sandbox.core.errors import conflict, invalid
from console.sandbox.core.hooks import Listeners
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

NAME = re.compile(r"^[A-Za-z0-9._-]{1,255}$")
FORMATS = {"tar.zst": "application/zstd", "tar": "application/x-tar"}
CHUNK = 16 * 1024


def new_profile(tenant: Tenant, project: str, name: str | None) -> dict:
    now = rfc3339(tenant.now())
    record = {
        "id": new_id("prof"),
        "name": name,
        "created_at": now,
        "updated_at": now,
        "last_used_at": None,
        "_project": project,
    }
    tenant.table("profiles")[record["id"]] = record
    return record


def lookup(tenant: Tenant, project: str, ref: dict | str) -> dict | None:
    """A live profile of the project by ``{"id"}``/``{"name"}`` (or a bare id or name); None if absent."""
    key = (ref.get("id") or ref.get("name")) if isinstance(ref, dict) else ref
    if not key:
        return None
    live = [
        p for p in tenant.table("profiles").values() if p.get("_project") == project and not p.get("_deleted")
    ]
    return next((p for p in live if p["id"] == key), None) or next(
        (p for p in live if (p.get("name") or "").casefold() == str(key).casefold()), None
    )


def _valid_name(value) -> str:
    if not isinstance(value, str) or not NAME.match(value):
        raise invalid(
            "name is not valid",
            name="1 to 255 characters: letters, digits, dot, underscore or hyphen",
        )
    return value


def _unique_name(request: Request, name: str, *, except_id: str | None = None) -> None:
    for profile in scoped(request, "profiles"):
        if (profile.get("name") or "").casefold() == name.casefold() and profile["id"] != except_id:
            raise conflict(
                f"a profile named {name!r} already exists in this project", code="profile_name_taken"
            )


@endpoint
async def list_profiles(request: Request):
    return paginate(request, text_filter(scoped(request, "profiles"), request, "name", "id"))


@endpoint
async def create_profile(request: Request):
    body = await read_json(request)
    name = body.get("name")
    if name is not None:
        name = _valid_name(name)
        _unique_name(request, name)
    quotas.check_count(request.state.tenant, "profiles")
    profile = new_profile(request.state.tenant, project_of(request), name)
    return ok(public(profile), status=201)


@endpoint
async def get_profile(request: Request):
    return ok(public(find(request, "profiles", request.path_params["id_or_name"], "profile")))


@endpoint
async def update_profile(request: Request):
    profile = find(request, "profiles", request.path_params["id_or_name"], "profile")
    body = await read_json(request)
    if "name" not in body:
        raise invalid("name is required", name="give the new name")
    name = _valid_name(body["name"])
    _unique_name(request, name, except_id=profile["id"])
    profile.update(name=name, updated_at=rfc3339(request.state.tenant.now()))
    return ok(public(profile))


def _pools_using(request: Request, profile_id: str) -> list[dict]:
    return [p for p in scoped(request, "pools") if p["_config"].get("profile_id") == profile_id]


@endpoint
async def delete_profile(request: Request):
    profile = find(request, "profiles", request.path_params["id_or_name"], "profile")
    pools = _pools_using(request, profile["id"])
    if pools:
        names = ", ".join(p.get("name") or p["id"] for p in pools)
        raise conflict(
            f"profile {profile.get('name') or profile['id']!r} is used by {len(pools)} browser pool(s) "
            f"({names}); remove it from those pools first",
            code="profile_in_use",
        )
    profile["_deleted"] = True
    profile.pop("_storage_state", None)  # what it saved goes with it (memory and the state file)
    return no_content()


def profile_archive(profile: dict) -> bytes:
    """A small, plausible Chromium user-data directory as a tar archive."""
    files = {
        "Local State": json.dumps({"profile": {"last_used": "Default", "info_cache": {"Default": {}}}}),
        "Default/Preferences": json.dumps(
            {"profile": {"name": profile.get("name") or profile["id"]}, "intl": {"accept_languages": "en-US"}}
        ),
        "Default/Cookies": "SQLite format 3\x00 (sandbox placeholder)\n",
        "Default/Local Storage/leveldb/CURRENT": "MANIFEST-000001\n",
        "Default/Bookmarks": json.dumps({"roots": {"bookmark_bar": {"children": []}}, "version": 1}),
    }
    if profile.get("_storage_state"):
        # What real sessions saved into the profile (console/sandbox/chromium/engine.py): cookies and local
        # storage.
        files["storage_state.json"] = json.dumps(profile["_storage_state"])
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"profile/{path}")
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@endpoint
async def download_profile(request: Request):
    profile = find(request, "profiles", request.path_params["id_or_name"], "profile")
    fmt = request.query_params.get("format") or "tar.zst"
    if fmt not in FORMATS:
        raise invalid("format is not valid", format="must be tar.zst or tar")
    data = profile_archive(profile)

    async def chunks():
        for start in range(0, len(data), CHUNK):
            yield data[start : start + CHUNK]

    filename = f"{profile.get('name') or profile['id']}.{fmt}"
    headers = {
        "Content-Disposition": f'attachment; filename="{filename}"',
        "Content-Length": str(len(data)),
        "X-Request-Id": request.state.request_id,
    }
    return StreamingResponse(chunks(), media_type=FORMATS[fmt], headers=headers)


# Handed in by ``app.assemble``: who follows a profile's changes (pools that refresh on them, notes §7).
updated = Listeners("profiles.updated(tenant, profile)")


def mark_updated(tenant: Tenant, profile: dict) -> None:
    """A session saved changes into the profile: bump it, and refresh pools that follow it (notes §7)."""
    profile["updated_at"] = rfc3339(tenant.now())
    updated(tenant, profile)


@endpoint
async def control_profile_updated(request: Request):
    """Sandbox control: simulate a session writing changes back into a profile."""
    tenant = request.state.tenant
    profile = find(request, "profiles", request.path_params["id_or_name"], "profile")
    mark_updated(tenant, profile)
    return ok(public(profile))


DEMO_PROFILES = [
    "checkout-bot",
    "shopify-admin",
    "linkedin-research",
    "support-gmail",
    "airline-fares-us",
    "airline-fares-eu",
    "qa-logged-out",
]


def seed(tenant: Tenant) -> None:
    project = tenant.default_project_id
    now = tenant.now()
    for offset, name in enumerate(DEMO_PROFILES):
        profile = new_profile(tenant, project, name)
        created = now - timedelta(days=40 - offset * 5, hours=offset * 3)
        profile["created_at"] = rfc3339(created)
        profile["updated_at"] = rfc3339(created + timedelta(days=offset))
        if offset % 3 != 2:
            profile["last_used_at"] = rfc3339(now - timedelta(hours=offset * 7 + 1))


routes = [
    Route("/profiles", list_profiles, methods=["GET"]),
    Route("/profiles", create_profile, methods=["POST"]),
    Route("/profiles/{id_or_name}", get_profile, methods=["GET"]),
    Route("/profiles/{id_or_name}", update_profile, methods=["PATCH"]),
    Route("/profiles/{id_or_name}", delete_profile, methods=["DELETE"]),
    Route("/profiles/{id_or_name}/download", download_profile, methods=["GET"]),
    Route("/_sandbox/profiles/{id_or_name}/updated", control_profile_updated, methods=["POST"]),
]
