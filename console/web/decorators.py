"""Membership and role checks for org-scoped views (`/o/<org_slug>/...`)."""

import functools

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.utils.functional import SimpleLazyObject

from console.accounts.models import Membership, Role


async def load_memberships(request) -> list[Membership]:
    """Resolve the user and their memberships once, so templates never query the DB from async code.

    One trip to the database thread for all of it (the session, the user and its session hash check, the
    memberships): ``await request.auser()`` and an async queryset made three, each a thread switch.
    """
    request.user, request.memberships = await sync_to_async(_user_and_memberships, thread_sensitive=True)(
        request
    )
    return request.memberships


def _user_and_memberships(request) -> tuple:
    # Django's own get_user (what request.auser() awaits, run synchronously): the same session and hash
    # checks, the session flushed when they fail. Kept on the request as AuthenticationMiddleware keeps it.
    user = get_user(request)
    request._cached_user = request._acached_user = user
    if not user.is_authenticated:
        return user, []
    return user, list(Membership.objects.filter(user=user).select_related("org").order_by("org__name"))


def org_view(min_role: str = "viewer"):
    """Resolve the org from the URL and the member's role; sets request.org, .membership, .service.

    Anyone not a member gets 404 (the org's existence is not revealed); a member below `min_role` 403.
    The view itself does not receive `org_slug`.
    """
    Role(min_role)  # fail at import time on a typo

    def decorator(view):
        @functools.wraps(view)
        async def wrapper(request, org_slug, *args, **kwargs):
            memberships = await load_memberships(request)
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            membership = next((m for m in memberships if m.org.slug == org_slug), None)
            if membership is None:
                raise Http404("No such organization")
            request.org = membership.org
            request.membership = membership
            # Lazy: building the client is cheap, but pages that never call the service need not do it.
            request.service = SimpleLazyObject(
                lambda: membership.org.service(project=membership.current_project_id or None)
            )
            require_role(request, min_role)
            # What the view needs, for whatever outlives this check (event streams re-check it: live.guard).
            request.required_role = min_role
            return await view(request, *args, **kwargs)

        return wrapper

    return decorator


def require_role(request, needed: str) -> None:
    """Raise PermissionDenied (403) unless the current member's role is at least `needed`."""
    if not request.membership.has_role(needed):
        raise PermissionDenied(f"This needs the {needed} role.")
