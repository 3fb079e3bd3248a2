""" "View the last login attempt": a connection that records its login sessions links its overview and its
history to the console's player of that login's replay, which plays it through the console."""

import pytest


def url(path=""):
    return f"/o/acme/auth/{path}"


@pytest.fixture
def logged_in(tenant):
    """A connection whose (recorded) login went through: its id and the login's timeline entry."""

    def run(record_session: bool):
        body = {"domain": "plain.example.com", "profile_name": "team", "record_session": record_session}
        cid = tenant.call("POST", "/auth/connections", json=body).json()["id"]
        assert tenant.call("POST", f"/auth/connections/{cid}/login", json={}).status_code == 200
        tenant.advance(1)
        waiting = tenant.call("GET", f"/auth/connections/{cid}").json()
        values = {"email": "ops@acme.example", "password": "pw-ok"}
        submit = {"interaction_id": waiting["interaction_id"], "field_values": values}
        assert tenant.call("POST", f"/auth/connections/{cid}/submit", json=submit).status_code == 200
        tenant.advance(1)
        assert tenant.call("GET", f"/auth/connections/{cid}").json()["flow_status"] == "SUCCESS"
        return cid, tenant.call("GET", f"/auth/connections/{cid}/timeline").json()[0]

    return run


async def test_it_links_the_last_login_attempt_to_its_replay(viewer_client, logged_in):
    cid, entry = logged_in(True)
    player = f"/o/acme/browsers/{entry['browser_session_id']}/replays/{entry['replay_id']}/"
    overview = (await viewer_client.get(url(f"{cid}/"))).content.decode()
    assert (
        "Last login attempt" in overview and f'<a href="{player}">view the last login attempt</a>' in overview
    )
    history = (await viewer_client.get(url(f"{cid}/history/"))).content.decode()
    assert f'<a href="{player}">watch the recording</a>' in history

    page = await viewer_client.get(player)
    body = page.content.decode()
    assert page.status_code == 200 and f'src="{player}video/"' in body
    assert "Telemetry is off for this session" in body and "token=" not in body
    video = await viewer_client.get(f"{player}video/")
    assert video.status_code == 200 and video["Content-Type"] == "video/mp4"
    assert b"".join([chunk async for chunk in video.streaming_content])[4:8] == b"ftyp"


async def test_it_offers_no_replay_when_the_connection_does_not_record(viewer_client, logged_in):
    cid, entry = logged_in(False)
    assert "replay_id" not in entry
    overview = (await viewer_client.get(url(f"{cid}/"))).content.decode()
    assert "Last login attempt" not in overview and "/replays/" not in overview
    history = (await viewer_client.get(url(f"{cid}/history/"))).content.decode()
    assert "watch the recording" not in history
