"""Vault provider configs (the organization's Link and AgentCard OAuth clients), beside the credential
providers: list, create, edit, delete. Viewers read; admins change them (configuration). The client secret
is write-only: posted, sent to the service, never rendered, logged or audited."""

from __future__ import annotations

from django.contrib import messages
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.service import Conflict, Invalid
from console.service import vault_provider_configs as configs
from console.vault_provider_configs.forms import ConfigForm, EditForm
from console.web.decorators import org_view, require_role
from console.web.forms import apply_service_errors
from console.web.pages import get_or_404, org_reverse
from console.web.render import done, render

LIST_LIMIT = 100
FIELD_MAP = {
    "credentials.client_id": "client_id",
    "credentials.client_secret": "client_secret",
    "credentials.publishable_key": "publishable_key",
}


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
    form = ConfigForm()
    if request.method == "POST":
        form = ConfigForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                async with audited(
                    request,
                    "vault_provider_config.create",
                    detail=f"{data['name']} ({data['provider']}, client {data['client_id']})",
                    secrets=[data["client_secret"]],
                ) as entry:
                    made = await configs.create_config(
                        request.service,
                        name=data["name"],
                        provider=data["provider"],
                        client_id=data["client_id"],
                        client_secret=data["client_secret"],
                        publishable_key=data["publishable_key"] or None,
                    )
                    entry.target_id = made.id
            except Invalid as exc:
                apply_service_errors(form, exc, FIELD_MAP)
            except Conflict as exc:
                form.add_error("name", exc.message)
            else:
                messages.success(request, f"Provider config “{made.label}” created.")
                return done(request, _detail_url(request, made.id))
    return render(request, "vault_provider_configs/create.html", {"form": form})


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("client_secret")
@org_view("viewer")
async def config_detail(request, config_id: str):
    config = await get_or_404(configs.get_config(request.service, config_id), "vault provider config")
    initial = {"name": config.name, "publishable_key": config.publishable_key or ""}
    form = EditForm(initial=initial, provider=config.provider or "")
    if request.method == "POST":
        require_role(request, "admin")
        form = EditForm(request.POST, initial=initial, provider=config.provider or "")
        if form.is_valid():
            data = form.cleaned_data
            name = data["name"] if data["name"] != config.name else None
            publishable = data.get("publishable_key") or None
            publishable = publishable if publishable != config.publishable_key else None
            summary = [
                p for p, v in (("name", name), ("secret", data["client_secret"]), ("key", publishable)) if v
            ]
            try:
                async with audited(
                    request,
                    "vault_provider_config.update",
                    target_id=config.id,
                    detail=", ".join(summary) or "nothing changed",
                    secrets=[data["client_secret"]],
                ):
                    if summary:
                        config = await configs.update_config(
                            request.service,
                            config.id,
                            name=name,
                            client_secret=data["client_secret"] or None,
                            publishable_key=publishable,
                        )
            except Invalid as exc:
                apply_service_errors(form, exc, FIELD_MAP)
            except Conflict as exc:
                form.add_error("name", exc.message)
            else:
                messages.success(request, "Provider config saved.")
                return done(request, _detail_url(request, config.id))
    return render(request, "vault_provider_configs/detail.html", {"config": config, "form": form})


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def config_delete(request, config_id: str):
    config = await get_or_404(configs.get_config(request.service, config_id), "vault provider config")
    conflict = ""
    if request.method == "POST":
        try:
            async with audited(
                request, "vault_provider_config.delete", target_id=config.id, detail=config.label
            ):
                await configs.delete_config(request.service, config.id)
        except Conflict as exc:
            conflict = exc.message
        else:
            messages.success(request, f"Provider config “{config.label}” deleted.")
            return done(request, org_reverse(request, "vault_provider_configs:list"))
    return render(request, "vault_provider_configs/delete.html", {"config": config, "conflict": conflict})
