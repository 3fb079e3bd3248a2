"""Scrape tokens of ``/metrics`` (console/metrics/views.py): one organization's, shown once, kept hashed."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models

from console.accounts.models import Organization

PREFIX = "bmc_"  # "browser metrics, console": a token says what it is in a log or a secret scanner


def digest(token: str) -> str:
    """SHA-256 of the token: it is 256 random bits, so a fast hash is enough (no dictionary to try)."""
    return hashlib.sha256(token.encode()).hexdigest()


class MetricsToken(models.Model):
    """A bearer token that reads one organization's metrics; the token itself is never stored."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="metrics_tokens")
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12)  # the first characters, to tell tokens apart in the list
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.name} ({self.hint}…)"

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    @classmethod
    async def aissue(cls, org: Organization, name: str, user) -> tuple[MetricsToken, str]:
        """A new token for ``org``: the row and the token (shown once; only its digest is kept)."""
        token = PREFIX + secrets.token_urlsafe(32)
        row = await cls.objects.acreate(
            org=org, name=name, digest=digest(token), hint=token[: len(PREFIX) + 4], created_by=user
        )
        return row, token
