"""The organization's members and invites: roles, removal, invite links and their acceptance.

Every change is the admins' and lands in the console's audit log (a refusal too: ``admins_only``); an
organization always keeps an admin (``_change_membership``).
"""

import secrets
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth import login
from django.core import signing
from django.db import transaction
from django.http import Http404
from django.shortcuts import redirect
from django.shortcuts import render as django_render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from console.accounts import audit
from console.accounts.models import AuditLog, Invite, Membership, Role, hash_token
from console.members.forms import InviteForm, RoleForm, SignupForm
from console.signin.policy import second_factor_users
from console.web.decorators import org_view
from console.web.render import render

INVITE_MAX_AGE = timedelta(days=7)
# The salt of the links already handed out: kept as it was when this page lived in console/accounts.
INVITE_SALT = "console.accounts.invite"


async def members_context(request, **extra) -> dict:
    members = [m async for m in request.org.memberships.select_related("user").order_by("user__username")]
    invites = [
        i async for i in request.org.invites.filter(accepted_at__isnull=True, expires_at__gt=timezone.now())
    ]
    return {
        "members": members,
        "second_factor_users": await second_factor_users(request.org),
        "invites": invites,
        "roles": Role.choices,
        "invite_form": InviteForm(),
        "is_admin": request.membership.has_role(Role.ADMIN),
        **extra,
    }


async def members_response(request, **extra):
    """After a mutation: the members partial for htmx, a redirect (post/redirect/get) otherwise."""
    if request.htmx:
        return render(request, "members/list.html", await members_context(request, **extra), "members")
    return redirect("members", org_slug=request.org.slug)


@require_http_methods(["GET"])
@org_view("viewer")
async def members(request):
    return render(request, "members/list.html", await members_context(request), "members")


async def admins_only(request, action: str, target_id="") -> None:
    """The members page's changes are the admins'; anyone else's attempt is a refusal in the audit log."""
    if not request.membership.has_role(Role.ADMIN):
        await audit.deny(request, action, needed=Role.ADMIN, target_id=target_id)


@require_POST
@org_view("viewer")  # role checked below, so the refusal can land in the audit log
async def invite_create(request):
    await admins_only(request, "member.invite")
    form = InviteForm(request.POST)
    if not form.is_valid():
        ctx = await members_context(request, invite_form=form)
        return render(request, "members/list.html", ctx, "members")
    raw = secrets.token_urlsafe(32)
    invite = await Invite.objects.acreate(
        org=request.org,
        email=form.cleaned_data["email"],
        role=form.cleaned_data["role"],
        token_hash=hash_token(raw),
        created_by=request.user,
        expires_at=timezone.now() + INVITE_MAX_AGE,
    )
    await audit.record(request, "member.invite", target_id=invite.pk, detail=f"role={invite.role}")
    # The link is shown once, to the admin who made it; only its hash is stored.
    token = signing.TimestampSigner(salt=INVITE_SALT).sign(raw)
    link = request.build_absolute_uri(reverse("invite-accept", kwargs={"token": token}))
    ctx = await members_context(request, invite_link=link)
    return render(request, "members/list.html", ctx, "members")


@require_POST
@org_view("viewer")  # role checked below, so the refusal can land in the audit log
async def invite_revoke(request, invite_id: int):
    await admins_only(request, "member.invite.revoke", target_id=invite_id)
    deleted, _ = await request.org.invites.filter(pk=invite_id, accepted_at__isnull=True).adelete()
    if not deleted:
        raise Http404("No such invite")
    await audit.record(request, "member.invite.revoke", target_id=invite_id)
    messages.success(request, "Invite revoked.")
    return await members_response(request)


class LastAdmin(Exception):
    """The change would leave the organization without an admin."""


def _change_membership(membership: Membership, new_role: str | None) -> str:
    """Give a member ``new_role``, or remove them (None); return the role they had.

    The last-admin check and the write are one transaction that first locks the org's admin memberships,
    so two admins demoting or removing each other at once are serialized and the second sees the first's
    result. PostgreSQL locks the rows (select_for_update); SQLite ignores that, but its transactions begin
    IMMEDIATE (settings.py), which serializes writers the same way.
    """
    with transaction.atomic():
        admins = list(
            Membership.objects.select_for_update()
            .filter(org_id=membership.org_id, role=Role.ADMIN)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        current = Membership.objects.select_for_update().filter(pk=membership.pk).first()
        if current is None:
            raise Http404("No such member")
        if current.role == Role.ADMIN and new_role != Role.ADMIN and admins == [current.pk]:
            raise LastAdmin
        if new_role is None:
            current.delete()
        else:
            Membership.objects.filter(pk=current.pk).update(role=new_role)
        return current.role


async def _get_member(request, member_id: int) -> Membership:
    membership = await request.org.memberships.select_related("user").filter(pk=member_id).afirst()
    if membership is None:
        raise Http404("No such member")
    return membership


@require_POST
@org_view("viewer")  # role checked below, so the refusal can land in the audit log
async def member_role(request, member_id: int):
    membership = await _get_member(request, member_id)
    await admins_only(request, "member.role", target_id=member_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a valid role.")
        return await members_response(request)
    new_role = form.cleaned_data["role"]
    try:
        old_role = await sync_to_async(_change_membership)(membership, new_role)
    except LastAdmin:
        messages.error(request, "The last admin cannot be demoted: make another member admin first.")
        return await members_response(request)
    membership.role = new_role
    await audit.record(
        request,
        "member.role",
        target_id=membership.user.username,
        detail=f"{old_role} -> {new_role}",
    )
    messages.success(request, f"{membership.user.username} is now {membership.get_role_display().lower()}.")
    return await members_response(request)


@require_POST
@org_view("viewer")  # role checked below, so the refusal can land in the audit log
async def member_remove(request, member_id: int):
    membership = await _get_member(request, member_id)
    await admins_only(request, "member.remove", target_id=member_id)
    try:
        await sync_to_async(_change_membership)(membership, None)
    except LastAdmin:
        messages.error(request, "The last admin cannot be removed: make another member admin first.")
        return await members_response(request)
    await audit.record(request, "member.remove", target_id=membership.user.username)
    messages.success(request, f"{membership.user.username} was removed.")
    if membership.user_id == request.user.pk:
        return redirect("home")
    return await members_response(request)


def _invite_from_token(token: str) -> tuple[Invite | None, str]:
    """The invite a link points at, or None and the reason to show."""
    try:
        raw = signing.TimestampSigner(salt=INVITE_SALT).unsign(token, max_age=INVITE_MAX_AGE)
    except signing.SignatureExpired:
        return None, "This invite link has expired. Ask an admin for a new one."
    except signing.BadSignature:
        raise Http404("No such invite") from None
    invite = Invite.objects.select_related("org").filter(token_hash=hash_token(raw)).first()
    if invite is None:
        raise Http404("No such invite")
    if invite.accepted_at is not None:
        return None, "This invite link has already been used."
    if invite.expires_at <= timezone.now():
        return None, "This invite link has expired. Ask an admin for a new one."
    return invite, ""


@require_http_methods(["GET", "POST"])
def invite_accept(request, token: str):
    """Sync on purpose: account creation runs form validation that queries the database."""
    invite, problem = _invite_from_token(token)
    if invite is None:
        return django_render(request, "members/invite_accept.html", {"problem": problem}, status=410)
    user = request.user if request.user.is_authenticated else None
    form = None
    if request.method == "POST":
        form = SignupForm(request.POST) if user is None else None
        if form is None or form.is_valid():
            with transaction.atomic():
                if user is None:
                    user = form.save()
                    login(request, user, backend="console.accounts.backends.UsernameOrEmailBackend")
                Membership.objects.get_or_create(user=user, org=invite.org, defaults={"role": invite.role})
                invite.accepted_at = timezone.now()
                invite.accepted_by = user
                invite.save(update_fields=["accepted_at", "accepted_by"])
                AuditLog.objects.create(
                    org=invite.org,
                    actor=user,
                    actor_username=user.username,
                    action="member.join",
                    target_id=user.username,
                    detail=f"role={invite.role}",
                    client_ip=request.META.get("REMOTE_ADDR") or None,
                )
            messages.success(request, f"Welcome to {invite.org.name}.")
            return redirect("dashboard", org_slug=invite.org.slug)
    elif user is None:
        form = SignupForm(initial=SignupForm.initial_for(invite.email))
    return django_render(request, "members/invite_accept.html", {"invite": invite, "form": form})
