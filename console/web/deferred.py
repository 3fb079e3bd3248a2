"""Pages whose service-backed parts load after the frame, so a hung service never blocks a whole page.

A browser navigating to such a page gets its frame at once: the parts are placeholders that fetch themselves
(``?part=<id>``, htmx ``hx-trigger="load"``) and are swapped in when they answer. A part whose service call
fails or times out (settings.SERVICE_READ_TIMEOUT) shows what went wrong and a Retry button; the other parts
are untouched. A part is a named partial of the page template whose root element has the part's id
(STYLE habit 9); the page template places it with ``{% deferred "<id>" %}``.

Anything that is not a browser navigation (scripts, tests, ``?wait=1`` from the no-JS link, a form's POST)
gets the whole page at once, as before: parts loaded concurrently, errors handled by ServiceErrorMiddleware
and 404s kept. A browser says it is navigating with ``Sec-Fetch-Mode: navigate`` (every current browser
sends it). An htmx request aimed at a part (a list's filters, a poll, an event) is answered with that part
alone, as ``?part=`` would be.

List pages (templates/web/list_page.html) are pages with one deferred part, the list: ``list_page()``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import Http404, HttpResponse
from django.shortcuts import render as django_render
from django.template.loader import render_to_string

from console.service.errors import ServiceError
from console.web.middleware import describe
from console.web.render import append_flash

log = logging.getLogger(__name__)

PART_PARAM = "part"
WAIT_PARAM = "wait"
FAILED_TEMPLATE = "web/deferred.html#deferred-failed"


@dataclass(frozen=True)
class Part:
    """One deferred part: its id (the partial's name and DOM id) and the coroutine function giving its
    context.

    ``poll``: the part also refreshes itself every ``context["poll_seconds"]`` while the tab is visible
    (``data-poll``, static/js/pools.js).
    """

    id: str
    load: Callable[[], Awaitable[dict]]
    poll: bool = False


def part_url(request, part_id: str) -> str:
    params = request.GET.copy()
    params.pop(WAIT_PARAM, None)
    params[PART_PARAM] = part_id
    return f"{request.path}?{urlencode(sorted(params.lists()), doseq=True)}"


def wait_url(request) -> str:
    params = request.GET.copy()
    params[WAIT_PARAM] = "1"
    return f"{request.path}?{urlencode(sorted(params.lists()), doseq=True)}"


def later(page_path: str, template: str, part_ids: list[str]) -> dict:
    """Context for rendering a page with deferred parts from another view (a form's POST answered with the
    whole page): those parts load after, from the page's own URL."""
    return {
        "deferred_template": template,
        "deferred_parts": {
            pid: {"url": f"{page_path}?{PART_PARAM}={pid}", "poll": False} for pid in part_ids
        },
    }


def page_url(request) -> str:
    """The page's own URL (query kept) without the part and wait parameters: for links and ``next``."""
    params = request.GET.copy()
    params.pop(PART_PARAM, None)
    params.pop(WAIT_PARAM, None)
    query = urlencode(sorted(params.lists()), doseq=True)
    return f"{request.path}?{query}" if query else request.path


def frame_first(request) -> bool:
    """A browser's own navigation (not htmx, not a script): answer with the frame and load parts after.

    A POST's answer (a form with its errors) is drawn whole: what the operator sent must show at once.
    """
    if request.method != "GET" or request.GET.get(WAIT_PARAM) or getattr(request, "htmx", False):
        return False
    return request.headers.get("Sec-Fetch-Mode") == "navigate"


async def page(request, template: str, context: dict, parts: list[Part], *, status: int = 200):
    """Serve a page with deferred parts: one part (``?part=``), the frame, or everything at once."""
    context = {**context, "deferred_template": template, "page_url": page_url(request)}
    by_id = {part.id: part for part in parts}
    wanted = request.GET.get(PART_PARAM)
    htmx = getattr(request, "htmx", False)
    if wanted is None and htmx and request.method == "GET" and htmx.target in by_id:
        wanted = htmx.target
    if wanted is not None:
        part = by_id.get(wanted)
        if part is None:
            raise Http404("No such part of this page")
        # A part placed inside this one loads after it, on its own.
        context["deferred_parts"] = _placeholders(request, [p for p in parts if p is not part])
        return await _part_response(request, template, context, part)
    if frame_first(request):
        context["deferred_parts"] = _placeholders(request, parts)
        context["deferred_wait_url"] = wait_url(request)
        return django_render(request, template, context, status=status)
    loaded = await asyncio.gather(*(part.load() for part in parts))
    for extra in loaded:
        context.update(extra)
    context["deferred_parts"] = {}
    context["deferred_poll"] = {part.id: part_url(request, part.id) for part in parts if part.poll}
    return django_render(request, template, context, status=status)


async def list_page(
    request,
    template: str,
    list_id: str,
    context: dict,
    load: Callable[[], Awaitable[dict]],
    *,
    parts: list[Part] | None = None,
    poll: bool = False,
):
    """A list page (templates/web/list_page.html): header, filters and buttons at once, the list after.

    ``list_id`` names the list's partial and DOM id; ``load`` makes the service call(s) and returns the
    list's context (``page``, ``pager``…); ``parts`` are other service-backed parts of the page.
    """
    context = {**context, "list_id": list_id}
    return await page(request, template, context, [Part(list_id, load, poll=poll), *(parts or [])])


def _placeholders(request, parts: list[Part]) -> dict:
    return {part.id: {"url": part_url(request, part.id), "poll": part.poll} for part in parts}


async def _part_response(request, template: str, context: dict, part: Part):
    url = part_url(request, part.id)
    poll_url = url if part.poll else ""
    poll_seconds = context.get("poll_seconds", 10)
    try:
        extra = await part.load()
    except Http404 as exc:
        failed = {
            "title": "Not found",
            "text": str(exc) or "It does not exist, or no longer.",
            "retry": False,
        }
        return _failed(request, part.id, url, poll_url, poll_seconds, failed)
    except ServiceError as exc:
        info = describe(request, exc)
        log.warning("deferred part %s of %s: %s", part.id, request.path, type(exc).__name__)
        failed = {
            "title": info["title"],
            "text": exc.message or info["text"],
            "settings_url": info.get("settings_url", ""),
            "request_id": exc.request_id or "",
            "retry": True,
        }
        return _failed(request, part.id, url, poll_url, poll_seconds, failed)
    response = django_render(
        request,
        f"{template}#{part.id}",
        {**context, **extra, "deferred_poll": {part.id: poll_url} if poll_url else {}},
    )
    append_flash(request, response)
    return response


def _failed(request, part_id: str, url: str, poll_url: str, poll_seconds, failed: dict):
    context = {"part_id": part_id, "url": url, "poll_url": poll_url, "poll_seconds": poll_seconds, **failed}
    html = render_to_string(FAILED_TEMPLATE, context, request)
    # 200 so htmx swaps it in place of the part (the rest of the page stays as it is).
    return HttpResponse(html)
