import asyncio
import functools

from django.conf import settings
from django.urls import NoReverseMatch, reverse

from console.accounts.models import Membership, Role
from console.nav import SECTIONS


def _memberships(request) -> list:
    # org_view and home preload memberships; sync views (login, password change) may query here.
    memberships = getattr(request, "memberships", None)
    if memberships is not None:
        return memberships
    try:
        asyncio.get_running_loop()
        return []  # async context without preloading: the DB is off limits here
    except RuntimeError:
        pass
    if not request.user.is_authenticated:
        return []
    return list(Membership.objects.filter(user=request.user).select_related("org").order_by("org__name"))


@functools.lru_cache(maxsize=1024)
def _nav(org_slug: str, role: str) -> list[dict]:
    """The sections a role sees in an org (URL reversing is the costliest part of a small page: cached)."""
    nav = []
    for section in SECTIONS:
        if not Role.at_least(role, section.min_role):
            continue
        try:
            url = reverse(section.url_name, kwargs={"org_slug": org_slug})
        except NoReverseMatch:
            continue
        nav.append({"label": section.label, "url": url, "url_name": section.url_name, "group": section.group})
    return nav


@functools.lru_cache(maxsize=1024)
def _nav_groups(org_slug: str, role: str) -> list[dict]:
    """The sidebar: the visible sections under their group headings, groups in order of first appearance."""
    groups: dict[str, list[dict]] = {}
    for section in _nav(org_slug, role):
        groups.setdefault(section["group"], []).append(section)
    return [{"label": label, "sections": sections} for label, sections in groups.items()]


def _current_section(nav: list[dict], match) -> str:
    if match is None:
        return ""
    for section in nav:
        if section["url_name"] == match.view_name:
            return section["url_name"]
    namespace = match.namespace
    if namespace:
        for section in nav:
            if section["url_name"].split(":")[0] == namespace:
                return section["url_name"]
    return match.view_name


def console(request) -> dict:
    """The header: the org switcher, and the current org's sections the member may see."""
    org = getattr(request, "org", None)
    membership = getattr(request, "membership", None)
    in_org = org is not None and membership is not None
    nav = _nav(org.slug, membership.role) if in_org else []
    current = getattr(request, "resolver_match", None)
    return {
        "current_org": org,
        "current_membership": membership,
        # Role flags for templates: show an action only to those who may run it (the view checks again).
        "can_operate": membership is not None and membership.has_role(Role.OPERATOR),
        "can_admin": membership is not None and membership.has_role(Role.ADMIN),
        "org_memberships": _memberships(request),
        "nav_sections": nav,
        "nav_groups": _nav_groups(org.slug, membership.role) if in_org else [],
        # The section of the current page: same view, or same namespace ("projects:detail" → Projects).
        "current_url_name": _current_section(nav, current),
        # Live panes show "Stalled" after twice this without a message from the relay (live/status.html).
        "live_keepalive_seconds": str(settings.LIVE_KEEPALIVE_SECONDS),
    }
