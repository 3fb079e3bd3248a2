"""Credential providers (1Password): list, create, edit, test, list items, delete; and the item picker
the auth-connection and credential forms search (notes §15, SDK 0.131).

The provider token is write-only: posted, sent to the service, never rendered, logged or audited.
"""

from __future__ import annotations

import asyncio

from django.contrib import messages
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.credential_providers.forms import TYPE_LABELS, EditForm, ProviderForm
from console.service import Invalid
from console.service import credential_providers as providers
from console.web.decorators import org_view, require_role
from console.web.pages import (
    confirmed_delete,
    form_page,
    get_or_404,
    org_reverse,
    posted,
    searchable_list,
    submit,
)
from console.web.render import render

PICKER_MAX = 50


def _detail_url(request, provider_id: str) -> str:
    return org_reverse(request, "credential_providers:detail", provider_id=provider_id)


@require_http_methods(["GET"])
@org_view("viewer")
async def provider_list(request):
    template = "credential_providers/list.html"
    context = {"labels": TYPE_LABELS}
    return await searchable_list(request, template, "providers-table", providers.list_providers, context)


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("token")
@org_view("admin")
async def provider_create(request):
    form = ProviderForm(posted(request))

    async def create(data: dict) -> str:
        async with audited(
            request,
            "credential_provider.create",
            detail=f"{data['name']} ({data['provider_type']})",
            secrets=[data["token"]],
        ) as entry:
            made = await providers.create_provider(request.service, **data)
            entry.target_id, entry.detail = made.id, f"{made.label} ({made.provider_type})"
        messages.success(request, f"Credential provider “{made.label}” added.")
        return _detail_url(request, made.id)

    return await form_page(request, form, create, "credential_providers/create.html")


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("token")
@org_view("viewer")
async def provider_detail(request, provider_id: str):
    """The provider and its items (searchable); admins edit it in place."""
    provider = await get_or_404(providers.get_provider(request.service, provider_id), "credential provider")
    if request.method == "POST":
        require_role(request, "admin")
    initial = {"name": provider.name, "enabled": provider.enabled, "priority": provider.priority or 0}
    form = EditForm(posted(request), initial=initial)

    async def save(data: dict) -> str:
        changes = {k: data[k] for k in ("name", "enabled", "priority") if data[k] != initial[k]}
        if data["token"]:
            changes["token"] = data["token"]
        # Which fields changed, never the token's value.
        async with audited(
            request,
            "credential_provider.update",
            target_id=provider.id,
            detail=", ".join(sorted(changes)),
            secrets=[data["token"] or ""],
        ):
            await providers.update_provider(request.service, provider.id, **changes)
        messages.success(request, "Credential provider saved.")
        return _detail_url(request, provider.id)

    if response := await submit(request, form, save):
        return response
    query = request.GET.get("q", "").strip()
    items, items_error = [], ""
    try:
        items = _matching(await providers.list_items(request.service, provider.id), query)
    except Invalid as exc:
        items_error = exc.message
    context = {
        "provider": provider,
        "form": form,
        "labels": TYPE_LABELS,
        "items": items,
        "items_error": items_error,
        "query": query,
        "result": None,
    }
    return render(request, "credential_providers/detail.html", context, partial="provider-items")


def _matching(items: list[providers.Item], query: str) -> list[providers.Item]:
    words = query.casefold().split()
    return [
        i for i in items if all(w in f"{i.path} {i.title} {' '.join(i.urls or [])}".casefold() for w in words)
    ]


@require_http_methods(["POST"])
@org_view("admin")
async def provider_test(request, provider_id: str):
    provider = await get_or_404(providers.get_provider(request.service, provider_id), "credential provider")
    async with audited(request, "credential_provider.test", target_id=provider.id) as entry:
        result = await providers.test_provider(request.service, provider.id)
        # The service ran the test (the row is ok); whether the provider answered is in the detail.
        entry.detail = (
            f"failed: {result.error or '-'}" if not result.success else f"{len(result.vaults or [])} vault(s)"
        )
    return render(
        request,
        "credential_providers/detail.html",
        {"provider": provider, "result": result},
        partial="provider-test",
    )


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def provider_delete(request, provider_id: str):
    provider = await get_or_404(providers.get_provider(request.service, provider_id), "credential provider")
    return await confirmed_delete(
        request,
        provider,
        providers.delete_provider,
        app="credential_providers",
        action="credential_provider.delete",
        context={"provider": provider},
        message=f"Credential provider “{provider.label}” deleted.",
    )


@require_http_methods(["GET"])
@org_view("viewer")
async def provider_picker(request):
    """``?q=`` → the matching items of every enabled provider, as the picker's choices (a partial)."""
    # The auth and credential forms send their field's own value (htmx includes it by name).
    query = (request.GET.get("q") or request.GET.get("credential_item") or "").strip()
    page = await providers.list_providers(request.service, limit=100)
    enabled = [p for p in page.items if p.enabled is not False]
    found = await asyncio.gather(
        *(providers.list_items(request.service, p.id) for p in enabled), return_exceptions=True
    )
    choices, failed = [], []
    for provider, items in zip(enabled, found, strict=True):
        if isinstance(items, BaseException):
            if not isinstance(items, Invalid):
                raise items
            failed.append(provider.label)
            continue
        choices += [(provider, item) for item in _matching(items, query)]
    context = {
        "choices": choices[:PICKER_MAX],
        "more": len(choices) > PICKER_MAX,
        "failed": failed,
        "query": query,
    }
    return render(request, "credential_providers/picker.html", context, partial="provider-items")
