"""The control lease of a session's screen (console/live/control.py), straight against the database: two
operators taking it at the same instant, from two connections (two console processes would be the same),
on SQLite and on PostgreSQL (``TEST_DB=postgres``)."""

from __future__ import annotations

import functools
import threading

from asgiref.sync import async_to_sync
from django.db import connection

from console.accounts.models import ControlLease, Membership, Role
from console.live import control
from tests.conftest import make_user

ROUNDS = 8


def at_the_same_moment(*actions) -> list:
    """Run each action in its own thread (its own database connection), released together; their results."""
    barrier = threading.Barrier(len(actions))
    results: list = [None] * len(actions)
    failures = []

    def run(index, action):
        try:
            barrier.wait()
            results[index] = action()
        except Exception as exc:  # reported below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(actions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    return results


def test_it_gives_control_to_exactly_one_of_two_operators_taking_it_at_once(org):
    users = [make_user(name) for name in ("ann", "ben")]
    members = [Membership.objects.create(user=user, org=org, role=Role.OPERATOR) for user in users]
    for round_ in range(ROUNDS):
        session_id = f"s{round_}"
        first, second = at_the_same_moment(
            *(functools.partial(control._take, m, session_id, force=False) for m in members)
        )
        tokens = [taken.token for taken in (first, second) if taken.token]
        assert len(tokens) == 1, f"round {round_}: {len(tokens)} drivers"
        loser = second if first.token else first
        lease = ControlLease.objects.select_related("holder").get(org=org, session_id=session_id)
        assert loser.driver is not None and loser.driver.username == lease.holder.username
        assert lease.token_hash != tokens[0] and len(lease.token_hash) == 64  # only its hash is kept


def test_it_never_brings_back_a_lease_released_while_a_renewal_was_on_its_way(org):
    member = Membership.objects.create(user=make_user("cat"), org=org, role=Role.OPERATOR)
    for round_ in range(ROUNDS):
        session_id = f"r{round_}"
        token = control._take(member, session_id, force=False).token
        at_the_same_moment(
            functools.partial(async_to_sync(control.renew), member, session_id, token),
            functools.partial(async_to_sync(control.release), member, session_id),
        )
        assert not ControlLease.objects.filter(session_id=session_id).exists(), f"round {round_}"


# Handoff and presence: the rules, straight against the database ----------------------------------


def members(org, *names_roles):
    return [Membership.objects.create(user=make_user(name), org=org, role=role) for name, role in names_roles]


check_in = async_to_sync(control.check_in)


def test_it_grants_only_from_the_holder_to_a_member_asking_and_still_there(org):
    holder, asker, other = members(org, ("hal", Role.OPERATOR), ("ada", Role.OPERATOR), ("bob", Role.ADMIN))
    control._take(holder, "g", force=False)
    check_in(asker, "g", "window-ada-1")
    assert control._grant(holder, "g", asker.pk) is None  # ada does not ask
    async_to_sync(control.ask)(asker, "g", "window-ada-1")
    assert control._grant(other, "g", asker.pk) is None  # bob does not hold it
    assert control._decline(other, "g", asker.pk) is None
    assert control._grant(holder, "g", asker.pk) == "ada"
    lease = ControlLease.objects.get(session_id="g")
    assert lease.membership_id == asker.pk and lease.token_hash == ""  # hers, not claimed yet
    seen = check_in(asker, "g", "window-ada-1")
    assert seen.claim and seen.driver.username == "ada"
    assert control._take(asker, "g", force=False).token  # the claim
    assert not check_in(asker, "g", "window-ada-1").claim  # and she asks for nothing any more


def test_it_never_hands_control_to_a_request_whose_window_went_quiet_or_a_demoted_member(org):
    from datetime import timedelta

    from django.utils import timezone

    from console.accounts.models import ScreenPresence

    holder, asker = members(org, ("hal", Role.OPERATOR), ("ada", Role.OPERATOR))
    control._take(holder, "q", force=False)
    check_in(asker, "q", "window-ada-1")
    async_to_sync(control.ask)(asker, "q", "window-ada-1")
    ScreenPresence.objects.filter(session_id="q").update(seen_at=timezone.now() - timedelta(minutes=5))
    assert control._grant(holder, "q", asker.pk) is None
    check_in(asker, "q", "window-ada-1")  # back, but no longer asking (the quiet window was forgotten)
    async_to_sync(control.ask)(asker, "q", "window-ada-1")
    Membership.objects.filter(pk=asker.pk).update(role=Role.VIEWER)
    assert control._grant(holder, "q", asker.pk) is None


def test_it_grants_an_unanswered_request_by_itself_only_when_the_holder_idled_as_long(org, settings):
    from datetime import timedelta

    from django.utils import timezone

    from console.accounts.models import ScreenPresence

    settings.SCREEN_CONTROL_REQUEST_SECONDS = 30
    holder, asker = members(org, ("hal", Role.OPERATOR), ("ada", Role.OPERATOR))
    control._take(holder, "i", force=False)
    check_in(asker, "i", "window-ada-1")
    async_to_sync(control.ask)(asker, "i", "window-ada-1")
    now = timezone.now()
    assert not check_in(asker, "i", "window-ada-1").claim  # asked just now
    ScreenPresence.objects.filter(session_id="i").update(asked_at=now - timedelta(seconds=31))
    ControlLease.objects.filter(session_id="i").update(acquired_at=now - timedelta(seconds=31), acted_at=now)
    assert not check_in(asker, "i", "window-ada-1").claim  # the holder acted a moment ago
    ControlLease.objects.filter(session_id="i").update(acted_at=now - timedelta(seconds=31))
    seen = check_in(asker, "i", "window-ada-1")
    assert seen.claim and seen.auto_granted == "hal"


def test_it_counts_each_member_once_with_their_role_and_bounds_their_windows(org):
    ada, vic = members(org, ("ada", Role.OPERATOR), ("vic", Role.VIEWER))
    for n in range(3):
        check_in(ada, "w", f"window-ada-{n}")
    seen = check_in(vic, "w", "window-vic-1")
    assert [(w.username, w.role, w.windows) for w in seen.watchers] == [
        ("ada", "operator", 3),
        ("vic", "viewer", 1),
    ]
    for n in range(3, control.MAX_WINDOWS):
        assert check_in(ada, f"s{n}", f"window-ada-{n}") is not None
    assert check_in(ada, "more", "window-ada-more") is None  # twenty windows at once is the most
    Membership.objects.filter(pk=ada.pk).delete()  # a member removed watches nothing any more
    assert [w.username for w in check_in(vic, "w", "window-vic-1").watchers] == ["vic"]
    async_to_sync(control.end)(org.pk, "w")
    assert check_in(vic, "w", "window-vic-1", create=False) is None
