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

- **Handed off**: a watcher asks (``ask``: a flag on their window's presence row); the holder grants
  (``grant``: the lease becomes the asker's with no token yet, and the asking window claims it with a take)
  or declines (``decline``: the asker is told). An unanswered request is granted by itself (``check_in`` of
  the asking window) once it is ``SCREEN_CONTROL_REQUEST_SECONDS`` old and the holder has not acted on the
  screen for as long. An admin takes it at once (``take(..., force=True)``); the holder is told.
- **Presence** (``check_in``): each window watching a session's screen checks in every
  ``SCREEN_PRESENCE_SECONDS`` (a row per window, ``accounts.ScreenPresence``); a window not seen for
  ``PRESENCE_MISSES`` of those is gone. A check-in answers what the pane shows: the driver, the watchers
  (names and roles), the requests, and a notice for this window (once).

The audit rows (take, grant, decline, force, release) are the views' to write.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from console.accounts.models import ControlLease, Membership, Role, ScreenPresence, hash_token

PRESENCE_MISSES = 3  # check-ins a window may miss before it counts as gone
MAX_WINDOWS = 20  # presence rows one member may have at once (every session together)
WINDOW = re.compile(r"^[A-Za-z0-9_-]{8,40}$")


def lease_seconds() -> float:
    return float(getattr(settings, "SCREEN_CONTROL_SECONDS", 120.0))


def presence_seconds() -> float:
    return float(getattr(settings, "SCREEN_PRESENCE_SECONDS", 2.0))


def request_seconds() -> float:
    return float(getattr(settings, "SCREEN_CONTROL_REQUEST_SECONDS", 30.0))


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
    forced: str = ""  # whose holding lease a forced take ended (its user's name)


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
                _settled(membership, session_id)
                return Taken(token=token)
            held = holds(lease, now) and lease.membership_id != membership.pk
            if held and not force:
                return Taken(driver=_driver(lease))
            replaced = "" if lease.membership_id == membership.pk else lease.holder.get_username()
            previous = lease.membership_id
            for name, value in fields.items():
                setattr(lease, name, value)
            lease.acted_at = None
            lease.save()
            _settled(membership, session_id)
            if held:
                by = membership.user.get_username()
                _tell(lease.org_id, session_id, previous, f"{by} (an admin) took control from you.")
                return Taken(token=token, forced=replaced)
            return Taken(token=token, replaced=replaced)
    lease = _row(membership.org_id, session_id)
    return Taken(driver=_driver(lease)) if lease is not None else Taken()


async def take(membership: Membership, session_id: str, *, force: bool = False) -> Taken:
    """Make ``membership`` the driver of ``session_id`` unless a lease of someone else holds; ``force``: even
    then (an admin's take-over: the caller checks the role; the former holder's windows are told)."""
    return await sync_to_async(_take)(membership, session_id, force)


async def driver(org_id: int, session_id: str) -> Driver | None:
    """Who drives ``session_id`` now, if anyone (a lease that no longer holds is nobody's)."""
    lease = await sync_to_async(_row)(org_id, session_id)
    return _driver(lease) if lease is not None and holds(lease) else None


async def check(membership: Membership, session_id: str, token: str | None) -> tuple[bool, Driver | None]:
    """(may this member, with this token, act on the screen now; who drives if anyone)."""
    found = await driver(membership.org_id, session_id)
    return found is not None and found.is_member(membership) and found.has_token(token), found


async def renew(membership: Membership, session_id: str, token: str | None, *, acted: bool = False) -> bool:
    """Extend the lease if it still holds for this member and token; False when it does not. ``acted``: an
    action on the screen renewed it (the holder is not idle)."""
    ok, _ = await check(membership, session_id, token)
    if not ok:
        return False
    now = timezone.now()
    changes = {"renewed_at": now, "expires_at": now + timedelta(seconds=lease_seconds())}
    if acted:
        changes["acted_at"] = now
    # Conditional on the token: a release or another take that landed since the check is not undone.
    changed = await ControlLease.objects.filter(
        org_id=membership.org_id,
        session_id=session_id,
        membership_id=membership.pk,
        membership_version=membership.version,
        token_hash=hash_token(token),
        expires_at__gt=now,
    ).aupdate(**changes)
    return changed == 1


async def release(membership: Membership, session_id: str) -> bool:
    """Give control back (whichever of the member's windows holds it); whether there was a lease to free."""
    deleted, _ = await ControlLease.objects.filter(
        org_id=membership.org_id, session_id=session_id, membership_id=membership.pk
    ).adelete()
    return bool(deleted)


async def end(org_id: int, session_id: str) -> None:
    """The session ended: nobody drives it any more, nobody asks, nobody watches."""
    await ControlLease.objects.filter(org_id=org_id, session_id=session_id).adelete()
    await ScreenPresence.objects.filter(org_id=org_id, session_id=session_id).adelete()


# Handoff ------------------------------------------------------------------------------------------


def _tell(org_id: int, session_id: str, membership_id: int, notice: str) -> None:
    """Say ``notice`` once to every window of that member on this session (at its next check-in)."""
    ScreenPresence.objects.filter(org_id=org_id, session_id=session_id, membership_id=membership_id).update(
        notice=notice[:300]
    )


def _settled(membership: Membership, session_id: str) -> None:
    """The member drives now: their windows ask for nothing any more."""
    ScreenPresence.objects.filter(
        org_id=membership.org_id, session_id=session_id, membership_id=membership.pk
    ).update(asked_at=None)


def _hand_to(lease: ControlLease, asker: Membership, now: datetime) -> None:
    """The lease becomes ``asker``'s, without a token until their asking window claims it (a take)."""
    lease.holder_id = asker.user_id
    lease.membership_id = asker.pk
    lease.membership_version = asker.version
    lease.token_hash = ""
    lease.acquired_at = lease.renewed_at = now
    lease.acted_at = None
    lease.expires_at = now + timedelta(seconds=lease_seconds())
    lease.save()


def _asker(org_id: int, session_id: str, membership_id: int, now: datetime) -> Membership | None:
    """The member asking for control of this session now (a window that asks and is still there)."""
    asking = ScreenPresence.objects.filter(
        org_id=org_id,
        session_id=session_id,
        membership_id=membership_id,
        asked_at__isnull=False,
        seen_at__gt=now - timedelta(seconds=presence_seconds() * PRESENCE_MISSES),
    )
    if not asking.exists():
        return None
    member = Membership.objects.select_related("user").filter(pk=membership_id, org_id=org_id).first()
    if member is None or not Role.at_least(member.role, Role.OPERATOR) or not member.user.is_active:
        return None
    return member


def _asked_of(
    holder: Membership, session_id: str, membership_id: int, now: datetime
) -> tuple[ControlLease, Membership] | None:
    """Inside a transaction: the holder's lease of this session (locked) and the member asking them for
    control, or None when the holder does not hold it or that member does not ask."""
    lease = _row(holder.org_id, session_id, lock=True)
    if lease is None or not holds(lease, now) or lease.membership_id != holder.pk:
        return None
    asker = _asker(holder.org_id, session_id, membership_id, now)
    return None if asker is None else (lease, asker)


def _grant(holder: Membership, session_id: str, membership_id: int) -> str | None:
    """The holder hands control to the member asking for it: the asker's name, or None when there is
    nothing to grant (the holder does not hold, or that member does not ask)."""
    now = timezone.now()
    with transaction.atomic():
        asked = _asked_of(holder, session_id, membership_id, now)
        if asked is None or asked[1].pk == holder.pk:
            return None
        lease, asker = asked
        _hand_to(lease, asker, now)
        return asker.user.get_username()


async def grant(holder: Membership, session_id: str, membership_id: int) -> str | None:
    return await sync_to_async(_grant)(holder, session_id, membership_id)


def _decline(holder: Membership, session_id: str, membership_id: int) -> str | None:
    now = timezone.now()
    with transaction.atomic():
        asked = _asked_of(holder, session_id, membership_id, now)
        if asked is None:
            return None
        _, asker = asked
        said = f"{holder.user.get_username()} declined your request for control."
        ScreenPresence.objects.filter(
            org_id=holder.org_id, session_id=session_id, membership_id=membership_id
        ).update(asked_at=None, notice=said[:300])
        return asker.user.get_username()


async def decline(holder: Membership, session_id: str, membership_id: int) -> str | None:
    """The holder says no to the member asking: their name (they are told), or None (nothing to decline)."""
    return await sync_to_async(_decline)(holder, session_id, membership_id)


def _ask(membership: Membership, session_id: str, window: str, asking: bool) -> bool:
    now = timezone.now()
    changed = ScreenPresence.objects.filter(
        org_id=membership.org_id, session_id=session_id, window=window, membership_id=membership.pk
    ).update(asked_at=now if asking else None, seen_at=now)
    return changed == 1


async def ask(membership: Membership, session_id: str, window: str, *, asking: bool = True) -> bool:
    """This window asks for control (or, ``asking=False``, no longer does); False when the window has not
    checked in (``check_in`` first)."""
    return await sync_to_async(_ask)(membership, session_id, window, asking)


# Presence -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Watcher:
    username: str
    role: str
    membership_id: int
    windows: int
    asking: bool
    driving: bool


@dataclass(frozen=True)
class Presence:
    """What a window's check-in answers: who drives, who watches, and what this window is told."""

    driver: Driver | None
    watchers: list[Watcher]
    asked_at: datetime | None  # this window asks since
    claim: bool  # control was handed to this member and this window asked: it claims it (a take)
    notice: str  # said to this window once
    auto_granted: str = ""  # the holder the request was granted from by itself (for the audit row)

    @property
    def requests(self) -> list[Watcher]:
        return [w for w in self.watchers if w.asking and not w.driving]


def _check_in(membership: Membership, session_id: str, window: str, create: bool) -> Presence | None:
    now = timezone.now()
    gone = now - timedelta(seconds=presence_seconds() * PRESENCE_MISSES)
    org_id = membership.org_id
    with transaction.atomic():
        ScreenPresence.objects.filter(membership_id=membership.pk, seen_at__lte=gone).delete()
        ScreenPresence.objects.filter(org_id=org_id, session_id=session_id, seen_at__lte=gone).delete()
        mine = ScreenPresence.objects.filter(
            org_id=org_id, session_id=session_id, window=window, membership_id=membership.pk
        ).first()
        if mine is None:
            windows = ScreenPresence.objects.filter(membership_id=membership.pk).count()
            if not create or windows >= MAX_WINDOWS:
                return None
            mine = ScreenPresence.objects.create(
                org_id=org_id,
                session_id=session_id,
                window=window,
                user_id=membership.user_id,
                membership_id=membership.pk,
                seen_at=now,
            )
        notice, mine.notice, mine.seen_at = mine.notice, "", now
        mine.save(update_fields=["notice", "seen_at"])
        lease = _row(org_id, session_id, lock=mine.asked_at is not None)
        auto_granted = ""
        if (
            lease is not None
            and mine.asked_at is not None
            and holds(lease, now)
            and lease.membership_id != membership.pk
            and mine.asked_at <= now - timedelta(seconds=request_seconds())
            and (lease.acted_at or lease.acquired_at) <= now - timedelta(seconds=request_seconds())
            and _asker(org_id, session_id, membership.pk, now) is not None
        ):
            # Unanswered, and the holder idle as long: granted by itself.
            auto_granted = lease.holder.get_username()
            previous = lease.membership_id
            _hand_to(lease, membership, now)
            name = membership.user.get_username()
            _tell(org_id, session_id, previous, f"Control went to {name}: they asked and you were idle.")
            lease = _row(org_id, session_id)
        driver = _driver(lease) if lease is not None and holds(lease, now) else None
        rows = (
            ScreenPresence.objects.filter(org_id=org_id, session_id=session_id, seen_at__gt=gone)
            .select_related("user", "membership")
            .order_by("pk")
        )
        watchers: dict[int, Watcher] = {}
        for row in rows:
            if row.membership.org_id != org_id or row.membership.user_id != row.user_id:
                continue
            seen = watchers.get(row.membership_id)
            watchers[row.membership_id] = Watcher(
                username=row.user.get_username(),
                role=row.membership.role,
                membership_id=row.membership_id,
                windows=(seen.windows if seen else 0) + 1,
                asking=(seen is not None and seen.asking) or row.asked_at is not None,
                driving=driver is not None and driver.membership_id == row.membership_id,
            )
    handed = driver is not None and driver.is_member(membership) and not driver.token_hash
    claim = handed and mine.asked_at is not None
    return Presence(
        driver=driver,
        watchers=list(watchers.values()),
        asked_at=mine.asked_at,
        claim=claim,
        notice=notice,
        auto_granted=auto_granted,
    )


async def check_in(
    membership: Membership, session_id: str, window: str, *, create: bool = True
) -> Presence | None:
    """This window watches the session now (its row made or refreshed; a request of its own granted by
    itself when due): what its pane shows. None when the window is unknown and ``create`` is False, or the
    member already watches from ``MAX_WINDOWS`` windows."""
    return await sync_to_async(_check_in)(membership, session_id, window, create)


async def watching(membership: Membership, session_id: str, window: str) -> bool:
    """Whether this window has checked in already (its row is there)."""
    return await ScreenPresence.objects.filter(
        org_id=membership.org_id, session_id=session_id, window=window, membership_id=membership.pk
    ).aexists()


async def leave(membership: Membership, session_id: str, window: str) -> None:
    """The window closed: it watches no more."""
    await ScreenPresence.objects.filter(
        org_id=membership.org_id, session_id=session_id, window=window, membership_id=membership.pk
    ).adelete()
