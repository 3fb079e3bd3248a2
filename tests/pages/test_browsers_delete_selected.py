"""Deleting several browser sessions from the list: selection, one confirmation, one audit row each."""

from console.accounts.models import AuditLog
from tests.sandbox_fixtures import create_session

URL = "/o/acme/browsers/delete-selected/"


def hx(target):
    return {"HX-Request": "true", "HX-Target": target}


def create(tenant, **body):
    return create_session(tenant, **body)["session_id"]


def deletes(tenant):
    return [r["path"] for r in tenant.requests() if r["method"] == "DELETE"]


def active(tenant, sid) -> bool:
    return tenant.call("GET", f"/browsers/{sid}").status_code == 200


async def test_it_shows_operators_the_checkboxes_and_viewers_none(operator_client, viewer_client, quiet):
    sid = create(quiet, name="ticked")
    body = (await operator_client.get("/o/acme/browsers/")).content.decode()
    assert f'name="session_id" value="{sid}" form="sessions-bulk"' in body
    assert 'id="sessions-bulk"' in body and f'action="{URL}"' in body and "Delete selected…" in body
    body = (await viewer_client.get("/o/acme/browsers/")).content.decode()
    assert 'name="session_id"' not in body and "Delete selected" not in body


async def test_it_refuses_viewers_and_sends_nothing(viewer_client, quiet):
    sid = create(quiet)
    response = await viewer_client.post(URL, {"session_id": [sid], "confirm": "yes"})
    assert response.status_code == 403
    assert deletes(quiet) == [] and active(quiet, sid)
    assert not await AuditLog.objects.filter(action="browser.delete").aexists()


async def test_it_asks_for_confirmation_listing_each_session_before_deleting(operator_client, quiet):
    first, second = create(quiet, name="first"), create(quiet, name="second")
    response = await operator_client.post(URL, {"session_id": [first, second]})
    body = response.content.decode()
    assert response.status_code == 200
    assert "Delete 2 sessions?" in body and "first" in body and "second" in body
    assert f'<input type="hidden" name="session_id" value="{first}">' in body
    assert '<input type="hidden" name="confirm" value="yes">' in body
    assert deletes(quiet) == [] and active(quiet, first) and active(quiet, second)
    assert not await AuditLog.objects.filter(action="browser.delete").aexists()


async def test_it_deletes_each_confirmed_session_with_one_audit_row_each(operator_client, quiet, operator):
    sids = [create(quiet, name=f"s{i}") for i in range(3)]
    response = await operator_client.post(URL, {"session_id": sids, "confirm": "yes"})
    body = response.content.decode()
    assert response.status_code == 200
    assert "Deleted 3 of 3 sessions" in body
    assert not any(active(quiet, sid) for sid in sids)
    entries = [e async for e in AuditLog.objects.filter(action="browser.delete").order_by("target_id")]
    assert [e.target_id for e in entries] == sorted(sids)
    assert {e.outcome for e in entries} == {"ok"} and {e.actor_id for e in entries} == {operator.pk}


async def test_it_skips_a_session_already_gone_and_deletes_the_others(operator_client, quiet):
    gone, kept = create(quiet, name="gone"), create(quiet, name="kept")
    quiet.call("DELETE", f"/browsers/{gone}")
    before = len(deletes(quiet))
    body = (await operator_client.post(URL, {"session_id": [gone, kept], "confirm": "yes"})).content.decode()
    assert "Deleted 1 of 2 sessions" in body
    assert "Already ended: nothing to do." in body
    assert deletes(quiet)[before:] == [f"/browsers/{kept}"]  # nothing sent for the one already gone
    assert not active(quiet, kept)
    assert [e.target_id async for e in AuditLog.objects.filter(action="browser.delete")] == [kept]


async def test_it_reports_a_failure_per_row_and_goes_on_with_the_others(operator_client, quiet):
    failing, fine = create(quiet, name="failing"), create(quiet, name="fine")
    quiet.fault(method="DELETE", path=f"^/browsers/{failing}$", status=500, message="disk on fire")
    response = await operator_client.post(
        URL, {"session_id": [failing, fine], "confirm": "yes"}, headers=hx("sessions-bulk-delete")
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="sessions-bulk-delete"')
    assert "Deleted 1 of 2 sessions" in body and "1 could not be deleted" in body
    assert "disk on fire" in body
    assert active(quiet, failing) and not active(quiet, fine)
    outcomes = {e.target_id: e.outcome async for e in AuditLog.objects.filter(action="browser.delete")}
    assert outcomes == {failing: "error", fine: "ok"}
    assert "sessions-changed" in response["HX-Trigger"]  # the list refreshes at once
    assert f'data-bulk-ids="{fine}"' in body  # and the deleted row's checkbox is unticked


async def test_it_sends_nothing_for_ids_this_project_cannot_see(operator_client, quiet, other_tenant):
    theirs = create(other_tenant)
    mine = create(quiet)
    body = (
        await operator_client.post(URL, {"session_id": [theirs, mine, "<script>", "../x"], "confirm": "yes"})
    ).content.decode()
    assert "Deleted 1 of 4 sessions" in body
    assert "Not a session of this project: nothing was sent." in body
    assert body.count("Not a session id: nothing was sent.") == 2
    assert "<script>" not in body
    assert active(other_tenant, theirs) and deletes(other_tenant) == []
    assert deletes(quiet) == [f"/browsers/{mine}"]


async def test_it_never_deletes_a_session_named_like_the_id(operator_client, quiet):
    named = create(quiet, name="looks-like-an-id")
    body = (await operator_client.post(URL, {"session_id": ["looks-like-an-id"], "confirm": "yes"})).content
    assert "Not a session of this project" in body.decode()
    assert active(quiet, named) and deletes(quiet) == []


async def test_it_asks_to_select_something_first(operator_client, quiet):
    body = (await operator_client.post(URL, {"confirm": "yes"})).content.decode()
    assert "Select at least one session." in body
    assert deletes(quiet) == []


async def test_it_bounds_a_selection_and_sends_nothing_beyond_it(operator_client, quiet):
    sid = create(quiet, name="one")
    before = len(quiet.requests())
    # 101 distinct ids: refused as a whole, nothing looked up or deleted.
    body = (await operator_client.post(URL, {"session_id": [sid, *(f"bs_{i}" for i in range(100))]})).content
    assert "Select at most 100 sessions at once." in body.decode()
    # A hundred thousand: Django refuses the form (DATA_UPLOAD_MAX_NUMBER_FIELDS) before the view reads it.
    flood = await operator_client.post(
        URL, {"session_id": [f"bs_{i}" for i in range(100_000)], "confirm": "yes"}
    )
    assert flood.status_code == 400
    assert len(quiet.requests()) == before and active(quiet, sid)
    assert not await AuditLog.objects.filter(action="browser.delete").aexists()


async def test_it_deletes_a_session_chosen_twice_once(operator_client, quiet):
    sid = create(quiet, name="twice")
    response = await operator_client.post(URL, {"session_id": [sid, sid, f" {sid} "], "confirm": "yes"})
    assert "Deleted 1 of 1 session" in response.content.decode()
    assert deletes(quiet) == [f"/browsers/{sid}"]
    assert await AuditLog.objects.filter(action="browser.delete").acount() == 1
