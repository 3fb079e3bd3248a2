"""Profiles: saved browser state that sessions and pools load (notes §8)."""

from __future__ import annotations

import re

from django.contrib import messages
from django.views.decorators.http import require_http_methods

from console.accounts import audit
from console.accounts.audit import audited
from console.profiles.forms import ProfileForm
from console.service import Conflict, Forbidden, Invalid, profiles
from console.service.contract import PROFILE_FORMATS
from console.web import downloads
from console.web.decorators import org_view
from console.web.forms import show_refusal
from console.web.pages import (
    confirmed_delete,
    form_page,
    get_or_404,
    org_reverse,
    posted,
    searchable_list,
)
from console.web.render import done, render

UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")
ARCHIVE_TYPES = {"tar": "application/x-tar", "tar.zst": "application/zstd"}


@require_http_methods(["GET"])
@org_view("viewer")
async def profile_list(request):
    return await searchable_list(request, "profiles/list.html", "profiles-table", profiles.list_profiles, {})


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def profile_create(request):
    form = ProfileForm(required=False)
    if request.method == "POST":
        form = ProfileForm(request.POST, required=False)
        if form.is_valid():
            name = form.cleaned_data["name"] or None
            try:
                async with audited(request, "profile.create", detail=name or "") as entry:
                    profile = await profiles.create_profile(request.service, name)
                    entry.target_id = profile.id
            except (Invalid, Conflict) as exc:
                show_refusal(form, exc)
            except Forbidden as exc:  # a plan's bound on how many profiles are kept
                form.add_error(None, f"The service refused to keep another profile: {exc.message}")
            else:
                messages.success(request, f"Profile “{profile.label}” created.")
                return done(request, org_reverse(request, "profiles:list") + f"?q={profile.id}")
    return render(request, "profiles/new.html", {"form": form}, partial="profile-create")


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def profile_rename(request, profile_id: str):
    profile = await get_or_404(profiles.get_profile(request.service, profile_id), "profile")
    form = ProfileForm(posted(request), initial={"name": profile.name})

    async def rename(data: dict) -> str:
        async with audited(request, "profile.rename", target_id=profile.id, detail=data["name"]):
            renamed = await profiles.rename_profile(request.service, profile.id, data["name"])
        messages.success(request, f"Renamed to “{renamed.label}”.")
        return org_reverse(request, "profiles:list")

    return await form_page(
        request, form, rename, "profiles/rename.html", {"profile": profile}, partial="profile-rename"
    )


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def profile_delete(request, profile_id: str):
    """Confirm, then delete; a profile still used by a pool is refused (409) and explained."""
    profile = await get_or_404(profiles.get_profile(request.service, profile_id), "profile")
    return await confirmed_delete(
        request,
        profile,
        profiles.delete_profile,
        app="profiles",
        action="profile.delete",
        context={"profile": profile},
        message=f"Profile “{profile.label}” deleted.",
        detail=profile.name or "",
        partial="profile-delete",
    )


@require_http_methods(["GET"])
@org_view("operator")
async def profile_download(request, profile_id: str):
    """Stream the archive straight through: the console never holds a whole profile in memory.

    Operators only: a profile carries its sites' cookies, which are as good as a login.
    """
    fmt = request.GET.get("format", "tar")
    if fmt not in PROFILE_FORMATS:
        fmt = "tar"
    (reply, chunks), stack = await downloads.opened(
        profiles.download_profile(request.service, profile_id, format=fmt), "profile"
    )
    try:
        await audit.record(request, "profile.download", target_id=profile_id, detail=f"format={fmt}")
    except BaseException:
        await stack.aclose()
        raise
    # The type is the format's, never the service's (a hostile one answered text/html).
    response = downloads.attachment(
        chunks,
        stack,
        filename=UNSAFE_FILENAME.sub("_", profile_id) + f".{fmt}",
        content_type=ARCHIVE_TYPES[fmt],
        length=reply.headers.get("content-length"),
    )
    response["Cache-Control"] = "no-store"
    return response
