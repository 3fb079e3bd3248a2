"""The command palette: one org-scoped search over the console's pages and the service's resources.

Each resource type is one list call with the service's own ``query`` filter (notes: it matches names, and
ids exactly or by substring depending on the resource). The calls run concurrently, each under a short
timeout of its own: a slow or failing resource is reported as such and never holds back the others.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple
from urllib.parse import urlencode

from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET

from console.accounts.models import Role
from console.nav import ACTIONS
from console.service import (
    ServiceError,
    apps,
    auth_connections,
    browsers,
    credentials,
    invocations,
    pools,
    profiles,
    projects,
)
from console.web.context_processors import _nav
from console.web.decorators import org_view
from console.web.pages import record_link
from console.web.render import render

log = logging.getLogger(__name__)

TIMEOUT = 2.0  # seconds per resource type: a palette that waits longer is not worth typing into
PER_TYPE = 5  # results per resource type
MAX_QUERY = 100
MIN_QUERY = 2  # one character matches nearly everything: pages only


class Hit(NamedTuple):
    kind: str
    title: str
    detail: str
    url: str


class Kind(NamedTuple):
    label: str
    list_call: Callable[..., Awaitable[Any]]  # a service list: (service, limit=, query=) -> Page
    hit: Callable[[Any, Any], tuple[str, str, str]]  # (request, record) -> (title, detail, url)


def _pair(first: str | None, second: str | None, fallback: str) -> str:
    """The two joined by " · " (those that are set), else ``fallback``."""
    return " · ".join(x for x in (first, second) if x) or fallback


KINDS = [
    Kind(
        "Session",
        browsers.list_sessions,
        lambda r, s: (s.label, s.session_id, record_link(r, "browsers:detail", session_id=s.session_id)),
    ),
    Kind(
        "Pool", pools.list_pools, lambda r, p: (p.label, p.id, record_link(r, "pools:detail", pool_id=p.id))
    ),
    Kind(
        "Profile",
        profiles.list_profiles,
        # Profiles have no page of their own: their list, filtered to this one.
        lambda r, p: (p.label, p.id, record_link(r, "profiles:list") + "?" + urlencode({"q": p.id})),
    ),
    Kind(
        "Connection",
        auth_connections.list_connections,
        lambda r, c: (
            _pair(c.domain, c.profile_name, c.id),
            c.id,
            record_link(r, "auth:detail", connection_id=c.id),
        ),
    ),
    Kind(
        "Credential",
        credentials.list_credentials,
        lambda r, c: (
            c.name or c.id,
            c.domain or c.id,
            record_link(r, "credentials:detail", credential_id=c.id),
        ),
    ),
    Kind(
        "App",
        apps.list_apps,
        lambda r, a: (
            a.app_name or a.id,
            a.version or "",
            record_link(r, "apps:detail", app_name=a.app_name or a.id),
        ),
    ),
    Kind(
        "Invocation",
        invocations.list_invocations,
        lambda r, i: (
            _pair(i.app_name, i.action_name, i.id),
            i.id,
            record_link(r, "invocations:detail", invocation_id=i.id),
        ),
    ),
    Kind(
        "Project",
        projects.list_projects,
        lambda r, p: (p.name or p.id, p.id, record_link(r, "projects:detail", project_id=p.id)),
    ),
]


async def _search_kind(request, kind: Kind, query: str) -> tuple[list[Hit], str]:
    """One resource type's hits, or none and why (the palette says which types it could not search)."""
    try:
        async with asyncio.timeout(TIMEOUT):
            page = await kind.list_call(request.service, limit=PER_TYPE, query=query)
    except TimeoutError:
        return [], f"{kind.label}s did not answer in time"
    except ServiceError as exc:
        log.info("palette search of %ss failed: %s", kind.label.lower(), type(exc).__name__)
        return [], f"{kind.label}s could not be searched"
    hits, seen = [], set()
    for record in page.items:
        title, detail, url = kind.hit(request, record)
        if not url:
            continue  # an id no console page can have (a hostile or broken service): no link to it
        if url in seen:  # app versions share their app's page
            continue
        seen.add(url)
        hits.append(Hit(kind.label, title, detail, url))
    return hits, ""


def _pages(request, query: str) -> list[Hit]:
    needle = query.casefold()
    return [
        Hit("Page", section["label"], section["group"], section["url"])
        for section in _nav(request.org.slug, request.membership.role)
        if needle in section["label"].casefold() or (needle and needle in section["group"].casefold())
    ]


def _actions(request, query: str) -> list[Hit]:
    """What the member may do from the palette: each action's page, for the role that page asks for.
    (The actions of the page looked at, such as "Take control", are the page's own: static/js/palette.js.)"""
    needle = query.casefold()
    hits = []
    for action in ACTIONS:
        if not Role.at_least(request.membership.role, action.min_role):
            continue
        if needle and needle not in f"{action.label} {action.words}".casefold():
            continue
        try:
            url = reverse(action.url_name, kwargs={"org_slug": request.org.slug})
        except NoReverseMatch:
            continue
        hits.append(Hit("Action", action.label, "", url + (f"#{action.anchor}" if action.anchor else "")))
    return hits


@require_GET
@org_view("viewer")
async def search(request):
    query = request.GET.get("q", "").strip()[:MAX_QUERY]
    hits = _pages(request, query) + _actions(request, query)
    problems: list[str] = []
    if len(query) >= MIN_QUERY:
        for found, problem in await asyncio.gather(*(_search_kind(request, k, query) for k in KINDS)):
            hits.extend(found)
            if problem:
                problems.append(problem)
    context = {
        "query": query,
        "hits": hits,
        "problems": problems,
        "min_query": MIN_QUERY,
        "max_query": MAX_QUERY,
    }
    return render(request, "web/search.html", context, partial="search-results")
