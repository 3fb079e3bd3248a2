"""Refusals in the audit log: a member cannot flood it (audit.deny, the members page's changes).

The outside audit's finding: a viewer's 300 refused role changes in 1.8 s wrote 300 rows.
"""

import asyncio
import functools
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db.models import F
from django.test import Client

from console.accounts.audit import THROTTLED
from console.accounts.models import AuditLog, Membership, RefusalCounter
from tests.accounts.test_members import at_the_same_moment
from tests.conftest import make_client
from tests.web.html_check import problems

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def limit(settings):
    settings.REFUSAL_LIMIT = 30
    settings.REFUSAL_WINDOW_SECONDS = 60
    settings.REFUSAL_COLLAPSE_SECONDS = 600
    return settings


async def member_pk(org, user) -> int:
    return (await Membership.objects.aget(org=org, user=user)).pk


async def change_role(client, member: int):
    return await client.post(f"/o/acme/members/{member}/role/", {"role": "viewer"})


async def remove(client, member: int):
    return await client.post(f"/o/acme/members/{member}/remove/")


async def refusals() -> dict[tuple[str, str, str], int]:
    """Every refusal row: {(actor, action, target): count}."""
    rows = AuditLog.objects.filter(outcome="denied").order_by("pk")
    found = {}
    async for row in rows:
        key = (row.actor_username, row.action, row.target_id)
        assert key not in found, f"two rows for {key}"
        found[key] = row.count
    return found


async def test_it_writes_300_refused_role_changes_as_one_row_and_answers_429_past_the_limit(
    org, admin, viewer_client, limit
):
    alice = await member_pk(org, admin)
    responses = [await change_role(viewer_client, alice) for _ in range(300)]
    assert [r.status_code for r in responses] == [403] * 30 + [429] * 270
    assert await refusals() == {("victor", "member.role", str(alice)): 300}
    row = await AuditLog.objects.aget(outcome="denied")
    assert row.last_at > row.created_at
    throttled = responses[-1]
    assert "Too many refused attempts" in throttled.content.decode()
    assert problems(throttled.content.decode()) == []
    assert 1 <= int(throttled["Retry-After"]) <= 60
    assert not await Membership.objects.filter(pk=alice, role="viewer").aexists()


async def test_it_writes_the_first_refusal_at_once(org, admin, viewer_client, limit):
    alice = await member_pk(org, admin)
    assert (await change_role(viewer_client, alice)).status_code == 403
    row = await AuditLog.objects.aget(outcome="denied")
    assert (row.count, row.last_at, row.actor_username) == (1, None, "victor")


async def test_it_gives_each_action_and_target_its_own_row(org, admin, operator, viewer_client, limit):
    alice, oscar = await member_pk(org, admin), await member_pk(org, operator)
    for _ in range(3):
        await change_role(viewer_client, alice)
    for _ in range(2):
        await change_role(viewer_client, oscar)
    await remove(viewer_client, alice)
    await viewer_client.post("/o/acme/members/invite/", {"email": "mallory@example.com", "role": "admin"})
    assert await refusals() == {
        ("victor", "member.role", str(alice)): 3,
        ("victor", "member.role", str(oscar)): 2,
        ("victor", "member.remove", str(alice)): 1,
        ("victor", "member.invite", ""): 1,
    }


async def test_it_counts_a_throttled_members_refusals_of_anything_new_on_one_row(
    org, admin, operator, viewer_client, limit
):
    limit.REFUSAL_LIMIT = 3
    alice, oscar = await member_pk(org, admin), await member_pk(org, operator)
    assert [(await change_role(viewer_client, alice)).status_code for _ in range(3)] == [403] * 3
    assert (await change_role(viewer_client, oscar)).status_code == 429
    assert (await remove(viewer_client, oscar)).status_code == 429
    assert (await change_role(viewer_client, alice)).status_code == 429
    # The refusal that had a row keeps counting there; anything new is counted on one row, not a row each.
    assert await refusals() == {
        ("victor", "member.role", str(alice)): 4,
        ("victor", THROTTLED, ""): 2,
    }
    throttled = await AuditLog.objects.aget(action=THROTTLED)
    assert "answered 429" in throttled.detail and f"first: member.role {oscar}" in throttled.detail


async def test_it_throttles_only_the_member_who_was_refused(
    org, admin, operator_client, viewer_client, limit
):
    limit.REFUSAL_LIMIT = 3
    alice = await member_pk(org, admin)
    for _ in range(4):
        await change_role(viewer_client, alice)
    assert (await change_role(viewer_client, alice)).status_code == 429
    # Another member is refused as usual, on a row of their own; the throttled one still reads.
    assert (await change_role(operator_client, alice)).status_code == 403
    assert (await viewer_client.get("/o/acme/members/")).status_code == 200
    assert await refusals() == {
        ("victor", "member.role", str(alice)): 5,
        ("oscar", "member.role", str(alice)): 1,
    }


async def test_it_lets_a_member_try_again_once_the_window_ends_and_starts_a_new_row_after_the_collapse_window(
    org, admin, viewer, viewer_client, limit
):
    limit.REFUSAL_LIMIT = 2
    alice = await member_pk(org, admin)
    for _ in range(2):
        await change_role(viewer_client, alice)
    assert (await change_role(viewer_client, alice)).status_code == 429
    # The window began a minute ago: refusals are 403 again, still counted on the same row.
    await RefusalCounter.objects.filter(user=viewer).aupdate(
        window_start=F("window_start") - timedelta(seconds=60)
    )
    assert (await change_role(viewer_client, alice)).status_code == 403
    assert await refusals() == {("victor", "member.role", str(alice)): 4}
    # The row began ten minutes ago: the next refusal starts a row of its own.
    await AuditLog.objects.aupdate(created_at=F("created_at") - timedelta(seconds=600))
    assert (await change_role(viewer_client, alice)).status_code == 403
    counts = [row.count async for row in AuditLog.objects.filter(outcome="denied").order_by("pk")]
    assert counts == [4, 1]


async def test_it_shows_how_many_times_and_when_last_on_the_audit_page(
    org, admin, admin_client, viewer_client, limit
):
    alice = await member_pk(org, admin)
    for _ in range(3):
        await change_role(viewer_client, alice)
    row = await AuditLog.objects.aget(outcome="denied")
    html = (await admin_client.get("/o/acme/audit/")).content.decode()
    assert problems(html) == []
    assert f"\N{MULTIPLICATION SIGN}3, last at {row.last_at:%Y-%m-%d %H:%M:%S}" in html
    overview = await admin_client.get("/o/acme/?part=card-audit", headers={"HX-Request": "true"})
    assert f"\N{MULTIPLICATION SIGN}3, last at {row.last_at:%H:%M:%S}" in overview.content.decode()


async def test_it_loses_no_count_when_refusals_arrive_at_once(org, admin, viewer, limit):
    limit.REFUSAL_LIMIT = 1000
    alice = await member_pk(org, admin)
    clients = [await sync_to_async(make_client)(viewer) for _ in range(8)]
    responses = await asyncio.gather(*(change_role(c, alice) for c in clients for _ in range(5)))
    assert {r.status_code for r in responses} == {403}
    assert await refusals() == {("victor", "member.role", str(alice)): 40}
    assert (await RefusalCounter.objects.aget(user=viewer)).count == 40


def test_it_loses_no_count_when_processes_refuse_at_once(org, admin, viewer, limit):
    """Threads with a database connection each: what several console replicas do to one database."""
    limit.REFUSAL_LIMIT = 15
    alice = Membership.objects.get(org=org, user=admin).pk
    clients = []
    for _ in range(6):
        client = Client()
        client.force_login(viewer, backend="console.accounts.backends.UsernameOrEmailBackend")
        clients.append(client)
    statuses = []

    def refuse_five(client):
        for _ in range(5):
            statuses.append(client.post(f"/o/acme/members/{alice}/role/", {"role": "viewer"}).status_code)

    at_the_same_moment(*(functools.partial(refuse_five, c) for c in clients))
    assert sorted(statuses) == [403] * 15 + [429] * 15
    rows = list(AuditLog.objects.filter(outcome="denied"))
    assert [(r.action, r.target_id, r.count) for r in rows] == [("member.role", str(alice), 30)]
    assert RefusalCounter.objects.get(user=viewer).count == 30
