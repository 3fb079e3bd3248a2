"""Proxies: list, create per type, rename inline, soft delete, health checks (notes §11).

A custom proxy's password is write-only: it is posted once, sent to the service and never rendered,
logged or audited (``sensitive_post_parameters`` keeps it out of error reports too).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods
from django_htmx.http import trigger_client_event

from console.accounts.audit import audited
from console.proxies.forms import (
    DEFAULT_TYPE,
    FIELD_MAP,
    TYPE_LABELS,
    CheckForm,
    ProxyForm,
    RenameForm,
    type_choices,
)
from console.service import Invalid, NotFound, proxies
from console.service.contract import PROXY_TYPES
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.pages import get_or_404, org_reverse, searchable_list
from console.web.render import done, render


@require_http_methods(["GET"])
@org_view("viewer")
async def proxy_list(request):
    context = {"labels": TYPE_LABELS}
    return await searchable_list(request, "proxies/list.html", "proxies-table", proxies.list_proxies, context)


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("password", "ca_bundle")
@org_view("admin")
async def proxy_create(request):
    """``?type=`` picks the form; switching type swaps only ``#proxy-create``."""
    wanted = request.POST.get("type") or request.GET.get("type") or DEFAULT_TYPE
    kind = wanted if wanted in PROXY_TYPES else DEFAULT_TYPE
    form = ProxyForm(kind=kind)
    if request.method == "POST":
        form = ProxyForm(request.POST, kind=kind)
        if wanted != kind:
            # A retired (datacenter) or unknown type: say so rather than create another kind.
            form.is_valid()
            form.add_error(None, f"{TYPE_LABELS.get(wanted, wanted)} proxies can no longer be created.")
        elif form.is_valid():
            data = form.cleaned_data
            try:
                async with audited(request, "proxy.create", detail=f"type={kind}") as entry:
                    proxy = await proxies.create_proxy(
                        request.service,
                        type=kind,
                        name=data["name"] or None,
                        protocol=data["protocol"],
                        bypass_hosts=data["bypass_hosts"],
                        config=form.config(),
                    )
                    entry.target_id, entry.detail = proxy.id, f"type={kind} name={proxy.name or ''}"
            except Invalid as exc:
                apply_service_errors(form, exc, {**FIELD_MAP, "type": "name"})
            else:
                messages.success(request, f"{TYPE_LABELS[kind]} proxy “{proxy.name or proxy.id}” created.")
                return done(request, org_reverse(request, "proxies:detail", proxy_id=proxy.id))
    context = {"form": form, "kind": kind, "types": type_choices(), "labels": TYPE_LABELS}
    return render(request, "proxies/create.html", context, partial="proxy-create")


def _detail_context(proxy, **extra) -> dict:
    return {
        "proxy": proxy,
        "labels": TYPE_LABELS,
        "rename_form": RenameForm(initial={"name": proxy.name}),
        "check_form": CheckForm(),
        "editing": False,
        "result": None,
        **extra,
    }


@require_http_methods(["GET"])
@org_view("viewer")
async def proxy_detail(request, proxy_id: str):
    proxy = await get_or_404(proxies.get_proxy(request.service, proxy_id), "proxy")
    return render(request, "proxies/detail.html", _detail_context(proxy), partial="proxy-health")


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def proxy_rename(request, proxy_id: str):
    """Inline: GET swaps the name for a form, POST saves it and swaps the name back."""
    proxy = await get_or_404(proxies.get_proxy(request.service, proxy_id), "proxy")
    form = RenameForm(initial={"name": proxy.name})
    editing = request.GET.get("cancel") != "1"
    if request.method == "POST":
        form = RenameForm(request.POST)
        if form.is_valid():
            name = form.cleaned_data["name"]
            try:
                async with audited(request, "proxy.rename", target_id=proxy_id, detail=name):
                    proxy = await proxies.rename_proxy(request.service, proxy_id, name)
            except Invalid as exc:
                apply_service_errors(form, exc)
            except NotFound:
                raise Http404("No such proxy") from None
            else:
                messages.success(request, f"Renamed to “{proxy.name}”.")
                if not request.htmx:
                    return HttpResponseRedirect(org_reverse(request, "proxies:detail", proxy_id=proxy_id))
                form, editing = RenameForm(initial={"name": proxy.name}), False
    context = _detail_context(proxy, rename_form=form, editing=editing)
    return render(request, "proxies/detail.html", context, partial="proxy-name")


@require_http_methods(["POST"])
@org_view("operator")
async def proxy_check(request, proxy_id: str):
    """Run a health check; a check with a target URL leaves the recorded health as it was."""
    proxy = await get_or_404(proxies.get_proxy(request.service, proxy_id), "proxy")
    form = CheckForm(request.POST)
    result = None
    if form.is_valid():
        target = form.cleaned_data["url"] or None
        try:
            async with audited(request, "proxy.check", target_id=proxy_id) as entry:
                result = await proxies.check_proxy(request.service, proxy_id, url=target)
                entry.detail = f"status={result.status} ip={result.ip_address or '-'}" + (
                    " target" if target else ""
                )
        except Invalid as exc:
            apply_service_errors(form, exc)
        except NotFound:
            raise Http404("No such proxy") from None
        else:
            if not target:
                proxy = result
    context = _detail_context(proxy, check_form=form, result=result, target=form.cleaned_data.get("url", ""))
    response = render(request, "proxies/detail.html", context, partial="proxy-check")
    if result is not None and not context["target"]:
        # The recorded health changed: the health panel refreshes itself.
        trigger_client_event(response, "proxy-checked")
    return response


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def proxy_delete(request, proxy_id: str):
    proxy = await get_or_404(proxies.get_proxy(request.service, proxy_id), "proxy")
    if request.method == "POST":
        try:
            async with audited(request, "proxy.delete", target_id=proxy_id, detail=proxy.name or ""):
                await proxies.delete_proxy(request.service, proxy_id)
        except NotFound:
            raise Http404("No such proxy") from None
        messages.success(request, f"Proxy “{proxy.name or proxy.id}” deleted.")
        return done(request, org_reverse(request, "proxies:list"))
    return render(request, "proxies/delete.html", {"proxy": proxy, "labels": TYPE_LABELS})
