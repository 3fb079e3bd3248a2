"""Auth connection pages: list, create, overview (health settings inline), history, the login flow
followed live, and delete (notes §9).

Roles: viewers read and watch a flow; operators create connections, change their health settings,
start logins, answer a flow's steps and delete connections (the issue makes these operator actions).

The login flow: the flow page shows the current step (``auth-flow-step``) and, while a flow runs,
follows the connection's events stream through the live relay. Every state frame is rendered once for
all viewers (no CSRF token, no role: the page disables the form for viewers and htmx sends the CSRF
header). When the stream is not live, the step polls itself every 2 s (``static/js/auth.js`` skips the
poll while the stream is live) and the server answers 204 while nothing changed, so a half-typed answer
is not wiped. Values typed into a flow are sent upstream and forgotten: never rendered back, never
logged, never audited (the audit names the fields only).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from urllib.parse import quote

from django.contrib import messages
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.accounts.audit import audited, record
from console.auth.forms import SERVICE_FIELDS, ConnectionForm, HealthForm, StepForm, describe_interval
from console.live import Channel, Frame, relay_response, service_stream
from console.service import Conflict, Forbidden, Invalid, NotFound, ServiceError, credentials, projects
from console.service import auth_connections as auth
from console.service.contract import AWAITING_STEPS, CONNECTION_STATUSES, TIMELINE_TYPES
from console.web import bulk, deferred
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.pages import get_or_404, org_reverse, posted
from console.web.paging import pager, paging
from console.web.render import done, render
from console.web.text import safe_url

REAUTH_REASONS = {
    "external_credential": "An item of an external password manager signs in for it.",
    "cua_has_credential": "It kept the values typed at a successful login and signs in with them.",
    "has_credential": "Its linked credential holds everything the site asks for.",
    "viable_plans_found": "The service found a way to sign in without help.",
    "no_requirements_recorded": "The site asked for nothing that only a person can give.",
    "requirements_satisfiable": "Everything the site asks for is stored.",
    "no_prior_successful_login": "It has never logged in successfully, so what the site asks for is not "
    "known yet.",
    "no_credential": "No credential is linked and no values were saved from a login.",
    "no_viable_plans": "The service found no way to sign in to this site on its own.",
    "viable_plans_require_external_action": "Every way to sign in needs an action outside the browser.",
    "requires_external_action": "The site asks for an action outside the browser, such as approving a "
    "sign-in on a phone.",
    "requires_totp_without_secret": "The site asks for an authenticator code and the credential has no "
    "TOTP secret.",
    "requires_sms_code": "The site asks for a code sent by SMS.",
    "requires_email_code": "The site asks for a code sent by email.",
    "requires_customer_input": "The site asks for something only a person can answer, such as which "
    "account to use.",
}
FLOW_ERRORS = {
    "bot_detected": "The site recognised an automated browser and blocked it (a CAPTCHA or a bot check).",
    "superseded": "A newer login replaced this one.",
    "connection_deleted": "The auth connection was deleted.",
}
STEP_WORDS = {
    "DISCOVERING": "Finding the login form",
    "AWAITING_INPUT": "Waiting for your answer",
    "AWAITING_EXTERNAL_ACTION": "Waiting for an action outside the browser",
    "SUBMITTING": "Submitting",
    "COMPLETED": "Completed",
}
STALE = "The login moved on before your answer was sent. Here is where it is now."


async def _org_limits(request):
    """The plan's limits, or None when the service cannot say (the form then checks less)."""
    try:
        return await projects.get_org_limits(request.service)
    except ServiceError:
        return None


def reauth_words(connection) -> str:
    reason = connection.can_reauth_reason
    return REAUTH_REASONS.get(reason or "", (reason or "unknown").replace("_", " ").capitalize() + ".")


def flow_error_words(flow) -> str:
    return FLOW_ERRORS.get(flow.error_code or "") or flow.error_message or "The site did not say why."


def seconds_left(moment) -> int | None:
    if not isinstance(moment, datetime):
        return None
    return max(int((moment - datetime.now(UTC)).total_seconds()), 0)


def step_context(
    org_slug: str,
    connection_id: str,
    flow,
    *,
    form: StepForm | None = None,
    notice: str = "",
    oob_header: bool = False,
):
    """The context of ``auth/flow.html#auth-flow-step``: no request needed (the live relay renders it).

    ``oob_header``: the step travels alone (a poll, a submit, the live stream), so once the flow has ended
    it brings the page's header along (out-of-band): no "login in progress", no hosted-page or live-view
    link, and "Authenticated" after a success. The full page renders its own header and passes False.
    """
    flow_url = org_reverse(org_slug, "auth:flow", connection_id=connection_id)
    if form is None and flow.flow_running and flow.flow_step in AWAITING_STEPS:
        form = StepForm(flow)
    return {
        "flow": flow,
        "form": form,
        "notice": notice,
        "step_words": STEP_WORDS.get(flow.flow_step or "", flow.flow_step or ""),
        "error_words": flow_error_words(flow),
        "submit_url": org_reverse(org_slug, "auth:submit", connection_id=connection_id),
        "login_url": org_reverse(org_slug, "auth:login", connection_id=connection_id),
        "flow_url": flow_url,
        "poll_url": f"{flow_url}?seen={quote(flow.pause_key)}",
        "oob_header": oob_header and flow.flow_ended,
    }


# List and create ---------------------------------------------------------------------------------


@require_GET
@org_view("viewer")
async def connection_list(request):
    page_params = paging(request)
    filters = {key: request.GET.get(key, "").strip() for key in ("q", "domain", "profile", "status")}
    if filters["status"] not in CONNECTION_STATUSES:
        filters["status"] = ""

    async def load() -> dict:
        page = await auth.list_connections(
            request.service,
            limit=page_params.limit,
            offset=page_params.offset,
            query=filters["q"] or None,
            domain=filters["domain"].lower() or None,
            profile_name=filters["profile"] or None,
        )
        # The service filters by neither status: this one applies to the page shown (the overview links here).
        connections = [c for c in page.items if not filters["status"] or c.status == filters["status"]]
        rows = [{"connection": c, "reason": reauth_words(c)} for c in connections]
        return {"page": page, "rows": rows, "pager": pager(request, page_params, page)}

    context = {**filters, "statuses": CONNECTION_STATUSES}
    return await deferred.list_page(request, "auth/list.html", "auth-table", context, load)


@require_http_methods(["GET", "POST"])
@org_view("operator")
async def connection_create(request):
    limits = await _org_limits(request)
    floor = limits.min_health_check_interval_seconds if limits else None
    form = ConnectionForm(posted(request), floor=floor)
    conflict_with = None
    if request.method == "POST" and form.is_valid():
        body = form.payload()
        svc = request.service
        try:
            profile_is_new = not await auth.profile_exists(svc, body["profile_name"])
            detail = f"{body['profile_name']} @ {body['domain']}"
            async with audited(request, "auth.create", detail=detail) as entry:
                connection = await auth.create_connection(svc, **body)
                entry.target_id = connection.id
        except Conflict:
            conflict_with = await auth.find_connection(
                svc, domain=body["domain"], profile_name=body["profile_name"]
            )
            form.add_error(
                None, f"Profile “{body['profile_name']}” already has an auth connection for {body['domain']}."
            )
        except Forbidden as exc:
            form.add_error(None, f"Your plan does not allow another auth connection: {exc.message}")
        except Invalid as exc:
            apply_service_errors(form, exc, SERVICE_FIELDS)
        else:
            text = f"Auth connection for {connection.profile_name} on {connection.domain} created."
            if profile_is_new:
                text += f" The profile “{connection.profile_name}” did not exist, so it was created."
            messages.success(request, text)
            return done(request, org_reverse(request, "auth:detail", connection_id=connection.id))
    context = {
        "form": form,
        "limits": limits,
        "floor_words": describe_interval(floor) if floor else "",
        "conflict_with": conflict_with,
        "credential_names": await _credential_names(request),
    }
    return render(request, "auth/new.html", context, partial="auth-form")


async def _credential_names(request) -> list[str]:
    """Suggestions for the credential field (the first 100 of the vault); none when it cannot be read."""
    try:
        page = await credentials.list_credentials(request.service, limit=100)
    except ServiceError:
        return []
    return [c.name for c in page.items if c.name]


# One connection ----------------------------------------------------------------------------------


def _header_context(connection, tab: str) -> dict:
    return {"connection": connection, "tab": tab, "reason": reauth_words(connection)}


def replay_url(org, event: auth.TimelineEvent) -> str:
    """The console's player of a login's recording (its browser session's replay), or ""."""
    ids = (event.browser_session_id or "", event.replay_id or "")
    # Ids from the service, made into a path: only id tokens (an id with "/" broke the page, ".." linked
    # elsewhere in the console).
    if not all(bulk.ID.fullmatch(i) and i.strip(".") for i in ids):
        return ""
    return org_reverse(
        org, "browsers:panes:replay", session_id=event.browser_session_id, replay_id=event.replay_id
    )


async def _last_login(request, connection) -> dict | None:
    """The newest login or re-auth of a connection that records sessions, and its replay's player."""
    if not connection.record_session:
        return None
    try:
        page = await auth.list_timeline(request.service, connection.id, limit=20)
    except ServiceError:
        return None
    event = next((e for e in page.items if e.type in ("login", "reauth")), None)
    if event is None:
        return {"event": None, "replay_url": ""}
    return {"event": event, "replay_url": replay_url(request, event)}


@require_GET
@org_view("viewer")
async def connection_detail(request, connection_id: str):
    """The frame at once; the connection loads after (console/web/deferred.py)."""

    async def detail() -> dict:
        connection, limits = await asyncio.gather(
            get_or_404(auth.get_connection(request.service, connection_id), "auth connection"),
            _org_limits(request),
        )
        floor = limits.min_health_check_interval_seconds if limits else None
        return {
            **_header_context(connection, "overview"),
            "last_login": await _last_login(request, connection),
            "health_form": HealthForm(connection=connection, floor=floor),
            "interval_words": describe_interval(connection.health_check_interval),
            "floor_words": describe_interval(floor) if floor else "",
        }

    if request.htmx and request.htmx.target == "auth-health":
        return render(request, "auth/detail.html#auth-health", await detail())
    return await deferred.page(request, "auth/detail.html", {}, [deferred.Part("auth-detail", detail)])


@require_POST
@org_view("operator")
async def connection_settings(request, connection_id: str):
    """The inline health settings: PATCH only the fields that changed."""
    connection = await get_or_404(auth.get_connection(request.service, connection_id), "auth connection")
    limits = await _org_limits(request)
    floor = limits.min_health_check_interval_seconds if limits else None
    form = HealthForm(request.POST, connection=connection, floor=floor)
    saved = False
    if form.is_valid():
        changes = form.changes()
        if not changes:
            messages.info(request, "Nothing to save: the health settings are unchanged.")
            saved = True
        else:
            detail = "changed: " + ", ".join(changes)
            try:
                async with audited(request, "auth.update", target_id=connection.id, detail=detail):
                    connection = await auth.update_connection(request.service, connection.id, **changes)
            except Invalid as exc:
                apply_service_errors(form, exc, SERVICE_FIELDS)
            except NotFound:
                raise Http404("No such auth connection") from None
            else:
                saved = True
                messages.success(request, "Health settings saved.")
        if saved:
            form = HealthForm(connection=connection, floor=floor)
    if saved and not request.htmx:
        return HttpResponseRedirect(org_reverse(request, "auth:detail", connection_id=connection.id))
    context = {
        **_header_context(connection, "overview"),
        "health_form": form,
        "interval_words": describe_interval(connection.health_check_interval),
        "floor_words": describe_interval(floor) if floor else "",
    }
    return render(request, "auth/detail.html", context, partial="auth-health")


@require_GET
@org_view("viewer")
async def connection_history(request, connection_id: str):
    connection = await get_or_404(auth.get_connection(request.service, connection_id), "auth connection")
    page_params = paging(request)
    kind = request.GET.get("type", "")
    if kind not in TIMELINE_TYPES:
        kind = ""
    page = await auth.list_timeline(
        request.service, connection.id, type=kind or None, limit=page_params.limit, offset=page_params.offset
    )
    context = {
        **_header_context(connection, "history"),
        "page": page,
        "events": [(e, replay_url(request, e)) for e in page.items],
        "kind": kind,
        "kinds": [
            ("", "Everything"),
            ("login", "Logins"),
            ("reauth", "Re-auths"),
            ("health_check", "Health checks"),
        ],
        "pager": pager(request, page_params, page),
    }
    return render(request, "auth/history.html", context, partial="auth-history")


@require_http_methods(["GET", "POST"])
@org_view("operator")
async def connection_delete(request, connection_id: str):
    connection = await get_or_404(auth.get_connection(request.service, connection_id), "auth connection")
    if request.method == "POST":
        detail = f"{connection.profile_name} @ {connection.domain}"
        if connection.flow_running:
            detail += " (canceled the login flow in progress)"
        try:
            async with audited(request, "auth.delete", target_id=connection.id, detail=detail):
                await auth.delete_connection(request.service, connection.id)
        except NotFound:
            messages.info(request, "That auth connection was already deleted.")
        else:
            messages.success(
                request, f"Auth connection for {connection.profile_name} on {connection.domain} deleted."
            )
        return done(request, org_reverse(request, "auth:list"))
    return render(request, "auth/delete.html", _header_context(connection, "overview"))


# The login flow ----------------------------------------------------------------------------------


def _flow_page_context(request, connection, *, form=None, notice="", step_only=False):
    return {
        **_header_context(connection, "flow"),
        **step_context(
            request.org.slug, connection.id, connection, form=form, notice=notice, oob_header=step_only
        ),
        "expires_in": seconds_left(connection.flow_expires_at) if connection.flow_running else None,
        "events_url": org_reverse(request, "auth:events", connection_id=connection.id),
        "hosted_link": org_reverse(request, "auth:flow-link", connection_id=connection.id, which="hosted"),
        "live_view_link": org_reverse(
            request, "auth:flow-link", connection_id=connection.id, which="live-view"
        ),
    }


@require_GET
@org_view("viewer")
async def connection_flow(request, connection_id: str):
    """The flow page; as the ``auth-flow-step`` partial it answers 204 while the step is unchanged."""
    connection = await get_or_404(auth.get_connection(request.service, connection_id), "auth connection")
    if (
        request.htmx
        and request.htmx.target == "auth-flow-step"
        and request.GET.get("seen") == connection.pause_key
    ):
        return HttpResponse(status=204)
    step_only = bool(request.htmx and request.htmx.target == "auth-flow-step")
    context = _flow_page_context(request, connection, step_only=step_only)
    return render(request, "auth/flow.html", context, partial="auth-flow-step")


# The flow's hosted page and live view: capability URLs of the service (whoever holds one acts in the login),
# which the console cannot revoke. The page links to this console URL instead, which re-checks the member
# (operator, still in the org) at each use, audits the opening, and only then redirects to the URL of the
# flow running now: the service's URL reaches a browser only when an operator opens it (docs/security.md).
FLOW_LINKS = {"hosted": ("hosted_url", "hosted login page"), "live-view": ("live_view_url", "live view")}


@require_GET
@org_view("operator")
async def connection_flow_link(request, connection_id: str, which: str):
    if which not in FLOW_LINKS:
        raise Http404("No such page of a login")
    field, label = FLOW_LINKS[which]
    connection = await get_or_404(auth.get_connection(request.service, connection_id), "auth connection")
    target = safe_url(getattr(connection, field)) if connection.flow_running else ""
    if not target:
        messages.info(request, f"This login has no {label} now: it may have ended.")
        return HttpResponseRedirect(org_reverse(request, "auth:flow", connection_id=connection.id))
    await record(request, "auth.flow.open", target_id=connection.id, detail=f"opened the {label}")
    response = HttpResponseRedirect(target)
    response["Referrer-Policy"] = "no-referrer"
    return response


@require_POST
@org_view("operator")
async def connection_login(request, connection_id: str):
    connection = await get_or_404(auth.get_connection(request.service, connection_id), "auth connection")
    try:
        async with audited(request, "auth.login", target_id=connection.id) as entry:
            started = await auth.start_login(request.service, connection.id)
            entry.detail = f"{started.flow_type} flow started"
    except NotFound:
        raise Http404("No such auth connection") from None
    except ServiceError as exc:
        messages.error(request, f"The login could not start: {exc.message}")
    return done(request, org_reverse(request, "auth:flow", connection_id=connection.id))


@sensitive_post_parameters()
@require_POST
@org_view("operator")
async def connection_submit(request, connection_id: str):
    """Send exactly one action for the current pause, echoing its interaction_id."""
    connection = await get_or_404(auth.get_connection(request.service, connection_id), "auth connection")
    form = StepForm(connection, request.POST)
    notice = ""
    sent = False
    current = (
        connection.flow_running
        and connection.flow_step in AWAITING_STEPS
        and request.POST.get("pause", "") == connection.pause_key
    )
    if not current:
        notice, form = STALE, None
    elif (action := form.action()) is not None:
        kind, payload = action
        if kind == "choice":
            detail = f"chose: {payload.label} ({payload.value})"
        else:
            detail = "submitted fields: " + form.field_names(payload)
        try:
            async with audited(request, "auth.flow.submit", target_id=connection.id, detail=detail):
                await _send(request.service, connection, kind, payload)
        except Conflict:
            notice, form = STALE, None
        except Invalid as exc:
            form.add_service_errors(exc.field_errors)
        else:
            sent = True
    if sent and not request.htmx:
        return HttpResponseRedirect(org_reverse(request, "auth:flow", connection_id=connection.id))
    if sent or notice:
        connection = await get_or_404(auth.get_connection(request.service, connection.id), "auth connection")
        form = None
    context = _flow_page_context(request, connection, form=form, notice=notice, step_only=bool(request.htmx))
    if request.htmx:
        return render(request, "auth/flow.html#auth-flow-step", context)
    return render(request, "auth/flow.html", context)


async def _send(svc, connection, kind: str, payload) -> None:
    if kind == "choice":
        if payload.action == "selected_choice_id":
            await auth.submit_choice(
                svc, connection.id, interaction_id=connection.interaction_id, choice_id=payload.value
            )
        else:
            await auth.submit_legacy(svc, connection.id, payload.action, payload.value)
    elif connection.canonical:
        await auth.submit_fields(svc, connection.id, interaction_id=connection.interaction_id, values=payload)
    else:
        await auth.submit_legacy(svc, connection.id, "fields", payload)


def _renderer(org_slug: str, connection_id: str):
    """Renders each upstream event once for every viewer; repeats of an unchanged state are skipped."""
    last = {"key": None}

    def render_event(event) -> Frame | None:
        data = event.data if isinstance(event.data, dict) else {}
        if data.get("event") == "error":
            error = data.get("error") or {}
            html = render_to_string(
                "auth/flow.html#auth-flow-step",
                {"gone": error.get("message") or "The service reported an error on this login flow."},
            )
            return Frame(html=html, event="state")
        state = auth.state_of(event)
        if state is None or state.pause_key == last["key"]:
            return None
        last["key"] = state.pause_key
        context = step_context(org_slug, connection_id, state, oob_header=True)
        html = render_to_string("auth/flow.html#auth-flow-step", context)
        return Frame(html=html, event="state")

    return render_event


def _terminal(event) -> bool:
    state = auth.state_of(event)
    return state is not None and state.flow_ended


@require_GET
@org_view("viewer")
async def connection_events(request, connection_id: str):
    """The flow's events stream, relayed: one upstream per connection and console process."""
    svc = request.service
    key = ("auth", request.org.pk, svc.project, connection_id)
    channel = Channel(
        key=key,
        open=service_stream(svc, f"/auth/connections/{quote(connection_id, safe='')}/events"),
        render=_renderer(request.org.slug, connection_id),
        resumable=False,
        is_terminal=_terminal,
        ended_message="The login flow has ended.",
    )
    return relay_response(request, channel)
