"""Projects of the organization's service account, and their limits (notes §1)."""

from __future__ import annotations

import asyncio

from django.contrib import messages
from django.http import Http404
from django.views.decorators.http import require_http_methods

from console import capacity
from console.accounts.audit import audited
from console.projects.forms import LIMIT_LABELS, LimitsForm, ProjectForm
from console.service import Invalid, NotFound, projects
from console.web import deferred
from console.web.decorators import org_view, require_role
from console.web.forms import apply_service_errors
from console.web.pages import confirmed, form_page, get_or_404, org_reverse, posted
from console.web.paging import pager, paging
from console.web.render import done, render, safe_next


def _detail_url(request, project_id: str) -> str:
    return org_reverse(request, "projects:detail", project_id=project_id)


@require_http_methods(["GET"])
@org_view("viewer")
async def project_list(request):
    """The projects, each with its use against its cap (console/capacity.py)."""
    query = request.GET.get("q", "").strip()
    page_params = paging(request)

    async def load() -> dict:
        page = await projects.list_projects(
            request.service, limit=page_params.limit, offset=page_params.offset, query=query or None
        )
        uses = await capacity.measure_projects(request.service, page.items)
        rows = [{"project": p, "use": uses.get(p.id)} for p in page.items]
        return {"page": page, "rows": rows, "pager": pager(request, page_params, page)}

    context = {"query": query, "current_project_id": request.membership.current_project_id}
    return await deferred.list_page(request, "projects/list.html", "projects-table", context, load)


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def project_create(request):
    form = ProjectForm(posted(request))

    async def create(data: dict) -> str:
        async with audited(request, "project.create", detail=data["name"]) as entry:
            project = await projects.create_project(request.service, data["name"])
            entry.target_id = project.id
        messages.success(request, f"Project “{project.name}” created.")
        return _detail_url(request, project.id)

    return await form_page(request, form, create, "projects/new.html", partial="project-create")


@require_http_methods(["GET"])
@org_view("viewer")
async def project_detail(request, project_id: str):
    svc = request.service
    reads = asyncio.gather(
        projects.get_project(svc, project_id),
        projects.get_limits(svc, project_id),
        projects.get_org_limits(svc),
    )
    project, limits, org_limits = await get_or_404(reads, "project")
    use = await capacity.measure(svc.with_project(project.id))
    return render(
        request,
        "projects/detail.html",
        {
            "project": project,
            "limits": limits,
            "org_limits": org_limits,
            "form": LimitsForm(session_ceiling=org_limits.max_concurrent_sessions),
            "use": use,
            "capacity_links": _project_links(request, project.id),
            **_limit_rows(limits),
        },
    )


def _project_links(request, project_id: str) -> dict:
    """The capacity words' links: the lists are those of the project the member works in, so a project
    other than that one links to its own limits only."""
    links = capacity.links(request)
    if request.service.project != project_id:
        links["sessions"] = links["pools"] = ""
    links["limits"] = _detail_url(request, project_id) + "#project-limits"
    return links


def _limit_rows(limits) -> dict:
    return {"limit_rows": [(label, getattr(limits, name)) for name, label in LIMIT_LABELS.items()]}


@require_http_methods(["GET", "POST"])
@org_view("viewer")
async def project_limits(request, project_id: str):
    """The limits panel: read by everyone, edited inline by admins (PATCH sends only changed caps)."""
    svc = request.service
    editing = request.GET.get("edit") == "1"
    if request.method == "POST" or editing:
        require_role(request, "admin")
    org_limits = await projects.get_org_limits(svc)
    ceiling = org_limits.max_concurrent_sessions
    form = LimitsForm(session_ceiling=ceiling)
    if request.method == "POST":
        form = LimitsForm(request.POST, session_ceiling=ceiling)
        editing = True
        if form.is_valid():
            changes = form.changes()
            if not changes:
                form.add_error(
                    None, "Nothing to change: pick “Cap at” or “Remove the cap” for at least one limit."
                )
            else:
                summary = ", ".join(f"{k}={v or 'no cap'}" for k, v in changes.items())
                try:
                    async with audited(request, "project.limits", target_id=project_id, detail=summary):
                        await projects.update_limits(svc, project_id, **changes)
                except Invalid as exc:
                    apply_service_errors(form, exc, {name: f"{name}_value" for name in LIMIT_LABELS})
                else:
                    messages.success(request, "Limits saved.")
                    form, editing = LimitsForm(session_ceiling=ceiling), False
    limits = await get_or_404(projects.get_limits(svc, project_id), "project")
    context = {
        "project": {"id": project_id},
        "limits": limits,
        "org_limits": org_limits,
        "form": form,
        "editing": editing,
        **_limit_rows(limits),
    }
    return render(request, "projects/detail.html", context, partial="project-limits")


@require_http_methods(["GET", "POST"])
@org_view("viewer")
async def project_rename(request, project_id: str):
    require_role(request, "admin")
    project = await get_or_404(projects.get_project(request.service, project_id), "project")
    form = ProjectForm(posted(request), initial={"name": project.name})

    async def rename(data: dict) -> str:
        async with audited(request, "project.rename", target_id=project_id, detail=data["name"]):
            renamed = await projects.update_project(request.service, project_id, name=data["name"])
        messages.success(request, f"Renamed to “{renamed.name}”.")
        return _detail_url(request, project_id)

    return await form_page(
        request, form, rename, "projects/rename.html", {"project": project}, partial="project-rename"
    )


@require_http_methods(["POST"])
@org_view("viewer")
async def project_status(request, project_id: str):
    """Archive or restore."""
    require_role(request, "admin")
    status = request.POST.get("status")
    if status not in ("active", "archived"):
        messages.error(request, "Choose archive or restore.")
        return done(request, _detail_url(request, project_id))
    action = f"project.{'archive' if status == 'archived' else 'restore'}"
    try:
        async with audited(request, action, target_id=project_id):
            project = await projects.update_project(request.service, project_id, status=status)
    except NotFound:
        raise Http404("No such project") from None
    messages.success(
        request, f"Project “{project.name}” {'archived' if status == 'archived' else 'restored'}."
    )
    return done(request, _detail_url(request, project_id))


@require_http_methods(["GET", "POST"])
@org_view("viewer")
async def project_delete(request, project_id: str):
    """Confirm, then soft-delete; a project that still holds resources is refused (409) and explained."""
    require_role(request, "admin")
    project = await get_or_404(projects.get_project(request.service, project_id), "project")

    async def delete() -> None:
        async with audited(request, "project.delete", target_id=project_id, detail=project.name):
            await projects.delete_project(request.service, project_id)
        if request.membership.project_id == project_id:
            request.membership.project_id = request.membership.project_name = ""
            await request.membership.asave(update_fields=["project_id", "project_name"])
        messages.success(request, f"Project “{project.name}” deleted.")

    url = org_reverse(request, "projects:list")
    context = {"project": project}
    return await confirmed(request, "projects/delete.html", context, delete, url, partial="project-delete")


@require_http_methods(["GET"])
@org_view("viewer")
async def project_selector(request):
    """The header's project picker: searchable, one page of matches."""
    query = request.GET.get("q", "").strip()
    page = await projects.list_projects(request.service, limit=20, query=query or None)
    return render(
        request,
        "projects/selector.html",
        {"page": page, "query": query, "current_project_id": request.membership.current_project_id},
    )


@require_http_methods(["POST"])
@org_view("viewer")
async def project_select(request):
    """Every member picks the project they work in; it is sent as the project header from then on."""
    project_id = request.POST.get("project_id", "").strip()
    if project_id:
        try:
            project = await projects.get_project(request.service.with_project(None), project_id)
        except NotFound:
            messages.error(request, "That project no longer exists.")
            return done(request, _back(request, org_reverse(request, "projects:list")))
        project_id, project_name = project.id, project.name or project.id
        messages.info(request, f"Now working in project “{project_name}”.")
    else:
        project_name = ""
        messages.info(request, "Now working in the organization's default project.")
    request.membership.project_id = project_id
    request.membership.project_name = project_name
    await request.membership.asave(update_fields=["project_id", "project_name"])
    return done(request, _back(request, org_reverse(request, "dashboard")))


def _back(request, fallback: str) -> str:
    """Back where the member was (the header sends HX-Current-URL): a page of this org only."""
    return safe_next(request, request.POST.get("next"), fallback, under=f"/o/{request.org.slug}/")
