"""Signing in: the password login (and its lockout page) and password change, single sign-on (start,
callback), the org's sign-in settings, the "requires SSO" page, each user's sessions and an admin's "sign
out everywhere".

The OpenID Connect views are sync: Authlib and allauth's login stages are (they run in a worker thread under
ASGI); the org pages are async like every org view.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlsplit

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404
from django.shortcuts import redirect
from django.shortcuts import render as django_render
from django.urls import reverse, reverse_lazy
from django.utils.crypto import constant_time_compare
from django.views.decorators.http import require_http_methods, require_POST

from console.accounts import audit
from console.accounts.models import AuditLog, Membership, Organization, Role
from console.signin import flows, oidc, policy, sessions
from console.signin.forms import LoginForm, SsoSettingsForm, SsoStartForm, format_mapping
from console.signin.models import OrgSignIn, SsoDomain
from console.web.decorators import org_view
from console.web.render import done, render, safe_next

log = logging.getLogger("console.signin")

# The flow under way in this browser: {"state", "org", "next"} (Authlib keeps the nonce and PKCE verifier).
FLOW = "signin_sso_flow"


# --- Password sign-in -----------------------------------------------------------------------------


class LoginView(auth_views.LoginView):
    """Username or e-mail and password; then allauth's stages ask for a second factor when the user has one
    (console/signin/flows.py); an account whose every organization requires single sign-on is sent there."""

    template_name = "signin/login.html"
    form_class = LoginForm
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "sso_form": SsoStartForm()}

    def form_valid(self, form):
        user = form.get_user()
        refused = flows.password_refusal(user)
        if refused:
            form.add_error(None, refused)
            return self.form_invalid(form)
        return flows.password_login(self.request, user, self.get_success_url())


def lockout_response(request, *args, **kwargs):
    """django-axes calls this for a locked-out login: the login page again, saying why, with 429."""
    identifier = request.POST.get("username", "")[:254] if request.method == "POST" else ""
    context = {
        "form": LoginForm(request, initial={"username": identifier}),
        "sso_form": SsoStartForm(),
        "locked_out": True,
        "cooloff_minutes": 15,
    }
    return django_render(request, "signin/login.html", context, status=429)


class PasswordChangeView(auth_views.PasswordChangeView):
    template_name = "signin/password_change.html"
    success_url = reverse_lazy("home")

    def form_valid(self, form):
        messages.success(self.request, "Your password was changed.")
        return super().form_valid(form)


# --- Single sign-on --------------------------------------------------------------------------------


def _start(request, org: Organization, next_url: str, login_hint: str = ""):
    signin = OrgSignIn.objects.filter(org=org).select_related("org").first()
    if signin is None or not signin.sso_ready:
        raise Http404("No single sign-on")
    provider = oidc.OrgProvider(signin)
    callback = request.build_absolute_uri(reverse("sso-callback"))
    extra = {"login_hint": login_hint} if login_hint else {}
    try:
        response = provider.authorize_redirect(request, callback, **extra)
    except oidc.ProviderError as exc:
        flows.audit(
            org,
            None,
            "signin.sso",
            detail=f"the provider cannot be used: {exc}",
            outcome=AuditLog.Outcome.ERROR,
            client_ip=request.META.get("REMOTE_ADDR") or None,
        )
        return _failed(request, f"{org.name}'s identity provider cannot be used: {exc}.", status=502)
    url = response["Location"]
    request.session[FLOW] = {"state": _state_of(url), "org": org.pk, "next": next_url}
    # A page that moves on (meta refresh), not a 302: the CSP's form-action 'self' also covers a form's
    # redirects, and Chromium refuses one to the provider's origin.
    return django_render(request, "signin/sso_redirect.html", {"url": url, "org": org})


def _state_of(url: str) -> str:
    """The ``state`` Authlib put in the authorization URL (and, with nonce and verifier, in the session)."""
    return parse_qs(urlsplit(url).query).get("state", [""])[0]


def _failed(request, sentence: str, *, status: int = 400):
    return django_render(request, "signin/sso_failed.html", {"sentence": sentence}, status=status)


@require_POST
def sso_begin(request):
    """The login page's "Sign in with SSO": the organization is the one whose domains hold the address."""
    form = SsoStartForm(request.POST)
    if not form.is_valid():
        return django_render(request, "signin/login.html", _login_context(request, sso_form=form), status=400)
    email = form.cleaned_data["email"]
    domain = email.rpartition("@")[2].lower()
    found = (
        SsoDomain.objects.filter(domain=domain, org__signin__sso_enabled=True).select_related("org").first()
    )
    if found is None:
        form.add_error("email", f"No organization signs in {domain} addresses with single sign-on.")
        return django_render(request, "signin/login.html", _login_context(request, sso_form=form), status=400)
    next_url = safe_next(request, request.POST.get("next"), reverse("dashboard", args=[found.org.slug]))
    return _start(request, found.org, next_url, login_hint=email)


def _login_context(request, **extra) -> dict:
    return {"form": LoginForm(request), "sso_form": SsoStartForm(), **extra}


@require_http_methods(["GET"])
def sso_callback(request):
    flow = request.session.pop(FLOW, None)
    state = request.GET.get("state", "")
    client_ip = request.META.get("REMOTE_ADDR") or None
    if not flow or not state or not constant_time_compare(state, flow.get("state", "")):
        return _failed(request, "This sign-in did not start here, or it was already used: start again.")
    org = Organization.objects.filter(pk=flow["org"]).first()
    signin = OrgSignIn.objects.filter(org=org).select_related("org").first() if org else None
    if signin is None or not signin.sso_ready:
        return _failed(request, "Single sign-on is no longer set up for this organization.")
    provider = oidc.OrgProvider(signin)
    try:
        token = provider.authorize_access_token(request)
        claims = token.get("userinfo")
        if not claims:
            raise oidc.OAuthError(description="the provider sent no ID token")
        claims = _with_userinfo(provider, signin, token, dict(claims))
    except oidc.FAILURES as exc:
        why = _oauth_sentence(exc)
        flows.audit(org, None, "signin.sso", detail=why, outcome=AuditLog.Outcome.DENIED, client_ip=client_ip)
        return _failed(request, f"Single sign-on with {org.name} failed: {why}.")
    try:
        outcome = flows.admit(signin, claims, client_ip=client_ip)
    except flows.Refused as refused:
        flows.audit(
            org,
            refused.user,
            "signin.sso",
            target=refused.subject,
            detail=str(refused),
            outcome=AuditLog.Outcome.DENIED,
            client_ip=client_ip,
        )
        return _failed(request, f"You cannot sign in to {org.name}: {refused}.", status=403)
    flows.audit(
        org,
        outcome.user,
        "signin.sso",
        target=outcome.user.get_username(),
        detail=f"role={outcome.role}",
        client_ip=client_ip,
    )
    next_url = safe_next(request, flow.get("next"), reverse("dashboard", args=[org.slug]))
    return flows.sso_login(request, outcome.user, org, next_url)


def _with_userinfo(provider, signin: OrgSignIn, token, claims: dict) -> dict:
    """The ID token's claims, and the role claim from the userinfo endpoint when only it has it."""
    if not signin.role_claim or signin.role_claim in claims:
        return claims
    if not provider.load_server_metadata().get("userinfo_endpoint"):
        return claims
    info = provider.userinfo(token=token)
    if str(info.get("sub")) == str(claims.get("sub")) and signin.role_claim in info:
        claims[signin.role_claim] = info[signin.role_claim]
    return claims


def _oauth_sentence(exc) -> str:
    if isinstance(exc, oidc.ProviderError):
        return str(exc)
    error = getattr(exc, "error", "") or exc.__class__.__name__
    if error == "mismatching_state":
        return "the answer does not belong to this sign-in (state)"
    text = str(exc)
    if "nonce" in text:
        return "the ID token was not issued for this sign-in (nonce)"
    description = getattr(exc, "description", "") or ""
    return f"{error}{': ' + description if description else ''}"[:300]


# --- The org's "requires single sign-on" page ------------------------------------------------------


@require_http_methods(["GET", "POST"])
@org_view("viewer", enforce_signin=False)
async def org_sso(request):
    """Where org_view sends a member whose session does not meet the org's single sign-on rule."""
    signin = await OrgSignIn.objects.filter(org=request.org).afirst()
    if signin is None or not signin.sso_ready:
        raise Http404("No single sign-on")
    if request.method == "POST":
        next_url = safe_next(
            request,
            request.POST.get("next"),
            reverse("dashboard", args=[request.org.slug]),
            under=f"/o/{request.org.slug}/",
        )
        email = request.user.email or ""
        return await sync_to_async(_start)(request, request.org, next_url, email)
    why = policy.REASONS.get(request.GET.get("why", ""), "")
    return render(request, "signin/org_sso.html", {"why": why, "next": request.GET.get("next", "")})


# --- The org's sign-in settings --------------------------------------------------------------------


def _settings_initial(signin: OrgSignIn | None, domains: list[str]) -> dict:
    if signin is None:
        return {}
    return {
        "mfa_required": signin.mfa_required,
        "sso_enabled": signin.sso_enabled,
        "issuer_url": signin.issuer_url,
        "client_id": signin.client_id,
        "domains": "\n".join(domains),
        "default_role": signin.default_role,
        "role_claim": signin.role_claim,
        "role_mapping": format_mapping(signin.role_mapping),
        "sso_required": signin.sso_required,
        "break_glass": str(signin.break_glass_id or ""),
    }


def _save_settings(org, signin: OrgSignIn | None, data: dict) -> tuple[list[str], str]:
    """Write the form's values; the names of the fields that changed, and a domain another org holds."""
    with transaction.atomic():
        signin = signin or OrgSignIn(org=org)
        fields = (
            "mfa_required",
            "sso_enabled",
            "issuer_url",
            "client_id",
            "default_role",
            "role_claim",
            "role_mapping",
            "sso_required",
        )
        changed = [f for f in fields if getattr(signin, f) != data[f]]
        for name in changed:
            setattr(signin, name, data[name])
        if (signin.break_glass_id or None) != (data["break_glass"].pk if data["break_glass"] else None):
            signin.break_glass = data["break_glass"]
            changed.append("break_glass")
        if data["client_secret"]:
            signin.set_client_secret(data["client_secret"])
            changed.append("client_secret")
        taken = (
            SsoDomain.objects.filter(domain__in=data["domains"])
            .exclude(org=org)
            .values_list("domain", flat=True)
        )
        if taken:
            transaction.set_rollback(True)
            return [], taken[0]
        current = set(SsoDomain.objects.filter(org=org).values_list("domain", flat=True))
        if current != set(data["domains"]):
            SsoDomain.objects.filter(org=org).exclude(domain__in=data["domains"]).delete()
            SsoDomain.objects.bulk_create(
                [SsoDomain(org=org, domain=d) for d in data["domains"] if d not in current]
            )
            changed.append("domains")
        signin.save()
    return changed, ""


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def sign_in_settings(request):
    org = request.org
    signin = await OrgSignIn.objects.filter(org=org).afirst()
    domains = [d async for d in SsoDomain.objects.filter(org=org).values_list("domain", flat=True)]
    admins = [
        m.user async for m in Membership.objects.filter(org=org, role=Role.ADMIN).select_related("user")
    ]
    kwargs = {
        "admins": admins,
        "current_issuer": signin.issuer_url if signin else "",
        "has_secret": bool(signin and signin.client_secret_encrypted),
    }
    if request.method == "POST":
        form = SsoSettingsForm(request.POST, **kwargs)
        # Validation resolves the issuer's host: in a worker thread, not on the event loop or the ORM thread.
        if await sync_to_async(form.is_valid, thread_sensitive=False)():
            data = form.cleaned_data
            if data["break_glass"] is not None and data["break_glass"] not in admins:
                form.add_error("break_glass", "Choose an admin of this organization.")
            else:
                changed, taken = await sync_to_async(_save_settings)(org, signin, data)
                if taken:
                    form.add_error(
                        "domains", f"{taken} is already another organization's single sign-on domain."
                    )
                else:
                    # Field names only: never the secret.
                    await audit.record(
                        request,
                        "org.signin",
                        target_id=org.slug,
                        detail="changed: " + (", ".join(changed) or "nothing"),
                    )
                    messages.success(request, "Sign-in settings saved.")
                    return redirect("sign-in-settings", org_slug=org.slug)
    else:
        form = SsoSettingsForm(initial=_settings_initial(signin, domains), **kwargs)
    context = {
        "form": form,
        "signin": signin,
        "callback_url": request.build_absolute_uri(reverse("sso-callback")),
    }
    return render(request, "signin/settings.html", context, "sign-in-form")


# --- Sessions --------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def session_list(request):
    """The user's signed-in sessions; sign out one, or all the others."""
    user = request.user
    current = request.session.session_key
    if request.method == "POST":
        which = request.POST.get("session", "")
        if which == "others":
            ended = sessions.end(user, keep=current)
            detail = f"{ended} other session(s)"
        elif which and which != current:
            ended = sessions.end(user, only=which)
            detail = "one session" if ended else ""
        else:
            ended, detail = 0, ""
        if ended:
            _audit_user(request, user, "signin.sessions.end", detail=detail)
            messages.success(request, "Signed out: " + detail + ".")
        return redirect("signin-sessions")
    sessions.track(request, user)
    rows = sessions.sessions_of(user)
    return django_render(request, "signin/sessions.html", {"sessions": rows, "current": current})


def _audit_user(request, user, action: str, *, detail: str = "", target: str = "") -> None:
    """A change to the user's own sign-in: one row in each of their organizations' audit logs."""
    for org_id in Membership.objects.filter(user=user).values_list("org_id", flat=True):
        AuditLog.objects.create(
            org_id=org_id,
            actor=user,
            actor_username=user.get_username(),
            action=action,
            target_id=target or user.get_username(),
            detail=detail[:500],
            client_ip=request.META.get("REMOTE_ADDR") or None,
        )


@require_POST
@org_view("viewer")  # role checked below, so the refusal can land in the audit log
async def member_sign_out(request, member_id: int):
    """An admin signs a member out of every session they have (every browser, every org)."""
    membership = await request.org.memberships.select_related("user").filter(pk=member_id).afirst()
    if membership is None:
        raise Http404("No such member")
    if not request.membership.has_role(Role.ADMIN):
        await audit.deny(request, "member.sign_out", needed=Role.ADMIN, target_id=member_id)
    ended = await sync_to_async(sessions.end_everywhere)(membership.user)
    await audit.record(
        request, "member.sign_out", target_id=membership.user.username, detail=f"{ended} session(s)"
    )
    messages.success(request, f"{membership.user.username} was signed out everywhere ({ended} session(s)).")
    if membership.user_id == request.user.pk:
        return done(request, reverse("login"))
    return done(request, reverse("members", args=[request.org.slug]))
