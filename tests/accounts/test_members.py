import functools
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from console.accounts.models import AuditLog, Membership, Role
from tests.conftest import make_user

pytestmark = pytest.mark.django_db(transaction=True)


async def test_it_lists_members_for_a_viewer(org, admin, viewer_client):
    response = await viewer_client.get("/o/acme/members/")
    assert response.status_code == 200
    assert b"alice" in response.content
    assert b"Create invite link" not in response.content


async def test_it_changes_a_role(org, admin_client, viewer):
    membership = await Membership.objects.aget(user=viewer, org=org)
    response = await admin_client.post(f"/o/acme/members/{membership.pk}/role/", {"role": "operator"})
    assert response.status_code == 302
    await membership.arefresh_from_db()
    assert membership.role == Role.OPERATOR
    entry = await AuditLog.objects.aget(org=org, action="member.role")
    assert entry.actor_username == "alice"
    assert entry.target_id == "victor"
    assert entry.outcome == "ok"


async def test_it_returns_the_members_partial_with_flash_for_htmx(org, admin_client, viewer):
    membership = await Membership.objects.aget(user=viewer, org=org)
    response = await admin_client.post(
        f"/o/acme/members/{membership.pk}/role/",
        {"role": "operator"},
        headers={"HX-Request": "true", "HX-Target": "members"},
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="members">')
    assert 'id="flash" aria-live="polite" hx-swap-oob="true"' in html
    assert "victor is now operator" in html


async def test_it_refuses_role_changes_to_a_viewer(org, admin, viewer_client):
    membership = await Membership.objects.aget(user=admin, org=org)
    response = await viewer_client.post(f"/o/acme/members/{membership.pk}/role/", {"role": "viewer"})
    assert response.status_code == 403
    await membership.arefresh_from_db()
    assert membership.role == Role.ADMIN
    assert await AuditLog.objects.filter(action="member.role", outcome="denied").aexists()


async def test_it_refuses_removal_to_an_operator(org, viewer, operator_client):
    membership = await Membership.objects.aget(user=viewer, org=org)
    response = await operator_client.post(f"/o/acme/members/{membership.pk}/remove/")
    assert response.status_code == 403
    assert await Membership.objects.filter(pk=membership.pk).aexists()


async def test_it_removes_a_member(org, admin_client, viewer):
    membership = await Membership.objects.aget(user=viewer, org=org)
    response = await admin_client.post(f"/o/acme/members/{membership.pk}/remove/")
    assert response.status_code == 302
    assert not await Membership.objects.filter(pk=membership.pk).aexists()
    assert await AuditLog.objects.filter(action="member.remove", target_id="victor").aexists()


async def test_it_keeps_the_last_admin(org, admin, admin_client):
    membership = await Membership.objects.aget(user=admin, org=org)
    response = await admin_client.post(
        f"/o/acme/members/{membership.pk}/role/", {"role": "viewer"}, follow=True
    )
    assert b"last admin cannot be demoted" in response.content
    response = await admin_client.post(f"/o/acme/members/{membership.pk}/remove/", follow=True)
    assert b"last admin cannot be removed" in response.content
    await membership.arefresh_from_db()
    assert membership.role == Role.ADMIN


async def test_it_demotes_an_admin_when_another_remains(org, admin_client, operator):
    membership = await Membership.objects.aget(user=operator, org=org)
    membership.role = Role.ADMIN
    await membership.asave()
    me = await Membership.objects.aget(org=org, user__username="alice")
    response = await admin_client.post(f"/o/acme/members/{me.pk}/role/", {"role": "operator"})
    assert response.status_code == 302
    await me.arefresh_from_db()
    assert me.role == Role.OPERATOR


async def test_it_gives_404_for_a_member_of_another_org(org, admin_client, outsider, other_org):
    theirs = await Membership.objects.aget(user=outsider, org=other_org)
    response = await admin_client.post(f"/o/acme/members/{theirs.pk}/remove/")
    assert response.status_code == 404
    assert await Membership.objects.filter(pk=theirs.pk, role=Role.ADMIN).aexists()


def at_the_same_moment(*actions):
    """Run each action in its own thread (its own database connection), released together."""
    barrier = threading.Barrier(len(actions))
    failures = []

    def run(action):
        try:
            barrier.wait()
            action()
        except Exception as exc:  # reported below, with the round it happened in
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures


def two_admins(org) -> dict[str, tuple[Membership, Client]]:
    """alice and bob, both admins of org again (a round may have demoted or removed either)."""
    cast = {}
    for username in ("alice", "bob"):
        user = get_user_model().objects.filter(username=username).first() or make_user(username)
        membership, _ = Membership.objects.update_or_create(user=user, org=org, defaults={"role": Role.ADMIN})
        client = Client()
        client.force_login(user, backend="console.accounts.backends.UsernameOrEmailBackend")
        cast[username] = (membership, client)
    return cast


ROUNDS = 8


@pytest.mark.parametrize("action", ["role", "remove"])
def test_it_keeps_an_admin_when_two_admins_demote_or_remove_each_other_at_once(org, action):
    data = {"role": "viewer"} if action == "role" else {}
    for round_ in range(ROUNDS):
        cast = two_admins(org)
        (alice, alice_client), (bob, bob_client) = cast["alice"], cast["bob"]
        at_the_same_moment(
            functools.partial(alice_client.post, f"/o/acme/members/{bob.pk}/{action}/", data),
            functools.partial(bob_client.post, f"/o/acme/members/{alice.pk}/{action}/", data),
        )
        admins = Membership.objects.filter(org=org, role=Role.ADMIN).count()
        assert admins == 1, f"round {round_}: {admins} admins left"
