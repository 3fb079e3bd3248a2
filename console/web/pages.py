"""What the org pages repeat: their URLs, a record or 404, their list pages (searched, filtered), their form
pages and their confirmation pages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TypeVar

from django.contrib import messages
from django.http import Http404
from django.urls import NoReverseMatch, reverse

from console.accounts.audit import audited
from console.service.errors import Conflict, Invalid, NotFound
from console.web import deferred
from console.web.forms import show_refusal
from console.web.paging import pager, paging
from console.web.render import done, render

T = TypeVar("T")


def org_reverse(org, name: str, query: str = "", **kwargs) -> str:
    """The URL of an org page: ``org`` is the request of an org page (``org_view`` set its ``org``) or the
    org's slug (what a live frame, rendered once for every viewer, knows); ``query`` is appended."""
    slug = org if isinstance(org, str) else org.org.slug
    url = reverse(name, kwargs={"org_slug": slug, **kwargs})
    return f"{url}?{query}" if query else url


def record_link(org, name: str, **ids: str) -> str:
    """The page of a record the service named (a session a pool leased, a browser an invocation used), or
    "" when the ids cannot be a console URL: an id with "/" matches no route, one of dots only would link
    elsewhere in the console (``/browsers/../``). Ids are the service's: untrusted."""
    if any(not str(value).strip(".") for value in ids.values()):
        return ""
    try:
        return org_reverse(org, name, **ids)
    except NoReverseMatch:
        return ""


async def get_or_404(read: Awaitable[T], what: str) -> T:
    """The record ``read`` gives, or the console's 404 ("No such <what>") when the service has none."""
    try:
        return await read
    except NotFound:
        raise Http404(f"No such {what}") from None


def posted(request):
    """What a form page's form is bound to: the POST's data, or None (unbound) on a GET."""
    return request.POST if request.method == "POST" else None


async def submit(request, form, save: Callable[[dict], Awaitable[str]], refuse=show_refusal):
    """A form page's POST: when ``form`` is valid, ``save(form.cleaned_data)`` makes the change (audited,
    saying what it did) and returns the URL to go to (``done``); the service's refusal (``Invalid``,
    ``Conflict``) goes on the form by ``refuse(form, error)``. None when the page is to be rendered: a GET,
    an invalid form, a refusal."""
    if request.method != "POST" or not form.is_valid():
        return None
    try:
        url = await save(form.cleaned_data)
    except (Invalid, Conflict) as exc:
        refuse(form, exc)
        return None
    return done(request, url)


async def form_page(
    request,
    form,
    save: Callable[[dict], Awaitable[str]],
    template: str,
    context: dict | None = None,
    *,
    refuse=show_refusal,
    partial=None,
):
    """A form page: a GET shows ``template`` with ``form`` (and ``context``); a POST goes through ``submit``
    and, unless it goes on, shows the form again with its errors."""
    if response := await submit(request, form, save, refuse):
        return response
    return render(request, template, {**(context or {}), "form": form}, partial=partial)


async def confirmed(
    request, template: str, context: dict, act: Callable[[], Awaitable], next_url: str, *, partial=None
):
    """A destructive action behind its confirmation page: a GET renders ``template`` (``context``); a POST
    runs ``act()`` (the audited service call, saying what it did) and goes to ``next_url``. The service's
    ``Conflict`` (still in use, changed meanwhile) is shown on the page as ``conflict``."""
    conflict = ""
    if request.method == "POST":
        try:
            await act()
        except Conflict as exc:
            conflict = exc.message
        else:
            return done(request, next_url)
    return render(request, template, {**context, "conflict": conflict}, partial=partial)


async def confirmed_delete(
    request,
    record,
    delete: Callable[..., Awaitable],
    *,
    app: str,
    action: str,
    context: dict,
    message: str,
    detail: str | None = None,
    partial=None,
):
    """A service record's delete page (``confirmed``): ``<app>/delete.html``; the POST runs
    ``delete(service, record.id)`` audited as ``action`` on the record (``detail``: its label unless given),
    says ``message`` and goes to ``<app>:list``."""

    async def act() -> None:
        async with audited(
            request, action, target_id=record.id, detail=record.label if detail is None else detail
        ):
            await delete(request.service, record.id)
        messages.success(request, message)

    url = org_reverse(request, f"{app}:list")
    return await confirmed(request, f"{app}/delete.html", context, act, url, partial=partial)


async def searchable_list(
    request,
    template: str,
    list_id: str,
    list_call: Callable[..., Awaitable],
    context: dict | None = None,
    *,
    parts: list[deferred.Part] | None = None,
    **filters,
):
    """A list page (``deferred.list_page``) of one service list searched by ``?q=``.

    ``list_call(service, limit=, offset=, query=, **filters)`` reads the page the console URL asks for
    (``paging``: bounded, never forwarded as typed); the template gets ``query``, ``page``, ``pager`` and
    ``context``.
    """
    query = request.GET.get("q", "").strip()
    load = _pages(request, list_call, lambda: {"query": query or None, **filters})
    context = {"query": query, **(context or {})}
    return await deferred.list_page(request, template, list_id, context, load, parts=parts)


async def filtered_list(request, template: str, list_id: str, list_call: Callable[..., Awaitable], form):
    """A list page (``deferred.list_page``) of one service list filtered by a form of the URL's query:
    ``form.filters()`` go to ``list_call``, and ``form.keeps(record)`` (when the form has it) thins the
    page by what the service cannot filter. Nothing is asked while the form is invalid: its errors say
    why (the template gets ``form``, and ``page`` None)."""

    def filters() -> dict | None:
        return form.filters() if form.is_valid() else None

    keep = getattr(form, "keeps", None)
    load = _pages(request, list_call, filters, keep)
    return await deferred.list_page(request, template, list_id, {"form": form}, load)


def _pages(request, list_call, params: Callable[[], dict | None], keep=None) -> Callable[[], Awaitable[dict]]:
    """The list part's loader: the page the console URL asks for (``paging``: bounded, never forwarded as
    typed) with ``params()`` (None: ask nothing), ``keep`` applied to its items."""
    page_params = paging(request)

    async def load() -> dict:
        wanted = params()
        if wanted is None:
            return {"page": None, "pager": None}
        page = await list_call(request.service, limit=page_params.limit, offset=page_params.offset, **wanted)
        if keep is not None:
            page = replace(page, items=[item for item in page.items if keep(item)])
        return {"page": page, "pager": pager(request, page_params, page)}

    return load
