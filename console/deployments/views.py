"""Deployments: list, upload, follow the build live, stop and delete (notes §13; spec: state table)."""

from __future__ import annotations

from dataclasses import replace

from django.contrib import messages
from django.http import Http404
from django.template.loader import render_to_string
from django.views.decorators.http import require_http_methods

from console.accounts.audit import audited
from console.deployments.forms import DeploymentForm, FilterForm
from console.live import Channel, Frame, relay_response, service_stream
from console.service import Conflict, Invalid, NotFound, deployments
from console.service.contract import TERMINAL_DEPLOYMENT_STATUSES
from console.service.deployments import Deployment
from console.service.records import parse_datetime
from console.web import deferred
from console.web.decorators import org_view, require_role
from console.web.forms import apply_service_errors
from console.web.pages import get_or_404, org_reverse
from console.web.paging import pager, paging
from console.web.render import done, render

SUMMARY = "deployments/detail.html#deployment-summary"
LOG_LINE = "deployments/detail.html#log-line"


@require_http_methods(["GET"])
@org_view("viewer")
async def deployment_list(request):
    page_params = paging(request)
    form = FilterForm(request.GET)

    async def load() -> dict:
        if not form.is_valid():
            return {"page": None, "pager": None}
        page = await deployments.list_deployments(
            request.service, limit=page_params.limit, offset=page_params.offset, **form.filters()
        )
        page = replace(page, items=[d for d in page.items if form.keeps(d)])
        return {"page": page, "pager": pager(request, page_params, page)}

    return await deferred.list_page(
        request, "deployments/list.html", "deployments-table", {"form": form}, load
    )


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


def _log_frame(line: dict) -> Frame:
    return Frame(html=render_to_string(LOG_LINE, {"line": line}), event="log")


def render_event(org_slug: str):
    def render_one(event) -> list[Frame] | None:
        data = event.data if isinstance(event.data, dict) else {}
        kind = data.get("event")
        at = parse_datetime(data.get("timestamp"))
        if kind == "log":
            return [_log_frame({"at": at, "kind": "log", "text": str(data.get("message", ""))})]
        if kind == "deployment_state":
            deployment = Deployment.from_json(data.get("deployment"))
            reason = f" ({deployment.status_reason})" if deployment.status_reason else ""
            return [
                _log_frame(
                    {
                        "at": at,
                        "kind": f"state state-{deployment.status}",
                        "text": f"State: {deployment.status}{reason}",
                    }
                ),
                Frame(html=render_to_string(SUMMARY, summary_context(deployment, org_slug)), event="state"),
            ]
        if kind == "app_version_summary":
            actions = ", ".join(a.get("name", "?") for a in data.get("actions") or [] if isinstance(a, dict))
            text = f"Serving {data.get('app_name')} {data.get('version')}: actions {actions or 'none'}"
            return [_log_frame({"at": at, "kind": "summary", "text": text})]
        if kind == "error":
            error = data.get("error") if isinstance(data.get("error"), dict) else {}
            text = f"Error from the service: {error.get('message') or error.get('code') or 'unknown'}"
            return [_log_frame({"at": at, "kind": "error", "text": text})]
        return None

    return render_one


def is_terminal(event) -> bool:
    data = event.data if isinstance(event.data, dict) else {}
    if data.get("event") != "deployment_state":
        return False
    return (data.get("deployment") or {}).get("status") in TERMINAL_DEPLOYMENT_STATUSES


@require_http_methods(["GET"])
@org_view("viewer")
async def deployment_events(request, deployment_id: str):
    """Build logs and state changes, relayed until the deployment is stopped or failed."""
    svc = request.service
    channel = Channel(
        key=("deployment", request.org.pk, svc.project, deployment_id),
        open=service_stream(svc, deployments.events_path(deployment_id)),
        render=render_event(request.org.slug),
        is_terminal=is_terminal,
        replay_to_new_viewers=True,
        ended_message="The deployment is stopped or failed: no more events.",
    )
    return relay_response(request, channel)


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
