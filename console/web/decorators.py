"""Membership and role checks for org-scoped views (`/o/<org_slug>/...`)."""

import functools

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth import get_user
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.urls import reverse
from django.utils.functional import SimpleLazyObject
from django.utils.http import urlencode

from console.accounts.models import Membership, Role
from console.signin import policy, sessions


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
    request.has_second_factor = False
    if not user.is_authenticated:
        return user, []
    # The org's sign-in policy comes with it (org_view applies it), and whether the user has a second
    # factor when a policy asks; the session's "last seen" is refreshed at most once a minute.
    memberships = list(
        Membership.objects.filter(user=user).select_related("org", "org__signin").order_by("org__name")
    )
    if any(policy.Policy.of(m.org).mfa_required for m in memberships):
        request.has_second_factor = policy.has_second_factor(user)
    sessions.track(request, user)
    return user, memberships


def org_view(min_role: str = "viewer", *, enforce_signin: bool = True):
    """Resolve the org from the URL and the member's role; sets request.org, .membership, .service.

    Anyone not a member gets 404 (the org's existence is not revealed); a member below `min_role` 403.
    A member whose session does not meet the org's sign-in policy (console/signin/policy.py: single
    sign-on required, two-factor required, a session of another org's single sign-on) is sent to sign in
    that way (a page navigation) or refused with 403 (htmx, streams, forms). ``enforce_signin=False`` only
    for the page that says so. The view itself does not receive `org_slug`.
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
            if enforce_signin:
                refused = signin_refusal(request, membership)
                if refused:
                    return policy_response(request, membership.org, refused)
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


def signin_refusal(request, membership: Membership) -> str:
    return policy.refusal(
        policy.Policy.of(membership.org),
        user_id=request.user.pk,
        org_id=membership.org_id,
        has_second_factor=request.has_second_factor,
        session=request.session,
    )


def policy_response(request, org, refused: str):
    """A page navigation goes where the member can meet the policy; anything else (htmx, a stream, a
    form) is refused with 403, which stops polls and panes ("Access ended")."""
    navigation = (
        request.method == "GET"
        and not request.htmx
        and "text/event-stream" not in request.headers.get("Accept", "")
    )
    if not navigation:
        raise PermissionDenied(f"Not with this session: {policy.REASONS[refused]}.")
    if refused == policy.MFA:
        messages.warning(
            request,
            f"{org.name} requires two-factor authentication: add an authenticator app or a security key "
            "to reach its pages.",
        )
        return HttpResponseRedirect(reverse("mfa_index"))
    query = urlencode({"why": refused, "next": request.get_full_path()})
    return HttpResponseRedirect(f"{reverse('org-sso', args=[org.slug])}?{query}")


def require_role(request, needed: str) -> None:
    """Raise PermissionDenied (403) unless the current member's role is at least `needed`."""
    if not request.membership.has_role(needed):
        raise PermissionDenied(f"This needs the {needed} role.")
