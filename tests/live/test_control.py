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
