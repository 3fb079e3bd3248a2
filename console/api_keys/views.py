"""API keys of the organization: list, create (org-wide or per project), rename, rotate, delete.

Admins only, reads included: the list says who can reach the service as the organization. The plaintext
of a new key is rendered once, in the response to the create (or rotate) that made it, with
``Cache-Control: no-store``; the console never stores it, logs it or puts it in the audit log.
"""

from __future__ import annotations

from django.contrib import messages
from django.views.decorators.debug import sensitive_variables
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.api_keys.forms import CreateForm, RenameForm, RotateForm
from console.service import Invalid, api_keys, projects
from console.service.contract import API_KEY_STATUSES
from console.web import deferred
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.pages import confirmed, form_page, get_or_404, org_reverse, posted, searchable_list
from console.web.render import render


def _secret_page(request, created: api_keys.CreatedAPIKey, action: str):
    """The one response that carries the plaintext: never cached, never repeated."""
    response = render(request, "api_keys/secret.html", {"created": created, "action": action})
    response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
@org_view("admin")
@sensitive_variables("created")
async def api_key_list(request):
    form = None
    if request.method == "POST":
        project_page = await projects.list_projects(request.service, limit=100)
        form = CreateForm(request.POST, projects=project_page.items)
        if form.is_valid():
            data = form.cleaned_data
            try:
                async with audited(request, "api_key.create", detail=data["name"]) as entry:
                    created = await api_keys.create_api_key(
                        request.service,
                        name=data["name"],
                        days_to_expire=data["days_to_expire"],
                        project_id=data["project_id"] or None,
                    )
                    scope = created.project_name or created.project_id or "org-wide"
                    entry.target_id, entry.detail = created.id, f"{created.label} ({scope})"
            except Invalid as exc:
                apply_service_errors(form, exc)
            else:
                return _secret_page(request, created, "created")
    status = request.GET.get("status", "active")
    status = status if status in API_KEY_STATUSES else "active"

    async def create_form() -> dict:
        # The project picker is a service call of its own: it loads beside the list, not before the page.
        if form is not None:
            return {"form": form}
        project_page = await projects.list_projects(request.service, limit=100)
        return {"form": CreateForm(projects=project_page.items)}

    context = {"status": status, "statuses": API_KEY_STATUSES}
    parts = [deferred.Part("api-key-create", create_form)]
    template = "api_keys/list.html"
    return await searchable_list(
        request, template, "api-keys-table", api_keys.list_api_keys, context, parts=parts, status=status
    )


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def api_key_rename(request, key_id: str):
    key = await get_or_404(api_keys.get_api_key(request.service, key_id), "API key")
    form = RenameForm(posted(request), initial={"name": key.name})

    async def rename(data: dict) -> str:
        async with audited(request, "api_key.rename", target_id=key_id, detail=data["name"]):
            renamed = await api_keys.rename_api_key(request.service, key_id, data["name"])
        messages.success(request, f"Renamed to “{renamed.label}”.")
        return org_reverse(request, "api_keys:list")

    return await form_page(request, form, rename, "api_keys/rename.html", {"key": key})


@require_http_methods(["GET", "POST"])
@org_view("admin")
@sensitive_variables("created")
async def api_key_rotate(request, key_id: str):
    key = await get_or_404(api_keys.get_api_key(request.service, key_id), "API key")
    form = RotateForm()
    if request.method == "POST":
        form = RotateForm(request.POST)
        if form.is_valid():
            grace = form.cleaned_data["expire_in_days"]
            try:
                async with audited(request, "api_key.rotate", target_id=key_id, detail=key.label) as entry:
                    created = await api_keys.rotate_api_key(request.service, key_id, expire_in_days=grace)
                    entry.detail = f"{key.label}: new key {created.id}, old key expires in {grace} day(s)"
            except Invalid as exc:
                apply_service_errors(form, exc)
            else:
                return _secret_page(request, created, "rotated")
    return render(request, "api_keys/rotate.html", {"key": key, "form": form})


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def api_key_delete(request, key_id: str):
    key = await get_or_404(api_keys.get_api_key(request.service, key_id), "API key")

    async def delete() -> None:
        async with audited(request, "api_key.delete", target_id=key_id, detail=key.label):
            await api_keys.delete_api_key(request.service, key_id)
        messages.success(request, f"API key “{key.label}” deleted.")

    url = org_reverse(request, "api_keys:list")
    # A key deleted meanwhile (the row says so): 404, as for its page.
    return await get_or_404(confirmed(request, "api_keys/delete.html", {"key": key}, delete, url), "API key")
