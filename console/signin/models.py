"""Each organization's sign-in policy and single sign-on (OpenID Connect) settings.

Two-factor devices (TOTP, WebAuthn, recovery codes) are allauth.mfa's ``Authenticator`` rows and the
signed-in sessions allauth.usersessions' ``UserSession`` rows: this app keeps only what is per org.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from console.accounts import crypto
from console.accounts.models import Organization, Role

NO_ACCESS = ""
DEFAULT_ROLE_CHOICES = [(NO_ACCESS, "No access (only the claim mapping gives a role)"), *Role.choices]


class OrgSignIn(models.Model):
    """An organization's sign-in policy; absent means no policy and no SSO."""

    org = models.OneToOneField(
        Organization, primary_key=True, on_delete=models.CASCADE, related_name="signin"
    )
    # Members without a second factor (TOTP or a security key) cannot reach the org's pages.
    mfa_required = models.BooleanField(default=False)

    sso_enabled = models.BooleanField(default=False)
    # The OpenID Connect issuer: discovery is <issuer>/.well-known/openid-configuration.
    issuer_url = models.URLField(max_length=300, blank=True)
    client_id = models.CharField(max_length=200, blank=True)
    # Fernet token of the client secret (KEY_ENCRYPTION_KEYS, like the service API key); never rendered.
    client_secret_encrypted = models.TextField(blank=True, editable=False)
    client_secret_last4 = models.CharField(max_length=4, blank=True, editable=False)
    # The role a new member gets when no mapping line matches; empty: no access without a match.
    default_role = models.CharField(
        max_length=10, choices=DEFAULT_ROLE_CHOICES, default=Role.VIEWER, blank=True
    )
    # The claim whose values map to roles (a string or a list of strings, e.g. "groups").
    role_claim = models.CharField(max_length=100, blank=True, default="groups")
    # [[claim value, role], ...]: the highest role any matching value gives.
    role_mapping = models.JSONField(default=list, blank=True)
    # Members may no longer sign in with a password, except the break-glass admin.
    sso_required = models.BooleanField(default=False)
    break_glass = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "organization sign-in policy"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The issuer the stored secret belongs to: a secret is never sent to a new issuer (save()).
        self._secret_issuer = self.issuer_url

    def __str__(self):
        return f"sign-in policy of {self.org_id}"

    def save(self, *args, **kwargs):
        """A changed issuer without a new secret in the same change clears the stored secret (as API keys)."""
        if self.issuer_url != self._secret_issuer and self.client_secret_encrypted:
            self.client_secret_encrypted = self.client_secret_last4 = ""
        super().save(*args, **kwargs)
        self._secret_issuer = self.issuer_url

    def set_client_secret(self, secret: str) -> None:
        self.client_secret_encrypted = crypto.encrypt(secret)
        self.client_secret_last4 = secret[-4:]
        self._secret_issuer = self.issuer_url

    @property
    def client_secret(self) -> str:
        return crypto.decrypt(self.client_secret_encrypted) if self.client_secret_encrypted else ""

    @property
    def client_secret_hint(self) -> str:
        return f"••••{self.client_secret_last4}" if self.client_secret_encrypted else "(not set)"

    @property
    def sso_ready(self) -> bool:
        return bool(self.sso_enabled and self.issuer_url and self.client_id)

    @property
    def domains(self) -> list[str]:
        return [d.domain for d in self.org.sso_domains.all()]

    def role_for(self, claims: dict) -> str:
        """The role these ID-token claims give: the highest mapped, else the default (maybe no access)."""
        values = claims.get(self.role_claim) if self.role_claim else None
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, list):
            values = []
        found = [role for value, role in self.role_mapping if value in values and role in Role.values]
        if found:
            return max(found, key=Role.rank)
        return self.default_role


class SsoDomain(models.Model):
    """An e-mail domain whose users the login page's "Sign in with SSO" sends to this org's provider.

    A domain belongs to one organization at most (unique), so the login page never has to choose."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="sso_domains")
    domain = models.CharField(max_length=253, unique=True)

    class Meta:
        ordering = ["domain"]

    def __str__(self):
        return self.domain


class SsoIdentity(models.Model):
    """A user of the org's identity provider (its ``sub``) and the console user it signs in as."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="sso_identities")
    subject = models.CharField(max_length=255)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities"
    )
    email = models.EmailField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["org", "subject"], name="one_identity_per_subject"),
            models.UniqueConstraint(fields=["org", "user"], name="one_identity_per_member"),
        ]

    def __str__(self):
        return f"{self.subject} of {self.org_id} -> {self.user_id}"
