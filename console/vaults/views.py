"""Vaults: browse vaults and items, create credential items, set or clear values (write-only), item events.

Viewers browse; admins change. Sensitive values are posted, sent to the service and never rendered,
logged or audited (the audit log names the fields whose values changed, never a value).
"""

from __future__ import annotations

import asyncio

from django.contrib import messages
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.service import Conflict, Forbidden, Invalid, projects, vaults
from console.vaults.forms import ItemForm, ValueForm, VaultForm
from console.web import deferred
from console.web.decorators import org_view, require_role
from console.web.forms import apply_service_errors
from console.web.pages import get_or_404, org_reverse, searchable_list
from console.web.render import done, render


@require_http_methods(["GET", "POST"])
@org_view("viewer")
async def vault_list(request):
    form = VaultForm()
    if request.method == "POST":
        require_role(request, "admin")
        form = VaultForm(request.POST)
        if form.is_valid():
            name = form.cleaned_data["name"].strip()
            try:
                async with audited(request, "vault.create", detail=name) as entry:
                    vault = await vaults.create_vault(request.service, name)
                    entry.target_id, entry.detail = vault.id, vault.label
            except (Invalid, Forbidden) as exc:
                form.add_error("name", exc.message)
            else:
                return done(request, org_reverse(request, "vaults:detail", vault_id=vault.id))

    async def plan() -> dict:
        limits, entitlements = await asyncio.gather(
            projects.get_org_limits(request.service), projects.get_entitlements(request.service)
        )
        # A plan that does not mention vaults is taken to include them (the service decides on create).
        return {"limits": limits, "vaults_enabled": entitlements.enabled("vaults") is not False}

    parts = [deferred.Part("vaults-plan", plan)]
    template = "vaults/list.html"
    return await searchable_list(
        request, template, "vaults-table", vaults.list_vaults, {"form": form}, parts=parts
    )


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("values")
@org_view("viewer")
async def vault_detail(request, vault_id: str):
    vault = await get_or_404(vaults.get_vault(request.service, vault_id), "vault")
    form = ItemForm()
    if request.method == "POST":
        require_role(request, "admin")
        form = ItemForm(request.POST)
        if form.is_valid():
            key, values = form.cleaned_data["key"], form.cleaned_data["values"]
            names = ",".join(sorted(values))
            try:
                async with audited(
                    request,
                    "vault.item.create",
                    target_id=vault.id,
                    detail=f"{key} values={names or '-'}",
                    secrets=values.values(),
                ) as entry:
                    item = await vaults.put_item(
                        request.service,
                        vault.id,
                        key,
                        fields=form.item_fields(),
                        description=form.cleaned_data["description"] or None,
                    )
                    entry.detail = f"{item.key} values={names or '-'}"
            except Invalid as exc:
                apply_service_errors(form, exc, {"spec.fields": "fields_spec", "key": "key"})
            except Conflict as exc:
                form.add_error("key", exc.message)
            else:
                messages.success(request, f"Item “{item.key}” saved.")
                return done(request, org_reverse(request, "vaults:item", vault_id=vault.id, key=item.key))
    items = await vaults.list_items(request.service, vault.id)
    return render(request, "vaults/detail.html", {"vault": vault, "items": items, "form": form})


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def vault_delete(request, vault_id: str):
    vault = await get_or_404(vaults.get_vault(request.service, vault_id), "vault")
    if request.method == "POST":
        async with audited(request, "vault.delete", target_id=vault.id, detail=vault.label):
            await vaults.delete_vault(request.service, vault.id)
        messages.success(request, f"Vault “{vault.label}” deleted.")
        return done(request, org_reverse(request, "vaults:list"))
    items = await vaults.list_items(request.service, vault.id)
    return render(request, "vaults/delete.html", {"vault": vault, "items": items})


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("value")
@org_view("viewer")
async def item_detail(request, vault_id: str, key: str):
    """The item's fields and events; admins set or clear a value (write-only)."""
    item = await get_or_404(vaults.get_item(request.service, vault_id, key), "vault item")
    form = ValueForm(names=[f.name for f in item.fields])
    conflict = ""
    if request.method == "POST":
        require_role(request, "admin")
        form = ValueForm(request.POST, names=[f.name for f in item.fields])
        if form.is_valid():
            name, value = form.cleaned_data["field"], form.cleaned_data["value"] or None
            change = "set" if value is not None else "cleared"
            try:
                async with audited(
                    request,
                    "vault.item.update",
                    target_id=item.id,
                    detail=f"{key}: {name} {change}",
                    secrets=[value or ""],
                ):
                    item = await vaults.update_item(
                        request.service, vault_id, key, version=item.version or 0, values={name: value}
                    )
            except Conflict as exc:
                conflict = exc.message
            except Invalid as exc:
                apply_service_errors(form, exc)
            else:
                messages.success(request, f"Value of “{name}” {change}.")
                return done(request, org_reverse(request, "vaults:item", vault_id=vault_id, key=key))
    events = await vaults.item_events(request.service, vault_id, key)
    vault = await get_or_404(vaults.get_vault(request.service, vault_id), "vault")
    context = {
        "vault": vault,
        "item": item,
        "form": form,
        "events": list(reversed(events)),
        "conflict": conflict,
    }
    return render(request, "vaults/item.html", context)


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def item_delete(request, vault_id: str, key: str):
    item = await get_or_404(vaults.get_item(request.service, vault_id, key), "vault item")
    vault = await get_or_404(vaults.get_vault(request.service, vault_id), "vault")
    if request.method == "POST":
        async with audited(request, "vault.item.delete", target_id=item.id, detail=f"{vault.label}/{key}"):
            await vaults.delete_item(request.service, vault_id, key)
        messages.success(request, f"Item “{key}” deleted.")
        return done(request, org_reverse(request, "vaults:detail", vault_id=vault_id))
    return render(request, "vaults/item_delete.html", {"vault": vault, "item": item})
