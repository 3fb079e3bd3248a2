"""Apps: the deployed app versions, their actions and schemas, and the invoke form (notes §13)."""

from __future__ import annotations

import io

from django.contrib import messages
from django.http import Http404
from django.views.decorators.http import require_http_methods, require_POST

from console.accounts.audit import audited
from console.apps import sample, schema
from console.apps.forms import InvokeForm
from console.service import CapReached, Conflict, Invalid, NotFound, apps, deployments, invocations
from console.usage import refusals
from console.web import deferred
from console.web.decorators import org_view, require_role
from console.web.forms import apply_service_errors
from console.web.pages import org_reverse
from console.web.paging import pager, paging
from console.web.render import done, render


@require_http_methods(["GET"])
@org_view("viewer")
async def app_list(request):
    page_params = paging(request)
    filters = {key: request.GET.get(key, "").strip() for key in ("query", "app_name", "version")}

    async def load() -> dict:
        page = await apps.list_apps(
            request.service, limit=page_params.limit, offset=page_params.offset, **filters
        )
        return {"page": page, "pager": pager(request, page_params, page)}

    return await deferred.list_page(request, "apps/list.html", "apps-table", {"filters": filters}, load)


@require_POST
@org_view("operator")
async def deploy_sample(request):
    """The shipped sample app (console/apps/sample/), deployed in the current project: a fixed archive, so
    operators may deploy it (their own zips are the admins', on the deployments page)."""
    detail = f"the sample app {sample.NAME} {sample.VERSION}, entrypoint {sample.ENTRYPOINT}"
    try:
        async with audited(request, "deployment.create", detail=detail) as entry:
            created = await deployments.create_deployment(
                request.service,
                file=io.BytesIO(sample.archive()),
                filename=f"{sample.NAME}.zip",
                entrypoint_rel_path=sample.ENTRYPOINT,
                version=sample.VERSION,
            )
            entry.target_id = created.id
    except Conflict:
        messages.info(request, f"The sample app {sample.NAME} {sample.VERSION} is already deployed.")
        return done(request, org_reverse(request, "deployments:list"))
    messages.success(request, f"The sample app is building ({created.id}): it shows here once it runs.")
    return done(request, org_reverse(request, "deployments:detail", deployment_id=created.id))


def _action_rows(summary) -> list[dict]:
    return [
        {
            "action": action,
            "input_rows": schema.rows(action.input_schema),
            "output_rows": schema.rows(action.output_schema),
            "input_json": schema.pretty(action.input_schema or {}),
            "output_json": schema.pretty(action.output_schema or {}),
        }
        for action in summary.actions or []
    ]


@require_http_methods(["GET"])
@org_view("viewer")
async def app_detail(request, app_name: str, version: str | None = None):
    """One app: its deployed versions, and the chosen version's actions (newest version by default)."""
    versions = await apps.list_app_versions(request.service, app_name)
    if not versions:
        raise Http404("No deployed version of this app")
    chosen = next((v for v in versions if v.version == version), None) if version else versions[0]
    if chosen is None:
        raise Http404("This version of the app is not deployed")
    context = {"app_name": app_name, "versions": versions, "chosen": chosen, "actions": _action_rows(chosen)}
    return render(request, "apps/detail.html", context)


@require_http_methods(["GET", "POST"])
@org_view("viewer")
async def invoke(request, app_name: str, version: str, action_name: str):
    """The form generated from the action's input schema; a valid one starts an async invocation."""
    require_role(request, "operator")
    summary = await apps.get_app_version(request.service, app_name, version)
    action = summary.action(action_name) if summary else None
    if action is None:
        raise Http404("No such action in this app version")
    form = InvokeForm(action.input_schema)
    if request.method == "POST":
        form = InvokeForm(action.input_schema, request.POST)
        if form.is_valid():
            target = f"{app_name}@{version} {action_name}"
            try:
                async with audited(request, "invocation.create", detail=target) as entry:
                    started = await invocations.invoke(
                        request.service,
                        app_name=app_name,
                        action_name=action_name,
                        version=version,
                        payload=form.payload(),
                        async_timeout_seconds=form.cleaned_data.get("async_timeout_seconds"),
                    )
                    entry.target_id = started.id
            except Invalid as exc:
                apply_service_errors(form, exc)
            except CapReached as exc:
                form.add_error(None, await refusals.explain(request, exc))
            except NotFound as exc:
                form.add_error(None, f"This app version is no longer deployed ({exc.message}).")
            else:
                return done(request, org_reverse(request, "invocations:detail", invocation_id=started.id))
    context = {
        "summary": summary,
        "action": action,
        "form": form,
        "input_rows": schema.rows(action.input_schema),
        "input_json": schema.pretty(action.input_schema or {}),
    }
    return render(request, "apps/invoke.html", context, partial="invoke-form")
