"""Vault provider configs (the organization's Link and AgentCard OAuth clients), beside the credential
providers: list, create, edit, delete. Viewers read; admins change them (configuration). The client secret
is write-only: posted, sent to the service, never rendered, logged or audited."""

from __future__ import annotations

import functools

from django.contrib import messages
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.service import vault_provider_configs as configs
from console.vault_provider_configs.forms import ConfigForm, EditForm
from console.web.decorators import org_view, require_role
from console.web.forms import show_refusal
from console.web.pages import confirmed_delete, form_page, get_or_404, org_reverse, posted
from console.web.render import render

LIST_LIMIT = 100
FIELD_MAP = {
    "credentials.client_id": "client_id",
    "credentials.client_secret": "client_secret",
    "credentials.publishable_key": "publishable_key",
}
REFUSE = functools.partial(show_refusal, field_map=FIELD_MAP)


def _detail_url(request, config_id: str) -> str:
    return org_reverse(request, "vault_provider_configs:detail", config_id=config_id)


@require_http_methods(["GET"])
@org_view("viewer")
async def config_list(request):
    page = await configs.list_configs(request.service, limit=LIST_LIMIT)
    return render(request, "vault_provider_configs/list.html", {"page": page})


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("client_secret")
@org_view("admin")
async def config_create(request):
    form = ConfigForm(posted(request))

    async def create(data: dict) -> str:
        async with audited(
            request,
            "vault_provider_config.create",
            detail=f"{data['name']} ({data['provider']}, client {data['client_id']})",
            secrets=[data["client_secret"]],
        ) as entry:
            made = await configs.create_config(request.service, **data)
            entry.target_id = made.id
        messages.success(request, f"Provider config “{made.label}” created.")
        return _detail_url(request, made.id)

    return await form_page(request, form, create, "vault_provider_configs/create.html", refuse=REFUSE)


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("client_secret")
@org_view("viewer")
async def config_detail(request, config_id: str):
    config = await get_or_404(configs.get_config(request.service, config_id), "vault provider config")
    if request.method == "POST":
        require_role(request, "admin")
    initial = {"name": config.name, "publishable_key": config.publishable_key or ""}
    form = EditForm(posted(request), initial=initial, provider=config.provider or "")

    async def save(data: dict) -> str:
        name = data["name"] if data["name"] != config.name else None
        publishable = data.get("publishable_key") or None
        publishable = publishable if publishable != config.publishable_key else None
        changed = (("name", name), ("secret", data["client_secret"]), ("key", publishable))
        summary = [part for part, value in changed if value]
        async with audited(
            request,
            "vault_provider_config.update",
            target_id=config.id,
            detail=", ".join(summary) or "nothing changed",
            secrets=[data["client_secret"]],
        ):
            if summary:
                await configs.update_config(
                    request.service,
                    config.id,
                    name=name,
                    client_secret=data["client_secret"] or None,
                    publishable_key=publishable,
                )
        messages.success(request, "Provider config saved.")
        return _detail_url(request, config.id)

    return await form_page(
        request, form, save, "vault_provider_configs/detail.html", {"config": config}, refuse=REFUSE
    )


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def config_delete(request, config_id: str):
    config = await get_or_404(configs.get_config(request.service, config_id), "vault provider config")
    return await confirmed_delete(
        request,
        config,
        configs.delete_config,
        app="vault_provider_configs",
        action="vault_provider_config.delete",
        context={"config": config},
        message=f"Provider config “{config.label}” deleted.",
    )
