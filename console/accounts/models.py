import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone

from console.accounts import crypto


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    OPERATOR = "operator", "Operator"
    ADMIN = "admin", "Admin"

    @classmethod
    def rank(cls, role: str) -> int:
        return [cls.VIEWER, cls.OPERATOR, cls.ADMIN].index(cls(role))

    @classmethod
    def at_least(cls, role: str, needed: str) -> bool:
        return cls.rank(role) >= cls.rank(needed)


class Organization(models.Model):
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=50, unique=True)
    service_base_url = models.URLField("service base URL", max_length=300)
    # Fernet token of the service API key; the plaintext is never stored and never rendered.
    api_key_encrypted = models.TextField(blank=True, editable=False)
    api_key_last4 = models.CharField(max_length=4, blank=True, editable=False)
    default_project_id = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The URL the stored key belongs to: a key is never carried over to a new address (save()).
        self._key_url = self.service_base_url

    def __str__(self):
        return self.name

    def save(self, *args, **kwargs):
        """Changing the base URL without setting a key in the same change clears the stored key.

        Whoever can edit the URL (a form, Django admin, the shell) must not be able to send the key to
        an address of their choosing.
        """
        if self.service_base_url != self._key_url and self.api_key_encrypted:
            self.api_key_encrypted = self.api_key_last4 = ""
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "api_key_encrypted", "api_key_last4"}
        super().save(*args, **kwargs)
        self._key_url = self.service_base_url

    def set_api_key(self, api_key: str) -> None:
        self.api_key_encrypted = crypto.encrypt(api_key)
        self.api_key_last4 = api_key[-4:]
        self._key_url = self.service_base_url

    @property
    def api_key(self) -> str:
        return crypto.decrypt(self.api_key_encrypted) if self.api_key_encrypted else ""

    @property
    def api_key_hint(self) -> str:
        return f"••••{self.api_key_last4}" if self.api_key_encrypted else "(not set)"

    def service(self, project: str | None = None):
        """A service client bound to this organization's base URL, key and project."""
        # Imported here so the accounts app never depends on the client at import time.
        from console.service import Service

        return Service(
            base_url=self.service_base_url,
            api_key=self.api_key,
            project=project or self.default_project_id or None,
            allow_private=settings.SERVICE_URL_ALLOW_PRIVATE,
        )


class MembershipQuerySet(models.QuerySet):
    def update(self, **kwargs):
        # A role written in bulk (the members page, a script) is a new version of the membership too: what
        # was granted against the old one (a screen's control lease) must not outlive a demote and
        # re-promote.
        if "role" in kwargs and "version" not in kwargs:
            kwargs["version"] = models.F("version") + 1
        return super().update(**kwargs)


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    # The service project this user works in for this org; empty means the org's default project.
    project_id = models.CharField(max_length=100, blank=True)
    # Its name when it was picked, so the header can show it without asking the service.
    project_name = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # One more at every role change (save() and QuerySet.update() alike): what was granted to this membership
    # (a screen's control lease) records the version it was granted under and ends with it.
    version = models.PositiveIntegerField(default=1, editable=False)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "org"], name="one_membership_per_org")]
        ordering = ["org__name"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._loaded_role = self.__dict__.get("role")  # (not loaded when deferred: no query for it)

    def __str__(self):
        return f"{self.user} in {self.org} ({self.role})"

    def save(self, *args, **kwargs):
        if self.pk is not None and self._loaded_role is not None and self.role != self._loaded_role:
            self.version += 1
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "version"}
        super().save(*args, **kwargs)
        self._loaded_role = self.role

    def has_role(self, needed: str) -> bool:
        return Role.at_least(self.role, needed)

    @property
    def current_project_id(self) -> str:
        return self.project_id or self.org.default_project_id


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class Invite(models.Model):
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="invites")
    email = models.EmailField(blank=True)
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    # Only the hash is stored: a database leak must not yield usable invite links.
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"invite to {self.org} as {self.role}"

    @property
    def is_usable(self) -> bool:
        return self.accepted_at is None and self.expires_at > timezone.now()


class AuditLog(models.Model):
    class Outcome(models.TextChoices):
        OK = "ok", "ok"
        ERROR = "error", "error"
        # The request went out but no readable answer came back: it may or may not have taken effect.
        UNKNOWN = "unknown", "unknown (check the resource)"
        DENIED = "denied", "denied"

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="audit_entries")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Kept as text so the entry still names the actor after the user is deleted.
    actor_username = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=100, db_index=True)
    target_id = models.CharField(max_length=200, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.OK)
    request_id = models.CharField("service request id", max_length=200, blank=True)
    detail = models.CharField(max_length=500, blank=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # A refusal repeated (same actor, action and target, audit.deny) is one row: how many times it happened,
    # and when it last did (None while it happened once). Every other row happened once.
    count = models.PositiveIntegerField(default=1)
    last_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["org", "-created_at"]),
            # Finds the open row of a refusal (audit.deny) among only the refusals.
            models.Index(
                fields=["org", "actor", "action", "target_id", "-created_at"],
                condition=models.Q(outcome="denied"),
                name="audit_refusals",
            ),
        ]

    def __str__(self):
        times = f" x{self.count}" if self.count > 1 else ""
        return (
            f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor_username} {self.action} {self.outcome}{times}"
        )


class RefusalCounter(models.Model):
    """How many refusals a user met since ``window_start``: the audit log's throttle (audit.deny).

    One row per user, locked while a refusal is counted, so every console replica counts on the same row
    and one user's refusals are written one at a time.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    window_start = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    def __str__(self):
        return f"{self.user_id}: {self.count} since {self.window_start:%Y-%m-%d %H:%M:%S}"


class ControlLease(models.Model):
    """Who drives a browser session's screen: at most one lease per (org, session id), in the database so
    every console process agrees (console/live/control.py takes, checks, renews and frees it).

    A lease holds while it has not expired and its membership is the one it was granted to, at the same
    version (no role change since) and still operator or more: removing the member deletes it (cascade),
    a demote (even one undone since) ends it. Only a hash of the holder's token is kept; none while a
    handoff waits for the new holder's page to claim it."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    session_id = models.CharField(max_length=200)
    holder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    membership = models.ForeignKey(Membership, on_delete=models.CASCADE, related_name="+")
    membership_version = models.PositiveIntegerField()
    # Empty while the lease is granted to its holder and not yet claimed by their page (a handoff).
    token_hash = models.CharField(max_length=64, editable=False)
    acquired_at = models.DateTimeField()
    renewed_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    # The holder's last action on the screen (None: none since acquired): "idle" for an unanswered request.
    acted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["org", "session_id"], name="one_control_lease_per_session")
        ]

    def __str__(self):
        return f"{self.holder} drives {self.session_id} in {self.org} until {self.expires_at:%H:%M:%S}"


class ScreenPresence(models.Model):
    """One window (a page's screen pane) watching a browser session's screen, in the database so every
    console process shows the same watchers (console/live/control.py). Its pane checks in every
    ``SCREEN_PRESENCE_SECONDS``; a row not seen for a few of those is nobody (and is deleted).

    ``asked_at``: this window asks the driver for control since then. ``notice``: what the window is told
    once at its next check-in (a request declined, control taken over). Removing the member deletes it."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    session_id = models.CharField(max_length=200)
    window = models.CharField(max_length=40)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    membership = models.ForeignKey(Membership, on_delete=models.CASCADE, related_name="+")
    seen_at = models.DateTimeField()
    asked_at = models.DateTimeField(null=True, blank=True)
    notice = models.CharField(max_length=300, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["org", "session_id", "window"], name="one_presence_per_window")
        ]
        indexes = [models.Index(fields=["org", "session_id", "seen_at"], name="presence_by_session")]

    def __str__(self):
        return f"{self.user} watches {self.session_id} in {self.org} (seen {self.seen_at:%H:%M:%S})"
