"""Deployments: list, upload, follow the build live, stop and delete (notes §13; spec: state table)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.deployments.forms import DeploymentForm, FilterForm
from console.live.runs import Run
from console.service import Conflict, Invalid, NotFound, deployments
from console.service.contract import TERMINAL_DEPLOYMENT_STATUSES
from console.service.deployments import Deployment
from console.web.decorators import org_view, require_role
from console.web.forms import apply_service_errors
from console.web.pages import filtered_list, get_or_404, org_reverse
from console.web.render import done, render


@require_http_methods(["GET"])
@org_view("viewer")
async def deployment_list(request):
    form = FilterForm(request.GET)
    list_call = deployments.list_deployments
    return await filtered_list(request, "deployments/list.html", "deployments-table", list_call, form)


@require_http_methods(["GET", "POST"])
@org_view("viewer")
async def deployment_create(request):
    """Upload a zip (admins). Values of environment variables are sent once and never shown or logged."""
    require_role(request, "admin")
    form = DeploymentForm()
    if request.method == "POST":
        form = DeploymentForm(request.POST, request.FILES)
        if form.is_valid():
            data = form.cleaned_data
            env = data["env_vars"]
            what = f"version {data['version']}, entrypoint {data['entrypoint_rel_path']}"
            if env:
                what += f", env vars {', '.join(sorted(env))}"
            try:
                async with audited(request, "deployment.create", detail=what) as entry:
                    created = await deployments.create_deployment(
                        request.service,
                        file=data["file"].file,
                        filename=data["file"].name,
                        entrypoint_rel_path=data["entrypoint_rel_path"],
                        version=data["version"],
                        env_vars=env,
                        force=data["force"],
                        region=data["region"],
                    )
                    entry.target_id = created.id
            except Invalid as exc:
                field_map = {name: "env_vars" for name in exc.field_errors if name.startswith("env_vars[")}
                apply_service_errors(form, exc, field_map)
            except Conflict as exc:
                form.add_error(
                    "version",
                    f"{exc.message} To replace it, tick “Replace this version if it is already deployed”.",
                )
            else:
                messages.success(request, f"Deployment {created.id} queued: follow its build below.")
                return done(request, org_reverse(request, "deployments:detail", deployment_id=created.id))
    return render(request, "deployments/new.html", {"form": form}, partial="deployment-create")


def summary_context(deployment: Deployment, org_slug: str) -> dict:
    return {"dep": deployment, "org_slug": org_slug}


@require_http_methods(["GET"])
@org_view("viewer")
async def deployment_detail(request, deployment_id: str):
    deployment = await get_or_404(deployments.get_deployment(request.service, deployment_id), "deployment")
    return render(request, "deployments/detail.html", summary_context(deployment, request.org.slug))


def _version_summary(kind: str, data: dict) -> str | None:
    if kind != "app_version_summary":
        return None
    actions = ", ".join(a.get("name", "?") for a in data.get("actions") or [] if isinstance(a, dict))
    return f"Serving {data.get('app_name')} {data.get('version')}: actions {actions or 'none'}"


RUN = Run(
    kind="deployment",
    record=Deployment,
    summary="deployments/detail.html#deployment-summary",
    log_line="deployments/detail.html#log-line",
    summary_context=summary_context,
    terminal=TERMINAL_DEPLOYMENT_STATUSES,
    ended_message="The deployment is stopped or failed: no more events.",
    other=_version_summary,
)


@require_http_methods(["GET"])
@org_view("viewer")
async def deployment_events(request, deployment_id: str):
    """Build logs and state changes, relayed until the deployment is stopped or failed."""
    return RUN.relay(request, deployment_id, deployments.events_path(deployment_id))


@require_http_methods(["GET", "POST"])
@org_view("viewer")
async def deployment_delete(request, deployment_id: str):
    """Confirm, then delete. The state read first says what happens (spec: state table): a running
    deployment is stopped and marked for deletion; a stopped or failed one is left unchanged."""
    require_role(request, "admin")
    before = await get_or_404(deployments.get_deployment(request.service, deployment_id), "deployment")
    if request.method == "POST":
        if before.terminal:
            outcome = f"was already {before.status}: nothing changed"
        else:
            outcome = f"was {before.status}: stopped and marked for deletion"
        try:
            async with audited(request, "deployment.delete", target_id=deployment_id, detail=outcome):
                await deployments.delete_deployment(request.service, deployment_id)
        except NotFound:
            raise Http404("No such deployment") from None
        if before.terminal:
            messages.info(request, f"Deployment {deployment_id} {outcome}.")
        else:
            messages.success(request, f"Deployment {deployment_id} {outcome}.")
        return done(request, org_reverse(request, "deployments:detail", deployment_id=deployment_id))
    return render(request, "deployments/delete.html", {"dep": before}, partial="deployment-delete")
