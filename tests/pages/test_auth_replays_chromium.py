""" "View the last login attempt" against real browsers: a connection that records its login sessions
links its overview and its history to the console's player of the replay recorded from the login's page."""

import asyncio
import time

import pytest

from tests.pages.test_auth_replays import log_in, url

pytestmark = pytest.mark.chromium


@pytest.fixture
def tenant(chromium_tenant):
    """The organization's tenant lives on the sandbox whose sessions run Chromium."""
    return chromium_tenant


async def test_it_links_the_last_login_attempt_to_its_real_replay(viewer_client, tenant):
    def settle(cid, done):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            record = tenant.call("GET", f"/auth/connections/{cid}").json()
            if done(record):
                return record
            time.sleep(0.2)
        raise AssertionError(f"the flow did not move on: {record}")

    cid, entry = log_in(tenant, True, settle=settle)
    sid = entry["browser_session_id"]
    # The login was quicker than its browser's start: the flow is played into the page and recorded after.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        entry = tenant.call("GET", f"/auth/connections/{cid}/timeline").json()[0]
        replays = tenant.call("GET", f"/browsers/{sid}/replays").json()
        if entry.get("replay_id") and replays and replays[0].get("finished_at"):
            break
        await asyncio.sleep(0.3)  # between checks of the state, under the deadline
    else:
        raise AssertionError(f"the login's replay did not finish: {entry}, {replays}")
    replay_id = entry["replay_id"]
    assert [r["replay_id"] for r in replays] == [replay_id]
    player = f"/o/acme/browsers/{sid}/replays/{replay_id}/"
    overview = (await viewer_client.get(url(f"{cid}/"))).content.decode()
    assert (
        "Last login attempt" in overview and f'<a href="{player}">view the last login attempt</a>' in overview
    )
    history = (await viewer_client.get(url(f"{cid}/history/"))).content.decode()
    assert f'<a href="{player}">watch the recording</a>' in history

    page = await viewer_client.get(player)
    body = page.content.decode()
    assert page.status_code == 200 and f'src="{player}video/"' in body and "token=" not in body
    video = await viewer_client.get(f"{player}video/")
    assert video.status_code == 200 and video["Content-Type"] == "video/mp4"
    assert b"".join([chunk async for chunk in video.streaming_content])[4:8] == b"ftyp"
