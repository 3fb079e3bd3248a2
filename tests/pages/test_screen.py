"""The screen pane of a session: its mode, its stream, control and input (console/browsers/panes/screen.py).

The test sandbox runs simulated sessions, whose CDP endpoint refuses connections: the pane falls back to
screenshots through the console, and the stream says the relay is unavailable. Real frames:
tests/browser/test_screen.py. Control is a lease in the database (console/live/control.py).
"""

import json

import pytest
from websockets.asyncio.server import serve

from console.accounts.models import AuditLog, ControlLease, Membership, Role
from tests.live.test_tabs import Browser as TabbedBrowser
from tests.sandbox_fixtures import create_session as create


def url(sid, path=""):
    return f"/o/acme/browsers/{sid}/screen/{path}"


def computer_calls(tenant):
    return [r for r in tenant.requests() if "/computer/" in r["path"]]


async def take(client, sid) -> str:
    response = await client.post(url(sid, "control/"), {"action": "take"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    token = response.content.decode().split('data-control-token="')[1].split('"')[0]
    assert len(token) > 20
    return token


async def read_stream(response, until: bytes, limit: int = 50) -> bytes:
    seen = b""
    async for chunk in response.streaming_content:
        seen += chunk
        if until in seen or limit == 0:
            break
        limit -= 1
    await response.streaming_content.aclose()
    return seen


# Pane ----------------------------------------------------------------------------------------------


async def test_it_shows_screenshots_through_the_console_for_a_session_it_cannot_relay(operator_client, quiet):
    session = create(quiet, name="sim")
    sid = session["session_id"]
    body = (await operator_client.get(url(sid))).content.decode()
    assert 'data-mode="snapshots"' in body and "simulated" in body
    assert f'data-snapshot-url="/o/acme/browsers/{sid}/computer/screenshot.png"' in body
    assert "_sandbox/live" not in body and "jwt" not in body and "<iframe" not in body
    shot = await operator_client.get(f"/o/acme/browsers/{sid}/computer/screenshot.png")
    assert shot.status_code == 200 and shot["Content-Type"] == "image/png"


async def test_it_chooses_the_relay_when_the_session_has_a_usable_cdp_url(viewer_client, quiet):
    session = create(quiet, name="real")
    sid = session["session_id"]
    planted = {"cdp_ws_url": f"{quiet.url.replace('http', 'ws')}/_sandbox/cdp/{sid}?jwt=planted-jwt-123"}
    quiet.fault(method="GET", path=f"^/browsers/{sid}$", fields={**planted, "sandbox": {}}, count=None)
    body = (await viewer_client.get(url(sid))).content.decode()
    assert 'data-mode="relay"' in body and f'data-stream-url="/o/acme/browsers/{sid}/screen/stream/"' in body
    assert "planted-jwt-123" not in body and "/_sandbox/cdp/" not in body
    assert "Take control" not in body and "viewers cannot act" in body
    page = (await viewer_client.get(f"/o/acme/browsers/{sid}/", {"wait": "1"})).content.decode()
    assert "planted-jwt-123" not in page and "/_sandbox/cdp/" not in page


async def test_it_falls_back_when_the_cdp_url_points_somewhere_it_may_not_go(operator_client, quiet):
    session = create(quiet, name="metadata")
    sid = session["session_id"]
    planted = {"cdp_ws_url": "ws://169.254.169.254/latest?jwt=x", "sandbox": {}}
    quiet.fault(method="GET", path=f"^/browsers/{sid}$", fields=planted, count=None)
    body = (await operator_client.get(url(sid))).content.decode()
    assert 'data-mode="snapshots"' in body and "link-local" in body


async def test_it_says_an_ended_session_has_no_screen(viewer_client, quiet):
    session = create(quiet, name="gone")
    quiet.call("DELETE", f"/browsers/{session['session_id']}")
    body = (await viewer_client.get(url(session["session_id"]))).content.decode()
    assert 'data-mode="none"' in body and "The session has ended." in body


async def test_it_answers_404_for_another_orgs_session(operator_client, other_tenant):
    theirs = create(other_tenant, name="theirs")["session_id"]
    assert (await operator_client.get(url(theirs))).status_code == 404
    assert (await operator_client.get(url(theirs, "stream/"))).status_code == 404
    assert (await operator_client.post(url(theirs, "control/"), {"action": "take"})).status_code == 404
    assert (await operator_client.post(url(theirs, "input/"), {"kind": "click"})).status_code == 404


# Stream --------------------------------------------------------------------------------------------


async def test_it_streams_that_the_relay_is_unavailable_when_the_endpoint_refuses(viewer_client, quiet):
    session = create(quiet, name="refused")
    sid = session["session_id"]
    # The sandbox's CDP endpoint, which refuses a simulated session (HTTP 403).
    planted = {"cdp_ws_url": f"{quiet.url.replace('http', 'ws')}/_sandbox/cdp/{sid}?jwt=planted-jwt-123"}
    quiet.fault(method="GET", path=f"^/browsers/{sid}$", fields=planted, count=None)
    response = await viewer_client.get(url(sid, "stream/"))
    assert response["Content-Type"] == "text/event-stream"
    seen = await read_stream(response, b'"unavailable"')
    status = next(json.loads(line[6:]) for line in seen.decode().splitlines() if '"unavailable"' in line)
    assert status["s"] == sid and "refused the connection (HTTP 403)" in status["message"]
    assert "jwt" not in seen.decode() and "_sandbox" not in seen.decode()


async def test_it_streams_that_a_cdp_url_it_cannot_resolve_is_unavailable(viewer_client, quiet):
    sid = create(quiet, name="nowhere")["session_id"]  # simulated: its cdp_ws_url names no real host
    seen = await read_stream(await viewer_client.get(url(sid, "stream/")), b'"unavailable"')
    assert b"could not be resolved" in seen


# Control and input ---------------------------------------------------------------------------------


async def test_it_refuses_input_from_a_viewer(viewer_client, quiet):
    sid = create(quiet, name="watch")["session_id"]
    response = await viewer_client.post(url(sid, "input/"), {"kind": "click", "x": 10, "y": 10})
    assert response.status_code == 403
    assert (await viewer_client.post(url(sid, "control/"), {"action": "take"})).status_code == 403
    assert computer_calls(quiet) == []


async def test_it_refuses_input_until_the_operator_takes_control(operator_client, quiet):
    sid = create(quiet, name="careful")["session_id"]
    response = await operator_client.post(url(sid, "input/"), {"kind": "click", "x": 10, "y": 10})
    assert response.status_code == 409 and "Take control" in response.content.decode()
    token = await take(operator_client, sid)
    wrong = await operator_client.post(
        url(sid, "input/"), {"kind": "click", "x": 10, "y": 10}, headers={"X-Screen-Control": "guess"}
    )
    assert wrong.status_code == 409
    assert computer_calls(quiet) == []
    ok = await operator_client.post(
        url(sid, "input/"), {"kind": "click", "x": 10, "y": 10}, headers={"X-Screen-Control": token}
    )
    assert ok.status_code == 204
    assert [r["path"] for r in computer_calls(quiet)] == [f"/browsers/{sid}/computer/click_mouse"]


async def test_it_sends_each_kind_of_input_as_a_computer_action(operator_client, quiet):
    sid = create(quiet, name="drive", viewport={"width": 1024, "height": 768})["session_id"]
    token = await take(operator_client, sid)
    headers = {"X-Screen-Control": token}
    for fields in (
        {"kind": "dblclick", "x": 5, "y": 6},
        {"kind": "rightclick", "x": 1023, "y": 767},
        {"kind": "scroll", "x": 100, "y": 100, "dx": 0, "dy": 240},
        {"kind": "type", "text": "hunter2 secret"},
        {"kind": "keys", "keys": "Ctrl+a Return"},
        {"kind": "keys", "keys": "Ctrl+Alt+@ x Shift+Tab"},  # AltGr+Q on a German keyboard is Ctrl+Alt
    ):
        response = await operator_client.post(url(sid, "input/"), fields, headers=headers)
        assert response.status_code == 204, (fields, response.content)
    paths = [r["path"].rsplit("/", 1)[1] for r in computer_calls(quiet)]
    assert paths == ["click_mouse", "click_mouse", "scroll", "type", "press_key", "press_key"]
    details = [a.detail async for a in AuditLog.objects.filter(action="browser.screen.input").order_by("pk")]
    assert details[0] == "dblclick at (5, 6)" and details[3] == "typed 14 characters"
    assert details[4] == "pressed Ctrl+a Return"
    assert details[5] == "pressed a character a character Shift+Tab"  # never the @ of a password
    assert not [d async for d in AuditLog.objects.filter(detail__contains="hunter2").values_list("detail")]


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "click", "x": 640, "y": 10},  # outside a 640-wide viewport
        {"kind": "click", "x": -1, "y": 10},
        {"kind": "click", "x": "ten", "y": 10},
        {"kind": "scroll", "x": 1, "y": 1, "dx": 0, "dy": 0},
        {"kind": "scroll", "x": 1, "y": 1, "dx": 0, "dy": 99999},
        {"kind": "type", "text": ""},
        {"kind": "type", "text": "a\x1b[2J"},
        {"kind": "keys", "keys": "Ctrl+NotAKey"},
        {"kind": "keys", "keys": ""},
        {"kind": "drag"},
    ],
)
async def test_it_refuses_bad_input_and_sends_nothing(operator_client, quiet, fields):
    sid = create(quiet, name="strict", viewport={"width": 640, "height": 480})["session_id"]
    token = await take(operator_client, sid)
    response = await operator_client.post(url(sid, "input/"), fields, headers={"X-Screen-Control": token})
    assert response.status_code == 400 and "Nothing was sent" in response.content.decode()
    assert computer_calls(quiet) == []
    assert not await AuditLog.objects.filter(action="browser.screen.input").aexists()


async def test_it_audits_taking_and_releasing_control_and_refuses_input_after_release(operator_client, quiet):
    sid = create(quiet, name="handover")["session_id"]
    token = await take(operator_client, sid)
    released = await operator_client.post(url(sid, "control/"), {"action": "release"})
    assert released.status_code == 302
    response = await operator_client.post(
        url(sid, "input/"), {"kind": "click", "x": 1, "y": 1}, headers={"X-Screen-Control": token}
    )
    assert response.status_code == 409 and computer_calls(quiet) == []
    rows = [a.detail async for a in AuditLog.objects.filter(action="browser.screen.control").order_by("pk")]
    assert rows == ["took control of the screen", "released control of the screen"]


async def test_it_keeps_control_to_the_session_it_was_taken_for(operator_client, quiet):
    first = create(quiet, name="one")["session_id"]
    second = create(quiet, name="two")["session_id"]
    token = await take(operator_client, first)
    response = await operator_client.post(
        url(second, "input/"), {"kind": "click", "x": 1, "y": 1}, headers={"X-Screen-Control": token}
    )
    assert response.status_code == 409 and computer_calls(quiet) == []


async def test_it_keeps_typed_text_out_of_the_audit_log_when_the_service_quotes_it(operator_client, quiet):
    sid = create(quiet, name="echo")["session_id"]
    token = await take(operator_client, sid)
    quiet.control(
        "POST",
        "faults",
        {
            "path": ".*/computer/type",
            "status": 400,
            "code": "invalid",
            "message": "cannot type hunter2 secret",
        },
    )
    response = await operator_client.post(
        url(sid, "input/"), {"kind": "type", "text": "hunter2 secret"}, headers={"X-Screen-Control": token}
    )
    assert response.status_code == 400
    assert [r["path"].rsplit("/", 1)[1] for r in computer_calls(quiet)] == ["type"]
    rows = [a.detail async for a in AuditLog.objects.filter(action="browser.screen.input")]
    assert len(rows) == 1 and rows[0].startswith("typed 14 characters")
    assert "hunter2" not in rows[0] and "hunter2" not in response.content.decode()


async def test_it_keeps_control_released_while_an_action_was_on_its_way(operator_client, quiet):
    """An action sent just before "Release" (typed text flushed, a click) answers after it: renewing
    control then must not bring back the token the release dropped (the request's copy of the Django
    session, read before the release, was saved over it)."""
    import asyncio

    sid = create(quiet, name="late")["session_id"]
    token = await take(operator_client, sid)
    quiet.fault(method="POST", path=f"^/browsers/{sid}/computer/click_mouse$", delay_response_ms=1500)
    headers = {"X-Screen-Control": token}
    late = asyncio.create_task(
        operator_client.post(url(sid, "input/"), {"kind": "click", "x": 37, "y": 41}, headers=headers)
    )
    where = f"/browsers/{sid}/computer/get_mouse_position"
    for _ in range(200):  # until the service clicked; its answer is on its way
        if quiet.call("POST", where).json() == {"x": 37, "y": 41}:
            break
        await asyncio.sleep(0.05)
    released = await operator_client.post(url(sid, "control/"), {"action": "release"})
    assert released.status_code == 302 and not late.done()
    assert (await late).status_code == 204
    after = await operator_client.post(url(sid, "input/"), {"kind": "click", "x": 2, "y": 2}, headers=headers)
    assert after.status_code == 409
    assert [r["path"] for r in computer_calls(quiet)].count(f"/browsers/{sid}/computer/click_mouse") == 1


async def test_it_renews_control_with_each_action_and_while_the_pane_is_open(operator_client, quiet):
    from datetime import timedelta

    from django.utils import timezone

    from console.live import control

    sid = create(quiet, name="renew")["session_id"]
    token = await take(operator_client, sid)
    soon = timezone.now() + timedelta(seconds=5)  # nearly expired
    await ControlLease.objects.filter(session_id=sid).aupdate(expires_at=soon)
    response = await operator_client.post(
        url(sid, "input/"), {"kind": "click", "x": 1, "y": 1}, headers={"X-Screen-Control": token}
    )
    assert response.status_code == 204
    lease = await ControlLease.objects.aget(session_id=sid)
    assert lease.expires_at > timezone.now() + timedelta(seconds=control.lease_seconds() - 30)
    # The pane's heartbeat renews it too, with the token only.
    await ControlLease.objects.filter(session_id=sid).aupdate(expires_at=soon)
    beat = await operator_client.post(
        url(sid, "control/"), {"action": "renew"}, headers={"X-Screen-Control": token}
    )
    assert beat.status_code == 204
    assert (await ControlLease.objects.aget(session_id=sid)).expires_at > soon
    wrong = await operator_client.post(
        url(sid, "control/"), {"action": "renew"}, headers={"X-Screen-Control": "x"}
    )
    assert wrong.status_code == 409
    # Renewals are not audited: only the take.
    assert await AuditLog.objects.filter(action="browser.screen.control").acount() == 1


async def test_it_keeps_control_to_the_org_it_was_taken_in(operator, operator_client, quiet):
    """The same session id under another org of the same member (both orgs on one service key): control
    taken in one is not control in the other."""
    from asgiref.sync import sync_to_async

    from console.accounts.models import Organization

    def twin():
        other = Organization(name="Acme twin", slug="acme-twin", service_base_url=quiet.url)
        other.set_api_key(quiet.api_key)
        other.save()
        Membership.objects.create(user=operator, org=other, role=Role.OPERATOR)

    await sync_to_async(twin)()
    sid = create(quiet, name="shared")["session_id"]
    token = await take(operator_client, sid)
    response = await operator_client.post(
        f"/o/acme-twin/browsers/{sid}/screen/input/",
        {"kind": "click", "x": 1, "y": 1},
        headers={"X-Screen-Control": token},
    )
    assert response.status_code == 409 and computer_calls(quiet) == []


async def test_it_refuses_input_without_the_csrf_token(operator, quiet):
    from django.test import AsyncClient

    client = AsyncClient(enforce_csrf_checks=True)
    await client.aforce_login(operator, backend="console.accounts.backends.UsernameOrEmailBackend")
    sid = create(quiet, name="forged")["session_id"]
    for path, fields in (("control/", {"action": "take"}), ("input/", {"kind": "click", "x": 1, "y": 1})):
        assert (await client.post(url(sid, path), fields)).status_code == 403
    assert computer_calls(quiet) == []
    assert not await AuditLog.objects.filter(action__startswith="browser.screen").aexists()


async def test_it_takes_no_input_once_the_session_was_deleted(operator_client, quiet):
    sid = create(quiet, name="gone-soon")["session_id"]
    token = await take(operator_client, sid)
    quiet.call("DELETE", f"/browsers/{sid}")
    response = await operator_client.post(
        url(sid, "input/"), {"kind": "type", "text": "late"}, headers={"X-Screen-Control": token}
    )
    assert response.status_code == 409 and "ended" in response.content.decode()
    assert (await operator_client.post(url(sid, "control/"), {"action": "take"})).status_code == 409
    assert computer_calls(quiet) == []
    assert not await AuditLog.objects.filter(action="browser.screen.input").aexists()


async def test_it_refuses_a_control_token_that_is_not_ascii_as_a_wrong_one(operator_client, quiet):
    """``secrets.compare_digest`` raises on a str with non-ASCII characters: a token sent as ``é`` (a header
    read as Latin-1, or the form field) was a 500 for an operator holding control, not a refusal."""
    sid = create(quiet, name="accents")["session_id"]
    await take(operator_client, sid)
    for sent in ({"headers": {"X-Screen-Control": "é"}}, {"data": {"control": "clé"}}):
        fields = {"kind": "click", "x": 1, "y": 1, **sent.pop("data", {})}
        response = await operator_client.post(url(sid, "input/"), fields, **sent)
        assert response.status_code == 409 and "Take control" in response.content.decode()
    assert computer_calls(quiet) == []


# One driver at a time (the control lease) ----------------------------------------------------------


async def test_it_lets_one_operator_drive_at_a_time_and_tells_the_others_who(
    operator_client, admin_client, viewer_client, quiet
):
    """Control lived in each user's own Django session: two operators could both take it, and both drove."""
    sid = create(quiet, name="one-driver")["session_id"]
    token = await take(operator_client, sid)
    second = await admin_client.post(url(sid, "control/"), {"action": "take"}, headers={"HX-Request": "true"})
    body = second.content.decode()
    assert "oscar took control first" in body and "oscar is driving" in body
    assert "data-control-token" not in body and "Take control" not in body
    plain = await admin_client.post(url(sid, "control/"), {"action": "take"})
    assert plain.status_code == 409 and "oscar is driving" in plain.content.decode()
    for sent in ({}, {"X-Screen-Control": token}):  # not even with the holder's token
        refused = await admin_client.post(url(sid, "input/"), {"kind": "click", "x": 1, "y": 1}, headers=sent)
        assert refused.status_code == 409 and "oscar is driving" in refused.content.decode()
    assert computer_calls(quiet) == []
    watching = (await viewer_client.get(url(sid))).content.decode()
    assert "oscar is driving" in watching
    rows = [a.actor_username async for a in AuditLog.objects.filter(action="browser.screen.control")]
    assert rows == ["oscar"]
    ok = await operator_client.post(
        url(sid, "input/"), {"kind": "click", "x": 1, "y": 1}, headers={"X-Screen-Control": token}
    )
    assert ok.status_code == 204


async def test_it_ends_control_at_a_demote_even_one_undone_since(operator, operator_client, quiet):
    """A token taken as operator survived a demote and re-promote within its 10 minutes."""
    sid = create(quiet, name="demoted")["session_id"]
    token = await take(operator_client, sid)
    await Membership.objects.filter(user=operator).aupdate(role=Role.VIEWER)
    await Membership.objects.filter(user=operator).aupdate(role=Role.OPERATOR)
    response = await operator_client.post(
        url(sid, "input/"), {"kind": "click", "x": 1, "y": 1}, headers={"X-Screen-Control": token}
    )
    assert response.status_code == 409 and "Take control" in response.content.decode()
    assert computer_calls(quiet) == []
    # The same through a save (Django admin): a changed role is a new version of the membership.
    token = await take(operator_client, sid)
    membership = await Membership.objects.aget(user=operator)
    membership.role = Role.ADMIN
    await membership.asave()
    response = await operator_client.post(
        url(sid, "input/"), {"kind": "click", "x": 1, "y": 1}, headers={"X-Screen-Control": token}
    )
    assert response.status_code == 409 and computer_calls(quiet) == []


async def test_it_ends_control_when_the_member_is_removed_and_added_again(
    operator, org, operator_client, quiet
):
    sid = create(quiet, name="removed")["session_id"]
    token = await take(operator_client, sid)
    await Membership.objects.filter(user=operator).adelete()
    assert not await ControlLease.objects.filter(session_id=sid).aexists()  # the lease went with it
    await Membership.objects.acreate(user=operator, org=org, role=Role.OPERATOR)
    response = await operator_client.post(
        url(sid, "input/"), {"kind": "click", "x": 1, "y": 1}, headers={"X-Screen-Control": token}
    )
    assert response.status_code == 409 and computer_calls(quiet) == []


async def test_it_frees_control_once_it_expired_and_says_whose_lapsed(operator_client, admin_client, quiet):
    from datetime import timedelta

    from django.utils import timezone

    sid = create(quiet, name="lapsed")["session_id"]
    token = await take(operator_client, sid)
    await ControlLease.objects.filter(session_id=sid).aupdate(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    late = await operator_client.post(
        url(sid, "input/"), {"kind": "click", "x": 1, "y": 1}, headers={"X-Screen-Control": token}
    )
    assert late.status_code == 409
    beat = await operator_client.post(
        url(sid, "control/"), {"action": "renew"}, headers={"X-Screen-Control": token}
    )
    assert beat.status_code == 409  # an expired lease is not brought back by a heartbeat
    await take(admin_client, sid)
    rows = [a.detail async for a in AuditLog.objects.filter(action="browser.screen.control").order_by("pk")]
    assert rows == ["took control of the screen", "took control of the screen (oscar's control had lapsed)"]


async def test_it_frees_control_when_the_session_ends(operator_client, quiet):
    sid = create(quiet, name="ending")["session_id"]
    await take(operator_client, sid)
    quiet.call("DELETE", f"/browsers/{sid}")
    body = (await operator_client.get(url(sid))).content.decode()
    assert 'data-mode="none"' in body and "You control" not in body
    assert not await ControlLease.objects.filter(session_id=sid).aexists()


async def test_it_keeps_control_across_a_reload_of_the_page_and_not_in_another_browser(
    operator, operator_client, quiet
):
    from asgiref.sync import sync_to_async

    from tests.conftest import make_client

    sid = create(quiet, name="reload")["session_id"]
    token = await take(operator_client, sid)
    again = (await operator_client.get(url(sid))).content.decode()
    assert f'data-control-token="{token}"' in again and "You control this browser" in again
    other_browser = await sync_to_async(make_client)(operator)
    elsewhere = (await other_browser.get(url(sid))).content.decode()
    assert "data-control-token" not in elsewhere and "from another window" in elsewhere
    assert "Take control here" in elsewhere


async def test_it_releases_only_the_holders_control(operator_client, admin_client, quiet):
    sid = create(quiet, name="mine")["session_id"]
    await take(operator_client, sid)
    await admin_client.post(url(sid, "control/"), {"action": "release"})
    assert await ControlLease.objects.filter(session_id=sid).aexists()
    rows = [a.detail async for a in AuditLog.objects.filter(action="browser.screen.control")]
    assert rows == ["took control of the screen"]  # a release that freed nothing is no row


# What a page hands out --------------------------------------------------------------------------------


async def test_it_hands_a_member_nothing_that_outlives_their_access(operator, operator_client, quiet):
    """An operator removed from the org kept the service's live-view URL the session page had framed (its
    jwt drove the browser, unaudited), and a viewer's read-only link kept delivering frames. Every address
    the pages give now is the console's own, and each refuses a member who is gone."""
    import re

    sid = create(quiet, name="kept")["session_id"]
    token = await take(operator_client, sid)
    pages = [
        f"/o/acme/browsers/{sid}/?wait=1",
        f"/o/acme/browsers/{sid}/?view=embed&wait=1",
        url(sid),
        "/o/acme/browsers/?wait=1",
        "/o/acme/browsers/wall/",
    ]
    bodies = "".join([(await operator_client.get(page)).content.decode() for page in pages])
    assert quiet.url not in bodies and "jwt" not in bodies and "<iframe" not in bodies
    # Attributes whose value is an address (whole names: data-palette-action is a label, not an action).
    found = re.findall(
        r'(?<![\w-])(?:href|src|action|sse-connect|hx-get|hx-post|data-[a-z-]*url)="([^"]*)"', bodies
    )
    addresses = {a.replace("&amp;", "&") for a in found if a not in ("data:,",) and not a.startswith("#")}
    assert f"/o/acme/browsers/{sid}/computer/screenshot.png" in addresses
    foreign = [a for a in addresses if not a.startswith("/") or a.startswith("//")]
    assert foreign == []  # nothing the console could not take back
    await Membership.objects.filter(user=operator).adelete()
    for address in sorted(a for a in addresses if a.startswith("/o/acme/")):
        assert (await operator_client.get(address)).status_code in (404, 405), address
    for path, fields in (("input/", {"kind": "click", "x": 1, "y": 1}), ("control/", {"action": "renew"})):
        response = await operator_client.post(url(sid, path), fields, headers={"X-Screen-Control": token})
        assert response.status_code == 404
    assert computer_calls(quiet) == []


# Handoff and presence (console/live/control.py: requests, grants, take-overs, who watches) ------------

WINDOWS = {
    "oscar": "window-oscar-1",
    "otto": "window-otto-1",
    "alice": "window-alice-1",
    "victor": "window-vic-1",
}


@pytest.fixture
def second_operator_client(org):
    from tests.conftest import make_client, make_user

    user = make_user("otto")
    Membership.objects.create(user=user, org=org, role=Role.OPERATOR)
    return make_client(user)


async def check_in(client, sid, who: str, token: str = "") -> str:
    headers = {"HX-Request": "true", **({"X-Screen-Control": token} if token else {})}
    response = await client.post(url(sid, "presence/"), {"window": WINDOWS[who]}, headers=headers)
    assert response.status_code == 200, response.content
    return response.content.decode()


async def control_action(client, sid, action: str, who: str, **fields):
    data = {"action": action, "window": WINDOWS[who], **fields}
    return await client.post(url(sid, "control/"), data, headers={"HX-Request": "true"})


def state_of(bar: str) -> str:
    return bar.split('data-control="')[1].split('"')[0]


async def member_id(username: str) -> int:
    return (await Membership.objects.aget(user__username=username)).pk


async def control_rows() -> list[tuple[str, str]]:
    rows = AuditLog.objects.filter(action="browser.screen.control").order_by("pk")
    return [(a.actor_username, a.detail) async for a in rows]


async def click(client, sid, token):
    fields = {"kind": "click", "x": 1, "y": 1}
    return await client.post(url(sid, "input/"), fields, headers={"X-Screen-Control": token})


async def test_it_hands_control_to_the_operator_who_asked_when_the_holder_grants_it(
    operator_client, second_operator_client, quiet
):
    sid = create(quiet, name="handoff")["session_id"]
    token = await take(operator_client, sid)
    await check_in(operator_client, sid, "oscar", token)
    asker = second_operator_client
    bar = await check_in(asker, sid, "otto")
    assert state_of(bar) == "other" and "oscar is driving" in bar and "Ask for control" in bar
    asked = (await control_action(asker, sid, "ask", "otto")).content.decode()
    assert "Asked oscar for control" in asked and "Withdraw the request" in asked
    holder_bar = await check_in(operator_client, sid, "oscar", token)
    assert state_of(holder_bar) == "mine" and "Give control to otto" in holder_bar and "Decline" in holder_bar
    granted = await control_action(operator_client, sid, "grant", "oscar", member=await member_id("otto"))
    assert "You gave control to otto." in granted.content.decode()
    assert (await click(operator_client, sid, token)).status_code == 409  # the holder's token is spent
    assert state_of(await check_in(asker, sid, "otto")) == "claim"  # the asking window takes it
    new_token = await take(asker, sid)
    assert (await click(asker, sid, new_token)).status_code == 204
    refused = await click(operator_client, sid, token)
    assert refused.status_code == 409 and "otto is driving" in refused.content.decode()
    assert await control_rows() == [
        ("oscar", "took control of the screen"),
        ("otto", "asked for control of the screen (oscar driving)"),
        ("oscar", "gave control of the screen to otto"),
        ("otto", "took control of the screen"),
    ]


async def test_it_answers_a_plain_form_asking_for_control_with_the_pane_and_why(
    operator_client, second_operator_client, quiet
):
    """Without JavaScript the page has no window id to keep a request open: the form post gets the screen
    pane back with the reason as its message, not a bare 400 text page; the page's script still gets 400."""
    sid = create(quiet, name="no-script")["session_id"]
    await take(operator_client, sid)
    plain = await second_operator_client.post(url(sid, "control/"), {"action": "ask"}, follow=True)
    assert plain.status_code == 200 and f"/browsers/{sid}/" in plain.redirect_chain[-1][0]
    assert "Asking for control needs JavaScript" in plain.content.decode()
    scripted = await second_operator_client.post(
        url(sid, "control/"), {"action": "ask"}, headers={"HX-Request": "true"}
    )
    assert scripted.status_code == 400
    assert await control_rows() == [("oscar", "took control of the screen")]  # nothing asked


async def test_it_tells_the_asker_when_the_holder_declines(operator_client, second_operator_client, quiet):
    sid = create(quiet, name="declined")["session_id"]
    token = await take(operator_client, sid)
    await check_in(second_operator_client, sid, "otto")
    await control_action(second_operator_client, sid, "ask", "otto")
    await control_action(operator_client, sid, "decline", "oscar", member=await member_id("otto"))
    told = await check_in(second_operator_client, sid, "otto")
    assert "oscar declined your request for control." in told and "Ask for control" in told
    assert "oscar declined" not in await check_in(second_operator_client, sid, "otto")  # said once
    assert (await click(operator_client, sid, token)).status_code == 204  # the holder still drives
    # Nothing to grant once declined: the holder cannot hand control to someone who no longer asks.
    late = await control_action(operator_client, sid, "grant", "oscar", member=await member_id("otto"))
    assert "no longer open" in late.content.decode()
    assert ("oscar", "declined otto's request for control of the screen") in await control_rows()
    assert (await click(operator_client, sid, token)).status_code == 204


async def test_it_grants_an_unanswered_request_by_itself_once_the_holder_is_idle(
    operator_client, second_operator_client, quiet, settings
):
    from datetime import timedelta

    from django.utils import timezone

    from console.accounts.models import ScreenPresence

    settings.SCREEN_CONTROL_REQUEST_SECONDS = 30
    sid = create(quiet, name="idle")["session_id"]
    token = await take(operator_client, sid)
    await check_in(operator_client, sid, "oscar", token)
    await check_in(second_operator_client, sid, "otto")
    await control_action(second_operator_client, sid, "ask", "otto")
    long_ago = timezone.now() - timedelta(seconds=31)
    await ScreenPresence.objects.filter(session_id=sid).aupdate(asked_at=long_ago)
    # The holder acted a moment ago: not idle, the request waits.
    assert (await click(operator_client, sid, token)).status_code == 204
    assert state_of(await check_in(second_operator_client, sid, "otto")) == "other"
    await ControlLease.objects.filter(session_id=sid).aupdate(acted_at=long_ago, acquired_at=long_ago)
    assert state_of(await check_in(second_operator_client, sid, "otto")) == "claim"
    told = await check_in(operator_client, sid, "oscar", token)
    assert "Control went to otto: they asked and you were idle." in told and state_of(told) == "other"
    assert (await click(operator_client, sid, token)).status_code == 409
    assert (await control_rows())[-1] == (
        "otto",
        "was given control of the screen: the request went unanswered and oscar was idle for 30 s",
    )


async def test_it_lets_only_an_admin_take_over_and_tells_the_holder(
    operator_client, second_operator_client, admin_client, quiet
):
    sid = create(quiet, name="forced")["session_id"]
    token = await take(operator_client, sid)
    await check_in(operator_client, sid, "oscar", token)
    refused = await control_action(second_operator_client, sid, "force", "otto")
    assert refused.status_code == 403
    assert await AuditLog.objects.filter(action="browser.screen.control", outcome="denied").aexists()
    assert (await click(operator_client, sid, token)).status_code == 204
    assert "Take over" in await check_in(admin_client, sid, "alice")
    assert "Take over" not in await check_in(second_operator_client, sid, "otto")
    forced = await control_action(admin_client, sid, "force", "alice")
    body = forced.content.decode()
    assert "You control this browser" in body and "You took control from oscar; they were told." in body
    told = await check_in(operator_client, sid, "oscar", token)
    assert "alice (an admin) took control from you." in told and "alice is driving" in told
    assert (await click(operator_client, sid, token)).status_code == 409
    assert ("alice", "took control of the screen from oscar (admin take-over)") in await control_rows()


async def test_it_shows_who_watches_with_their_roles_and_forgets_a_window_gone_quiet(
    operator_client, viewer_client, quiet
):
    from datetime import timedelta

    from django.utils import timezone

    from console.accounts.models import ScreenPresence

    sid = create(quiet, name="watched")["session_id"]
    await check_in(operator_client, sid, "oscar")
    bar = await check_in(viewer_client, sid, "victor")
    assert 'data-watcher="oscar"' in bar and "oscar · operator" in bar and "victor · viewer" in bar
    assert "Ask for control" not in bar and "Take control" not in bar  # a viewer watches only
    await ScreenPresence.objects.filter(user__username="oscar").aupdate(
        seen_at=timezone.now() - timedelta(seconds=60)
    )
    assert 'data-watcher="oscar"' not in await check_in(viewer_client, sid, "victor")
    left = await viewer_client.post(url(sid, "presence/"), {"window": WINDOWS["victor"], "leave": "1"})
    assert left.status_code == 204
    assert not await ScreenPresence.objects.filter(user__username="victor").aexists()


async def test_it_checks_a_new_window_in_only_for_a_session_of_the_org(operator_client, quiet, other_tenant):
    from tests.sandbox_fixtures import create_session

    foreign = create_session(other_tenant, name="theirs")["session_id"]
    assert (
        await operator_client.post(url(foreign, "presence/"), {"window": "window-1234"})
    ).status_code == 404
    sid = create(quiet, name="ours")["session_id"]
    assert (await operator_client.post(url(sid, "presence/"), {"window": "no"})).status_code == 400
    quiet.call("DELETE", f"/browsers/{sid}")
    assert (await operator_client.post(url(sid, "presence/"), {"window": "window-1234"})).status_code == 409


async def test_it_draws_the_header_of_an_ended_session_without_its_badge_uptime_or_actions(
    operator_client, outsider_client, quiet
):
    sid = create(quiet, name="header")["session_id"]
    head = f"/o/acme/browsers/{sid}/head/"
    live = (await operator_client.get(head, headers={"HX-Request": "true"})).content.decode()
    assert "badge--active" in live and "data-uptime-seconds" in live and "Delete…" in live
    quiet.call("DELETE", f"/browsers/{sid}")
    ended = (await operator_client.get(head, headers={"HX-Request": "true"})).content.decode()
    assert "badge--ended" in ended and "badge--active" not in ended
    assert "data-uptime" not in ended and "Delete…" not in ended
    assert (await outsider_client.get(head)).status_code == 404


# Tabs ----------------------------------------------------------------------------------------------


@pytest.fixture
async def tabbed():
    """A CDP endpoint with tabs (tests/live/test_tabs.py's), first with two: "First" shown, "Second"."""
    fake = TabbedBrowser()
    fake.targets["T2"] = {"targetId": "T2", "type": "page", "title": "Second", "url": "https://two.test/"}
    async with serve(fake.handler, "127.0.0.1", 0) as server:
        fake.url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/devtools/browser/x?jwt=planted-jwt"
        yield fake


async def read_until(stream, seen: bytes, until: bytes) -> bytes:
    async for chunk in stream:
        seen += chunk
        if until in seen:
            break
    return seen


async def test_it_brings_a_tab_to_front_for_the_driver_only_and_sends_nothing_otherwise(
    operator_client, second_operator_client, viewer_client, quiet, tabbed
):
    sid = create(quiet, name="tabs")["session_id"]
    quiet.fault(
        method="GET", path=f"^/browsers/{sid}$", fields={"cdp_ws_url": tabbed.url, "sandbox": {}}, count=None
    )
    pane = (await operator_client.get(url(sid))).content.decode()
    assert f'data-tab-url="/o/acme/browsers/{sid}/screen/tab/"' in pane and "data-screen-tabs" in pane
    token = await take(operator_client, sid)
    driver = {"X-Screen-Control": token}
    # No screen relayed by this process yet: nothing to act through.
    refused = await operator_client.post(url(sid, "tab/"), {"target": "T2"}, headers=driver)
    assert refused.status_code == 409 and "reload" in refused.content.decode()

    # A viewer watches: the strip comes with the stream, both tabs, the first shown.
    stream = (await viewer_client.get(url(sid, "stream/"))).streaming_content
    seen = await read_until(stream, b"", b"event: tabs")
    strip = json.loads(seen.split(b"event: tabs\ndata: ")[1].split(b"\n")[0])
    assert [t["id"] for t in strip["tabs"]] == ["T1", "T2"] and strip["shown"] == "T1"

    assert (await viewer_client.post(url(sid, "tab/"), {"target": "T2"})).status_code == 403
    other = await second_operator_client.post(url(sid, "tab/"), {"target": "T2"}, headers=driver)
    assert other.status_code == 409 and "is driving" in other.content.decode()
    assert (await operator_client.post(url(sid, "tab/"), {"target": "T2"})).status_code == 409  # no token
    for bad in ("T9", "", 'T1"><b>', "x" * 65):
        answer = await operator_client.post(url(sid, "tab/"), {"target": bad}, headers=driver)
        assert answer.status_code == 400 and "Nothing was sent" in answer.content.decode()
    assert "Target.activateTarget" not in tabbed.methods()
    assert not await AuditLog.objects.filter(action="browser.screen.tab", outcome="ok").aexists()

    # The driver: brought to front, and the stream says the second is shown.
    done = await operator_client.post(url(sid, "tab/"), {"target": "T2"}, headers=driver)
    assert done.status_code == 204
    assert ("Target.activateTarget", {"targetId": "T2"}) in tabbed.asked
    await read_until(stream, seen, b'"shown":"T2"')
    assert "S-T2" in tabbed.casting
    row = await AuditLog.objects.aget(action="browser.screen.tab")
    assert row.target_id == sid and "Second" in row.detail and "T2" in row.detail
    await stream.aclose()
