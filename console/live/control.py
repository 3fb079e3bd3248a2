"""Who drives a session's screen: one control lease per (org, session id), in the database.

Several console processes share the database, so the lease lives there (``accounts.ControlLease``), never
in a process or in a user's Django session: two operators cannot both "take control" (the second is told
who drives), and every action from the screen is checked against the row (``check``) before anything goes
upstream.

- **Take** (``take``): in one transaction that locks the row (``select_for_update`` on PostgreSQL; on SQLite
  every transaction begins IMMEDIATE): free, expired or held by a membership that no longer holds (below),
  the lease becomes the taker's with a new random token (only its hash is stored; the page keeps the token
  and sends it with each action); held by someone else, the taker gets their name. Two takers inserting
  the first row at once meet the unique constraint: the loser reads the winner's row.
- **Holds** (``holds``): not expired, and its membership is the one it was granted to (removing the member
  deletes the lease), at the version it was granted under (any role change since, even a demote undone
  by a re-promote, ends it), still operator or more, its user active.
- **Renewed** (``renew``) by each action and by the pane's heartbeat while it stays open; a renewal only
  extends a lease that still holds with that token (a release or a new take meanwhile is never undone).
- **Freed** by "Release" (``release``), by expiry, by a membership that no longer holds, and by the
  session's end (``end``).

The audit rows (take and release) are the views' to write. Hooks for what comes next (presence, handoff
requests, an admin's force): ``Driver`` names who drives; ``take(..., force=True)`` takes a lease that
holds from its holder.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from console.accounts.models import ControlLease, Membership, Role, hash_token


def lease_seconds() -> float:
    return float(getattr(settings, "SCREEN_CONTROL_SECONDS", 120.0))


@dataclass(frozen=True)
class Driver:
    """Who holds a lease that holds: their name, their membership, and until when."""

    username: str
    membership_id: int
    expires_at: datetime
    token_hash: str

    def is_member(self, membership: Membership) -> bool:
        return self.membership_id == membership.pk

    def has_token(self, token: str | None) -> bool:
        # As bytes (constant_time_compare encodes): a token of any characters is a wrong one, never an error.
        return bool(token) and constant_time_compare(self.token_hash, hash_token(token))


@dataclass(frozen=True)
class Taken:
    """What ``take`` did: ``token`` when the lease is the taker's now, else ``driver`` holds it."""

    token: str | None = None
    driver: Driver | None = None
    replaced: str = ""  # whose lapsed lease the take replaced (its user's name), for the audit row


def holds(lease: ControlLease, now: datetime | None = None) -> bool:
    """Whether ``lease`` (its membership and holder loaded) still gives control."""
    member = lease.membership
    return (
        lease.expires_at > (now or timezone.now())
        and member.version == lease.membership_version
        and member.user_id == lease.holder_id
        and member.org_id == lease.org_id
        and Role.at_least(member.role, Role.OPERATOR)
        and lease.holder.is_active
    )


def _driver(lease: ControlLease) -> Driver:
    return Driver(lease.holder.get_username(), lease.membership_id, lease.expires_at, lease.token_hash)


def _row(org_id: int, session_id: str, *, lock: bool = False) -> ControlLease | None:
    rows = ControlLease.objects.select_related("membership", "holder").filter(
        org_id=org_id, session_id=session_id
    )
    if lock:
        rows = rows.select_for_update(of=("self",))
    return rows.first()


def _take(membership: Membership, session_id: str, force: bool) -> Taken:
    now = timezone.now()
    token = secrets.token_urlsafe(24)
    fields = {
        "holder_id": membership.user_id,
        "membership_id": membership.pk,
        "membership_version": membership.version,
        "token_hash": hash_token(token),
        "acquired_at": now,
        "renewed_at": now,
        "expires_at": now + timedelta(seconds=lease_seconds()),
    }
    for _ in range(2):
        with transaction.atomic():
            lease = _row(membership.org_id, session_id, lock=True)
            if lease is None:
                try:
                    with transaction.atomic():  # a savepoint: the unique constraint may refuse it
                        ControlLease.objects.create(org_id=membership.org_id, session_id=session_id, **fields)
                except IntegrityError:
                    continue  # another process inserted it first: read theirs
                return Taken(token=token)
            if holds(lease, now) and lease.membership_id != membership.pk and not force:
                return Taken(driver=_driver(lease))
            replaced = "" if lease.membership_id == membership.pk else lease.holder.get_username()
            for name, value in fields.items():
                setattr(lease, name, value)
            lease.save()
            return Taken(token=token, replaced=replaced)
    lease = _row(membership.org_id, session_id)
    return Taken(driver=_driver(lease)) if lease is not None else Taken()


async def take(membership: Membership, session_id: str, *, force: bool = False) -> Taken:
    """Make ``membership`` the driver of ``session_id`` unless a lease of someone else holds (or ``force``:
    the hook for an admin's take-over, not offered yet)."""
    return await sync_to_async(_take)(membership, session_id, force)


async def driver(org_id: int, session_id: str) -> Driver | None:
    """Who drives ``session_id`` now, if anyone (a lease that no longer holds is nobody's)."""
    lease = await sync_to_async(_row)(org_id, session_id)
    return _driver(lease) if lease is not None and holds(lease) else None


async def check(membership: Membership, session_id: str, token: str | None) -> tuple[bool, Driver | None]:
    """(may this member, with this token, act on the screen now; who drives if anyone)."""
    found = await driver(membership.org_id, session_id)
    return found is not None and found.is_member(membership) and found.has_token(token), found


async def renew(membership: Membership, session_id: str, token: str | None) -> bool:
    """Extend the lease if it still holds for this member and token; False when it does not."""
    ok, _ = await check(membership, session_id, token)
    if not ok:
        return False
    now = timezone.now()
    # Conditional on the token: a release or another take that landed since the check is not undone.
    changed = await ControlLease.objects.filter(
        org_id=membership.org_id,
        session_id=session_id,
        membership_id=membership.pk,
        membership_version=membership.version,
        token_hash=hash_token(token),
        expires_at__gt=now,
    ).aupdate(renewed_at=now, expires_at=now + timedelta(seconds=lease_seconds()))
    return changed == 1


async def release(membership: Membership, session_id: str) -> bool:
    """Give control back (whichever of the member's windows holds it); whether there was a lease to free."""
    deleted, _ = await ControlLease.objects.filter(
        org_id=membership.org_id, session_id=session_id, membership_id=membership.pk
    ).adelete()
    return bool(deleted)


async def end(org_id: int, session_id: str) -> None:
    """The session ended: nobody drives it any more."""
    await ControlLease.objects.filter(org_id=org_id, session_id=session_id).adelete()
