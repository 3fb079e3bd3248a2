""" "View the last login attempt": a connection that records its login sessions links its overview and its
history to the console's player of that login's replay, which plays it through the console. Only a real
browser is recorded: against the simulated engine the overview says the login was not recorded."""

import pytest


def url(path=""):
    return f"/o/acme/auth/{path}"


def log_in(tenant, record_session: bool, *, settle):
    """A connection whose login went through: its id and the login's timeline entry. ``settle`` moves
    the flow past its short delays (the tenant clock, or real time for a real browser)."""
    body = {"domain": "plain.example.com", "profile_name": "team", "record_session": record_session}
    cid = tenant.call("POST", "/auth/connections", json=body).json()["id"]
    assert tenant.call("POST", f"/auth/connections/{cid}/login", json={}).status_code == 200
    waiting = settle(cid, lambda r: r["flow_step"] == "AWAITING_INPUT")
    values = {"email": "ops@acme.example", "password": "pw-ok"}
    submit = {"interaction_id": waiting["interaction_id"], "field_values": values}
    assert tenant.call("POST", f"/auth/connections/{cid}/submit", json=submit).status_code == 200
    assert settle(cid, lambda r: r["flow_status"] != "IN_PROGRESS")["flow_status"] == "SUCCESS"
    return cid, tenant.call("GET", f"/auth/connections/{cid}/timeline").json()[0]


@pytest.fixture
def logged_in(tenant):
    def settle(cid, done):
        tenant.advance(1)
        record = tenant.call("GET", f"/auth/connections/{cid}").json()
        assert done(record), record
        return record

    return lambda record_session: log_in(tenant, record_session, settle=settle)


async def test_it_says_a_login_without_a_real_browser_was_not_recorded(viewer_client, logged_in):
    cid, entry = logged_in(True)
    assert "replay_id" not in entry
    overview = (await viewer_client.get(url(f"{cid}/"))).content.decode()
    assert "Last login attempt" in overview and "this login was not recorded" in overview
    assert "/replays/" not in overview
    history = (await viewer_client.get(url(f"{cid}/history/"))).content.decode()
    assert "watch the recording" not in history


async def test_it_offers_no_replay_when_the_connection_does_not_record(viewer_client, logged_in):
    cid, entry = logged_in(False)
    assert "replay_id" not in entry
    overview = (await viewer_client.get(url(f"{cid}/"))).content.decode()
    assert "Last login attempt" not in overview and "/replays/" not in overview
    history = (await viewer_client.get(url(f"{cid}/history/"))).content.decode()
    assert "watch the recording" not in history


@pytest.mark.parametrize(
    ("session_id", "replay_id"),
    [("a/b", "rep_1"), ("..", "rep_1"), ("bs_1", "../../api-keys"), ("bs 1", "rep_1"), ("bs_1", "")],
)
def test_it_links_no_player_for_ids_that_are_not_service_ids(session_id, replay_id):
    from console.auth.views import replay_url
    from console.service.auth_connections import TimelineEvent

    event = TimelineEvent(id="e1", browser_session_id=session_id, replay_id=replay_id)
    assert replay_url("acme", event) == ""  # not a broken page, not a link elsewhere in the console


def test_it_links_the_player_of_a_login_recording():
    from console.auth.views import replay_url
    from console.service.auth_connections import TimelineEvent

    event = TimelineEvent(id="e1", browser_session_id="bs_1", replay_id="rep_1")
    assert replay_url("acme", event) == "/o/acme/browsers/bs_1/replays/rep_1/"
