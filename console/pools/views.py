"""Browser pools: live capacity, configuration, acquire/release/flush, delete (notes §7)."""

from __future__ import annotations

import asyncio

from django.contrib import messages
from django.http import Http404
from django.views.decorators.http import require_http_methods
from django_htmx.http import trigger_client_event

from console import capacity
from console.accounts.audit import audited
from console.pools.forms import AcquireForm, DeleteForm, PoolForm, ReleaseForm, initial_from
from console.service import (
    CapReached,
    Conflict,
    Invalid,
    NotFound,
    ServiceError,
    extensions,
    pools,
    profiles,
    proxies,
)
from console.service.contract import CAPTURE_CATEGORIES
from console.usage import refusals
from console.web import bulk, deferred
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.pages import get_or_404, org_reverse, record_link
from console.web.paging import pager, paging
from console.web.render import done, render

POLL_SECONDS = 3
CHOICES_LIMIT = 100
# Service field names (400 details) → form fields.
FIELD_MAP = {
    "viewport.width": "viewport_width",
    "viewport.height": "viewport_height",
    "viewport.refresh_rate": "viewport_refresh_rate",
    "telemetry": "telemetry_enabled",
    "telemetry.enabled": "telemetry_enabled",
    "telemetry.browser": "telemetry_enabled",
    **{f"telemetry.browser.{c}": f"telemetry_{c}" for c in CAPTURE_CATEGORIES},
}
CONFLICT_FIELDS = {"pool_name_taken": "name"}


def _detail_page(request, pool_id: str) -> dict:
    """What a form's answer needs to render the whole pool page: the leases load after."""
    page = org_reverse(request, "pools:detail", pool_id=pool_id)
    return {"pool_id": pool_id, **deferred.later(page, "pools/detail.html", ["pool-leases"])}


async def _choices(svc) -> dict:
    """The pickers' options: profiles, extensions and proxies of the project (first 100 of each)."""
    profile_page, extension_page, proxy_page = await asyncio.gather(
        profiles.list_profiles(svc, limit=CHOICES_LIMIT),
        extensions.list_extensions(svc, limit=CHOICES_LIMIT),
        proxies.list_proxies(svc, limit=CHOICES_LIMIT),
    )
    return {
        "profiles": profile_page.items,
        "extensions": extension_page.items,
        "proxies": proxy_page.items,
        "choices_truncated": any(p.has_more for p in (profile_page, extension_page, proxy_page)),
    }


async def _apply_errors(request, form, exc) -> None:
    if isinstance(exc, CapReached):
        # The size is what went over: the explanation and the link to the project's limits go there.
        form.add_error("size", await refusals.explain(request, exc))
    elif isinstance(exc, Invalid):
        apply_service_errors(form, exc, FIELD_MAP)
    elif exc.code in CONFLICT_FIELDS:
        form.add_error(CONFLICT_FIELDS[exc.code], exc.message)
    else:
        form.add_error(None, exc.message)


@require_http_methods(["GET"])
@org_view("viewer")
async def pool_list(request):
    page_params = paging(request)
    query = request.GET.get("q", "").strip()

    async def load() -> dict:
        page, found = await asyncio.gather(
            pools.list_pools(
                request.service, limit=page_params.limit, offset=page_params.offset, query=query or None
            ),
            capacity.for_page(request),
        )
        return {"page": page, **found, "pager": pager(request, page_params, page)}

    context = {"query": query, "poll_seconds": POLL_SECONDS}
    return await deferred.list_page(request, "pools/list.html", "pools-live", context, load, poll=True)


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def pool_create(request):
    choices = await _choices(request.service)
    form = PoolForm(initial={"fill_rate_per_minute": 25, "timeout_seconds": 600}, **_form_choices(choices))
    if request.method == "POST":
        form = PoolForm(request.POST, **_form_choices(choices))
        if form.is_valid():
            try:
                async with audited(request, "pool.create") as entry:
                    pool = await pools.create_pool(request.service, **form.create_body())
                    entry.target_id, entry.detail = pool.id, f"{pool.label} size={pool.size}"
            except (Invalid, Conflict, CapReached) as exc:
                await _apply_errors(request, form, exc)
            else:
                messages.success(request, f"Pool “{pool.label}” created; it warms up at its fill rate.")
                return done(request, org_reverse(request, "pools:detail", pool_id=pool.id))
    context = {"form": form, "pool": None, **choices}
    return render(request, "pools/form.html", context, partial="pool-form")


def _form_choices(choices: dict) -> dict:
    return {k: choices[k] for k in ("profiles", "extensions", "proxies")}


@require_http_methods(["GET"])
@org_view("viewer")
async def pool_detail(request, pool_id: str):
    """The frame at once; the pool, then its leases, load after (console/web/deferred.py)."""
    if request.htmx and request.htmx.target == "pool-counts":
        context = {
            "pool": await get_or_404(pools.get_pool(request.service, pool_id), "pool"),
            "poll_seconds": POLL_SECONDS,
        }
        return render(request, "pools/detail.html#pool-counts", context)

    async def detail() -> dict:
        return {
            "pool": await get_or_404(pools.get_pool(request.service, pool_id), "pool"),
            "acquire_form": AcquireForm(initial={"timeout_seconds": 10}),
            "release_form": ReleaseForm(),
        }

    async def leases() -> dict:
        pool = await get_or_404(pools.get_pool(request.service, pool_id), "pool")
        page = await pools.leased_sessions(request.service, pool)
        rows = [
            {"session": s, "url": record_link(request, "browsers:detail", session_id=s.session_id)}
            for s in page.items
        ]
        return {"lease_rows": rows, "leases_more": page.has_more, "leases_limit": pools.LEASES_LIMIT}

    parts = [deferred.Part("pool-detail", detail), deferred.Part("pool-leases", leases)]
    context = {"pool_id": pool_id, "poll_seconds": POLL_SECONDS}
    return await deferred.page(request, "pools/detail.html", context, parts)


@require_http_methods(["POST"])
@org_view("operator")
async def pool_acquire(request, pool_id: str):
    """Lease a browser (long poll); the page shows the session and links to it."""
    form = AcquireForm(request.POST)
    session = None
    waited = False
    timeout = 10
    if form.is_valid():
        data = form.cleaned_data
        timeout = data["timeout_seconds"] if data["timeout_seconds"] is not None else 10
        try:
            async with audited(request, "pool.acquire", target_id=pool_id) as entry:
                session = await pools.acquire(
                    request.service,
                    pool_id,
                    timeout_seconds=timeout,
                    name=data["name"] or None,
                    start_url=data["start_url"] or None,
                )
                entry.detail = f"session {session.session_id}" if session else f"none free within {timeout} s"
        except NotFound:
            raise Http404("No such pool") from None
        except (Invalid, Conflict) as exc:
            if isinstance(exc, Invalid):
                apply_service_errors(form, exc)
            else:
                form.add_error("name", exc.message)
        else:
            waited = session is None
    pool = await get_or_404(pools.get_pool(request.service, pool_id), "pool")
    context = {
        "pool": pool,
        "acquire_form": form,
        "release_form": ReleaseForm(initial={"session_id": session.session_id} if session else None),
        "session": session,
        "session_url": record_link(request, "browsers:detail", session_id=session.session_id)
        if session
        else "",
        "waited": waited,
        "waited_seconds": timeout,
        "poll_seconds": POLL_SECONDS,
        **_detail_page(request, pool_id),
    }
    response = render(request, "pools/detail.html", context, partial="pool-lease")
    if session is not None:
        trigger_client_event(response, "pool-changed")  # the counts refresh now, not at the next poll
    return response


@require_http_methods(["POST"])
@org_view("operator")
async def pool_release(request, pool_id: str):
    form = ReleaseForm(request.POST)
    if form.is_valid():
        session_id, reuse = form.cleaned_data["session_id"], form.cleaned_data["reuse"]
        try:
            detail = f"session {session_id} reuse={reuse}"
            async with audited(request, "pool.release", target_id=pool_id, detail=detail):
                await pools.release(request.service, pool_id, session_id, reuse=reuse)
        except NotFound:
            # The service's own words name the pool and quote the id again; say it once, plainly.
            form.add_error(
                "session_id",
                f"Session “{session_id}” is not leased from this pool: it may have been released already, "
                "have ended, or belong to another pool.",
            )
        except Invalid as exc:
            apply_service_errors(form, exc)
        else:
            what = "returned to the pool" if reuse else "destroyed; the pool warms a new one"
            messages.success(request, f"Session {session_id} released: the browser was {what}.")
            return done(request, org_reverse(request, "pools:detail", pool_id=pool_id))
    pool = await get_or_404(pools.get_pool(request.service, pool_id), "pool")
    context = {
        "pool": pool,
        "acquire_form": AcquireForm(initial={"timeout_seconds": 10}),
        "release_form": form,
        "poll_seconds": POLL_SECONDS,
        **_detail_page(request, pool_id),
    }
    return render(request, "pools/detail.html", context, partial="pool-lease")


@require_http_methods(["POST"])
@org_view("operator")
async def pool_flush(request, pool_id: str):
    try:
        async with audited(request, "pool.flush", target_id=pool_id):
            await pools.flush(request.service, pool_id)
    except NotFound:
        raise Http404("No such pool") from None
    messages.success(request, "Idle browsers flushed; leased ones are untouched. The pool warms up again.")
    return done(request, org_reverse(request, "pools:detail", pool_id=pool_id))


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def pool_edit(request, pool_id: str):
    pool, choices = await asyncio.gather(
        get_or_404(pools.get_pool(request.service, pool_id), "pool"), _choices(request.service)
    )
    initial = initial_from(pool)
    form = PoolForm(initial=initial, **_form_choices(choices))
    if request.method == "POST":
        form = PoolForm(request.POST, initial=initial, **_form_choices(choices))
        if form.is_valid():
            body = form.update_body()
            discard = form.cleaned_data["discard_all_idle"]
            if not body and not discard:
                form.add_error(None, "Nothing changed.")
            else:
                changed = (", ".join(sorted(body)) + (" discard_all_idle" if discard else "")).strip()
                try:
                    async with audited(request, "pool.update", target_id=pool.id, detail=changed):
                        pool = await pools.update_pool(
                            request.service, pool.id, discard_all_idle=discard, **body
                        )
                except (Invalid, Conflict, CapReached) as exc:
                    await _apply_errors(request, form, exc)
                else:
                    messages.success(request, f"Pool “{pool.label}” saved.")
                    return done(request, org_reverse(request, "pools:detail", pool_id=pool.id))
    context = {"form": form, "pool": pool, **choices}
    return render(request, "pools/form.html", context, partial="pool-form")


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def pool_delete(request, pool_id: str):
    """Confirm; while browsers are leased the service refuses unless forced, which terminates them."""
    pool = await get_or_404(pools.get_pool(request.service, pool_id), "pool")
    form = DeleteForm()
    conflict = ""
    if request.method == "POST":
        form = DeleteForm(request.POST)
        form.is_valid()
        force = bool(form.cleaned_data.get("force"))
        try:
            async with audited(
                request, "pool.delete", target_id=pool.id, detail=f"{pool.label} force={force}"
            ):
                await pools.delete_pool(request.service, pool.id, force=force)
        except Conflict as exc:
            conflict = exc.message
            pool = await get_or_404(pools.get_pool(request.service, pool_id), "pool")
        else:
            messages.success(request, f"Pool “{pool.label}” deleted.")
            return done(request, org_reverse(request, "pools:list"))
    context = {"pool": pool, "form": form, "conflict": conflict}
    return render(request, "pools/delete.html", context, partial="pool-delete")


async def _release_one(request, pool_id: str, row: bulk.Row, reuse: bool) -> None:
    detail = f"session {row.id} reuse={reuse} (bulk)"
    try:
        async with audited(request, "pool.release", target_id=pool_id, detail=detail):
            await pools.release(request.service, pool_id, row.id, reuse=reuse)
    except NotFound:
        row.state, row.message = bulk.FAILED, "No longer leased from this pool: released or ended meanwhile."
    except ServiceError as exc:
        row.state, row.message = bulk.FAILED, exc.message or f"The service answered {exc.status}."
    else:
        row.state = bulk.OK
        row.message = "Returned to the pool." if reuse else "Destroyed; the pool warms a replacement."


@require_http_methods(["POST"])
@org_view("operator")
async def pool_release_selected(request, pool_id: str):
    """The ticked leases: a confirmation (return or destroy), then one release (and audit row) each.

    Only sessions this pool has leased, as the service lists them now, are ever sent (notes §7).
    """
    pool = await get_or_404(pools.get_pool(request.service, pool_id), "pool")
    selection = bulk.chosen(request.POST.getlist("session_id"), "session")
    confirmed = bulk.is_confirmed(request)
    reuse = not confirmed or request.POST.get("reuse") == "on"
    if not selection.error:
        leased = {s.session_id: s for s in (await pools.leased_sessions(request.service, pool)).items}
        for row in selection.todo:
            session = leased.get(row.id)
            if session is None:
                row.state = bulk.SKIPPED
                row.message = (
                    "Not leased from this pool (released, ended, or another pool's): nothing was sent."
                )
            else:
                row.label = session.name or ""
        if confirmed and selection.todo:
            await bulk.each(selection.todo, lambda row: _release_one(request, pool.id, row, reuse))
    context = {
        "pool": pool,
        "selection": selection,
        "confirmed": confirmed and not selection.error,
        "reuse": reuse,
    }
    response = render(request, "pools/release_selected.html", context, partial="pool-release-selected")
    if context["confirmed"] and selection.done:
        trigger_client_event(response, "pool-changed")
    return response
