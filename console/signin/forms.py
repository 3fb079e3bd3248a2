from __future__ import annotations

from allauth.core import context
from allauth.mfa.base import forms as mfa_forms
from axes.handlers.proxy import AxesProxyHandler
from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.signals import user_login_failed
from django.core.exceptions import ValidationError

from console.accounts.models import Role
from console.signin.models import DEFAULT_ROLE_CHOICES
from console.signin.oidc import issuer_refusal

LOCKED = "Too many failed attempts. Sign-in is locked for this account or address; try again later."
# A sentence, not a secret.
URL_CHANGED_NEEDS_SECRET = (
    "The issuer URL changed: enter the client secret for the new issuer. "  # noqa: S105
    "The stored secret is never sent to another address."
)


class LoginForm(AuthenticationForm):
    username = forms.CharField(
        label="Username or e-mail", max_length=254, widget=forms.TextInput(attrs={"autofocus": True})
    )

    def __init__(self, request=None, *args, **kwargs):
        super().__init__(request, *args, **kwargs)
        # Sent back after a refusal, the identifier stays and the cursor waits in the password field.
        if self.data.get("username") or self.initial.get("username"):
            self.fields["username"].widget.attrs.pop("autofocus", None)
            self.fields["password"].widget.attrs["autofocus"] = True


class ThrottledCodeMixin:
    """A second-factor code counts towards the login lockout (django-axes) exactly like a password:
    refused unchecked while the account or address is locked out, and a wrong one is a failed login."""

    def clean_code(self):
        request = context.request
        credentials = {"username": self.user.get_username()}
        if AxesProxyHandler.is_locked(request, credentials):
            raise ValidationError(LOCKED, code="locked")
        try:
            return super().clean_code()
        except ValidationError:
            user_login_failed.send(sender=__name__, credentials=credentials, request=request)
            raise


class AuthenticateForm(ThrottledCodeMixin, mfa_forms.AuthenticateForm):
    pass


class ReauthenticateForm(ThrottledCodeMixin, mfa_forms.ReauthenticateForm):
    pass


class SsoStartForm(forms.Form):
    email = forms.EmailField(
        label="Work e-mail",
        max_length=254,
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
        help_text="Your organization is found by the domain of your address.",
    )


def parse_mapping(text: str) -> list[list[str]]:
    """``value = role`` lines (blank lines and ``#`` comments ignored) to ``[[value, role], ...]``."""
    mapping = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        value, sep, role = line.rpartition("=")
        value, role = value.strip(), role.strip().lower()
        if not sep or not value:
            raise ValidationError(
                f"Line {number}: write “claim value = role”, e.g. “console-admins = admin”."
            )
        if role not in Role.values:
            raise ValidationError(f"Line {number}: “{role}” is not a role (viewer, operator or admin).")
        mapping.append([value, role])
    if len(mapping) > 100:
        raise ValidationError("At most 100 lines.")
    return mapping


def format_mapping(mapping: list) -> str:
    return "\n".join(f"{value} = {role}" for value, role in mapping)


def parse_domains(text: str) -> list[str]:
    domains = []
    for raw in text.replace(",", "\n").split():
        domain = raw.strip().lower().lstrip("@").rstrip(".")
        if not domain:
            continue
        try:
            forms.EmailField().clean(f"x@{domain}")
        except ValidationError:
            raise ValidationError(f"“{raw}” is not an e-mail domain.") from None
        if domain not in domains:
            domains.append(domain)
    if len(domains) > 50:
        raise ValidationError("At most 50 domains.")
    return domains


class SsoSettingsForm(forms.Form):
    """An org's sign-in policy and OpenID Connect settings; the client secret is write-only."""

    mfa_required = forms.BooleanField(
        label="Members must use two-factor authentication",
        required=False,
        help_text="Members without an authenticator app or security key are asked to add one before they "
        "reach this organization's pages.",
    )
    sso_enabled = forms.BooleanField(label="Single sign-on (OpenID Connect)", required=False)
    issuer_url = forms.URLField(
        label="Issuer URL",
        max_length=300,
        required=False,
        assume_scheme="https",
        help_text="Its discovery document is read from <issuer>/.well-known/openid-configuration.",
    )
    client_id = forms.CharField(label="Client ID", max_length=200, required=False)
    client_secret = forms.CharField(
        label="Client secret",
        required=False,
        strip=True,
        max_length=1000,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )
    domains = forms.CharField(
        label="Allowed e-mail domains",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One per line. Only these addresses may sign in, and “Sign in with SSO” on the login page "
        "finds this organization by them.",
    )
    default_role = forms.ChoiceField(
        label="Role of new members", choices=DEFAULT_ROLE_CHOICES, required=False, initial=Role.VIEWER
    )
    role_claim = forms.CharField(label="Role claim", max_length=100, required=False, initial="groups")
    role_mapping = forms.CharField(
        label="Claim values to roles",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="One “value = role” per line; the highest match wins, at every sign-in.",
    )
    sso_required = forms.BooleanField(
        label="Require single sign-on",
        required=False,
        help_text="Members can no longer sign in to this organization with a password.",
    )
    break_glass = forms.ChoiceField(
        label="Break-glass admin",
        required=False,
        help_text="One admin who may still sign in with a password when single sign-on is required.",
    )

    def __init__(self, *args, admins=(), current_issuer: str = "", has_secret: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.current_issuer = current_issuer
        self.has_secret = has_secret
        self.fields["break_glass"].choices = [("", "None"), *[(str(u.pk), u.get_username()) for u in admins]]

    def clean_domains(self):
        return parse_domains(self.cleaned_data.get("domains") or "")

    def clean_role_mapping(self):
        return parse_mapping(self.cleaned_data.get("role_mapping") or "")

    def clean_break_glass(self):
        value = self.cleaned_data.get("break_glass")
        if not value:
            return None
        return get_user_model().objects.filter(pk=int(value)).first()

    def clean(self):
        """Blocking (resolves the issuer's host): async views run ``is_valid`` off the event loop."""
        cleaned = super().clean()
        issuer = cleaned.get("issuer_url") or ""
        if issuer:
            reason = issuer_refusal(issuer)
            if reason:
                self.add_error("issuer_url", reason[0].upper() + reason[1:] + ".")
            elif issuer != self.current_issuer and self.has_secret and not cleaned.get("client_secret"):
                self.add_error("client_secret", URL_CHANGED_NEEDS_SECRET)
        if cleaned.get("sso_enabled"):
            for name in ("issuer_url", "client_id"):
                if not cleaned.get(name) and name not in self.errors:
                    self.add_error(name, "Needed for single sign-on.")
            kept = self.has_secret and issuer == self.current_issuer
            if not cleaned.get("client_secret") and not kept and "client_secret" not in self.errors:
                self.add_error("client_secret", "Needed for single sign-on.")
            if not cleaned.get("domains") and "domains" not in self.errors:
                self.add_error("domains", "Give at least one domain: only its addresses may sign in.")
        if cleaned.get("sso_required") and not cleaned.get("sso_enabled"):
            self.add_error("sso_required", "Single sign-on must be on to be required.")
        return cleaned
