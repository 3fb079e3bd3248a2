"""The session wall (console/browsers/wall.py): tiles, filters, badges and its one stream."""

import json

import pytest
from websockets.asyncio.server import serve

from tests.live.test_screen import FakeCdp
from tests.sandbox_fixtures import create_session as create

ON = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}


def emit(tenant, sid, *events):
    body = {"session_id": sid, "events": list(events)}
    return tenant.control("POST", "telemetry/emit", body).json()["seqs"]


async def test_it_says_when_a_tag_filter_cannot_be_read(viewer_client, quiet):
    tagged = create(quiet, name="tagged", tags={"team": "checkout"})["session_id"]
    body = (await viewer_client.get("/o/acme/browsers/wall/", {"tag": "checkout"})).content.decode()
    assert "Tag filter “checkout” is not key=value (or key:value): it was left out." in body
    assert tagged in body


async def test_it_shows_a_tile_per_session_linking_to_its_screen(viewer_client, quiet):
    one = create(quiet, name="alpha")["session_id"]
    two = create(quiet, name="beta")["session_id"]
    body = (await viewer_client.get("/o/acme/browsers/wall/")).content.decode()
    for sid, name in ((one, "alpha"), (two, "beta")):
        assert f'data-tile="{sid}"' in body and name in body
        assert f'href="/o/acme/browsers/{sid}/#pane-screen"' in body
    assert "no relayed screen (simulated)" in body  # the test sandbox's sessions have no real screen
    assert 'href="/o/acme/browsers/wall/"' in body  # in the sidebar


async def test_it_filters_by_tag_status_pool_and_profile(viewer_client, quiet):
    quiet.call("POST", "/profiles", json={"name": "shopper"})
    tagged = create(quiet, name="tagged", tags={"team": "checkout"})["session_id"]
    with_profile = create(quiet, name="profiled", profile={"name": "shopper"})["session_id"]
    ended = create(quiet, name="over")["session_id"]
    quiet.call("DELETE", f"/browsers/{ended}")
    body = (await viewer_client.get("/o/acme/browsers/wall/", {"tag": "team:checkout"})).content.decode()
    assert tagged in body and with_profile not in body
    # The format of the create form and the tag chips works too.
    body = (await viewer_client.get("/o/acme/browsers/wall/", {"tag": "team=checkout"})).content.decode()
    assert tagged in body and with_profile not in body
    body = (await viewer_client.get("/o/acme/browsers/wall/", {"tag": "team=nobody"})).content.decode()
    assert "No session matches these filters." in body and tagged not in body
    body = (await viewer_client.get("/o/acme/browsers/wall/", {"profile": "shopper"})).content.decode()
    assert with_profile in body and tagged not in body
    body = (await viewer_client.get("/o/acme/browsers/wall/", {"pool": "nope"})).content.decode()
    assert "No session matches these filters." in body
    assert ended not in (await viewer_client.get("/o/acme/browsers/wall/")).content.decode()
    assert ended in (await viewer_client.get("/o/acme/browsers/wall/", {"status": "all"})).content.decode()


async def test_it_badges_a_session_with_a_console_error_in_the_last_minute(viewer_client, quiet):
    broken = create(quiet, name="broken", telemetry=ON)["session_id"]
    fine = create(quiet, name="fine", telemetry=ON)["session_id"]
    emit(quiet, broken, {"type": "console_error", "data": {"text": "boom", "level": "error"}})
    emit(quiet, fine, {"type": "console_log", "data": {"text": "hello", "level": "log"}})
    response = await viewer_client.get(
        "/o/acme/browsers/wall/badges/", headers={"HX-Request": "true", "HX-Target": "wall-badges"}
    )
    body = response.content.decode()
    broken_slot = body.split(f'id="badge-{broken}"')[1].split("</span>\n")[0]
    fine_slot = body.split(f'id="badge-{fine}"')[1].split("</span>\n")[0]
    assert "1 error" in broken_slot and "console_error" in broken_slot
    assert "error" not in fine_slot


async def test_it_refuses_a_stream_of_another_orgs_session(viewer_client, other_tenant, quiet):
    mine = create(quiet, name="mine")["session_id"]
    theirs = create(other_tenant, name="theirs")["session_id"]
    before = len(other_tenant.requests())
    response = await viewer_client.get("/o/acme/browsers/wall/stream/", {"id": [mine, theirs]})
    assert response.status_code == 404
    assert len(other_tenant.requests()) == before
    assert (await viewer_client.get("/o/acme/browsers/wall/stream/")).status_code == 404


async def test_it_shows_a_session_id_no_page_can_have_as_a_bad_answer(viewer_client, quiet):
    # A hostile service: an id with "/" made reverse() raise (a 500); ".." linked to another console page.
    kept = create(quiet, name="kept")["session_id"]
    for planted in ("a/b", ".."):
        quiet.fault(method="GET", path="^/browsers$", fields={"session_id": planted}, count=1)
        response = await viewer_client.get("/o/acme/browsers/wall/")
        body = response.content.decode()
        assert response.status_code == 503 and "Service unavailable" in body  # as a malformed answer is
        assert f'data-tile="{planted}"' not in body and "/o/acme/browsers/../" not in body
    assert kept in (await viewer_client.get("/o/acme/browsers/wall/")).content.decode()


async def test_it_escapes_a_session_name_on_its_tile(viewer_client, quiet):
    create(quiet, name="<img src=x onerror=alert(1)>")
    body = (await viewer_client.get("/o/acme/browsers/wall/")).content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;" in body and "<img src=x" not in body


async def test_it_reflects_its_filters_escaped(viewer_client, quiet):
    hostile = '"><script>alert(1)</script>'
    query = {"q": hostile, "pool": hostile, "profile": hostile, "tag": f"k:{hostile}", "status": hostile}
    body = (await viewer_client.get("/o/acme/browsers/wall/", query)).content.decode()
    assert "<script>alert(1)" not in body and "&quot;&gt;&lt;script&gt;" in body


# What the wall keeps live ------------------------------------------------------------------------------


@pytest.fixture
async def cdp():
    """A CDP endpoint over a real loopback websocket (tests/live/test_screen.py), counting connections."""
    fake = FakeCdp()
    async with serve(fake.handler, "127.0.0.1", 0, process_request=fake.process_request) as server:
        port = server.sockets[0].getsockname()[1]
        fake.url = f"ws://127.0.0.1:{port}/devtools/browser/x?jwt=secret-jwt-of-the-session"
        yield fake


def relayable(tenant, cdp, count: int) -> list[str]:
    """``count`` sessions whose records name the fake CDP endpoint (and no simulated engine)."""
    ids = [create(tenant, name=f"tile-{n}")["session_id"] for n in range(count)]
    tenant.fault(method="GET", path="^/browsers", fields={"cdp_ws_url": cdp.url, "sandbox": {}}, count=None)
    return ids


def statuses(seen: bytes) -> list[dict]:
    """The status events' bodies (not the frames', whose header line is JSON too)."""
    return [
        json.loads(block.split("\ndata: ", 1)[1].split("\n", 1)[0])
        for block in seen.decode().split("\n\n")
        if block.startswith("event: status\ndata: ")
    ]


async def read_until(response, enough, limit: int = 200) -> bytes:
    seen = b""
    async for chunk in response.streaming_content:
        seen += chunk
        if enough(seen) or not limit:
            break
        limit -= 1
    return seen


async def test_it_keeps_live_only_the_tiles_a_viewer_may_have_and_pauses_the_rest(
    viewer_client, operator_client, quiet, cdp, settings
):
    """A viewer's wall of 18 sessions opened a CDP connection per tile and held every browser slot of the
    sandbox. The stream now connects at most WALL_LIVE_TILES sessions per viewer and
    WALL_LIVE_TILES_PER_ORG per org, and says of the others that they are paused, and why."""
    settings.WALL_LIVE_TILES, settings.WALL_LIVE_TILES_PER_ORG = 2, 3
    ids = relayable(quiet, cdp, 5)
    page = (await viewer_client.get("/o/acme/browsers/wall/")).content.decode()
    assert 'data-live-max="2"' in page and page.count("data-relay") == 5
    # Live or paused, every tile shows its session at once: a still picture through the console.
    for sid in ids:
        assert f'src="/o/acme/browsers/{sid}/computer/screenshot.png" loading="lazy"' in page
    mine = await viewer_client.get("/o/acme/browsers/wall/stream/", {"id": ids})
    seen = await read_until(mine, lambda s: sum(x["state"] == "live" for x in statuses(s)) >= 2)
    said = {x["s"]: x for x in statuses(seen)}
    assert [said[i]["state"] for i in ids] == ["live", "live", "paused", "paused", "paused"]
    assert "at most 2 live tiles per viewer" in said[ids[2]]["message"]
    assert cdp.connections == 2
    # Another member of the org: the org's bound leaves room for one more session.
    theirs = await operator_client.get("/o/acme/browsers/wall/stream/", {"id": ids[2:]})
    seen = await read_until(theirs, lambda s: any(x["state"] == "live" for x in statuses(s)))
    said = {x["s"]: x for x in statuses(seen)}
    assert said[ids[2]]["state"] == "live" and said[ids[3]]["state"] == "paused"
    assert "organization's walls already show 3 live tiles" in said[ids[3]]["message"]
    assert cdp.connections == 3
    # A wall that goes away gives its tiles back. (Under ASGI a browser that leaves cancels the response's
    # iterator; the test client only wraps it, so close the iterator itself.)
    await mine._iterator.aclose()
    again = await operator_client.get("/o/acme/browsers/wall/stream/", {"id": ids[3:4]})
    seen = await read_until(again, lambda s: any(x["state"] in ("live", "paused") for x in statuses(s)))
    assert statuses(seen)[-1]["state"] == "live"
    for response in (theirs, again):
        await response._iterator.aclose()


async def test_it_says_in_words_that_the_service_refused_a_tile_and_does_not_insist(
    viewer_client, quiet, cdp
):
    """A tile the service refused (no browser free) said "Reconnecting…", then "No screen from this
    session's CDP endpoint", after five more attempts."""
    (sid,) = relayable(quiet, cdp, 1)
    words = "4 browsers are running (4 of 4): end one and try again"
    cdp.deny = (429, json.dumps({"code": "browser_limit_reached", "message": words}))
    response = await viewer_client.get("/o/acme/browsers/wall/stream/", {"id": [sid]})
    seen = await read_until(response, lambda s: any(x["state"] == "refused" for x in statuses(s)))
    refused = statuses(seen)[-1]
    assert refused["state"] == "refused" and refused["label"] == "Refused by the service"
    assert refused["message"] == f"busy (browser_limit_reached: {words})"
    assert "reconnecting" not in [x["state"] for x in statuses(seen)]
    assert cdp.denied == 1 and "secret-jwt" not in seen.decode()
    await response._iterator.aclose()
    # Retry (a new stream for the tile) asks again: the screen that was refused is not kept as it was.
    cdp.deny = None
    retried = await viewer_client.get("/o/acme/browsers/wall/stream/", {"id": [sid]})
    seen = await read_until(retried, lambda s: any(x["state"] == "live" for x in statuses(s)))
    assert statuses(seen)[-1]["state"] == "live"
    await retried._iterator.aclose()


async def test_it_lets_a_wall_s_new_stream_take_over_the_one_it_just_closed(
    viewer_client, quiet, cdp, settings
):
    """Scrolling changes the tiles on screen: the page closes its stream and opens one for the new set. The
    server may not have seen the first one end yet; counted together, the new tile was paused for nothing."""
    settings.WALL_LIVE_TILES = 2
    a, b, c = relayable(quiet, cdp, 3)
    before = await viewer_client.get("/o/acme/browsers/wall/stream/", {"id": [a, b], "wall": "page0001"})
    await read_until(before, lambda s: sum(x["state"] == "live" for x in statuses(s)) >= 2)
    after = await viewer_client.get("/o/acme/browsers/wall/stream/", {"id": [b, c], "wall": "page0001"})
    seen = await read_until(after, lambda s: sum(x["state"] in ("live", "paused") for x in statuses(s)) >= 2)
    assert {x["s"]: x["state"] for x in statuses(seen)} == {b: "live", c: "live"}
    # Another page of the same viewer is another wall: it counts with the first.
    other = await viewer_client.get("/o/acme/browsers/wall/stream/", {"id": [a], "wall": "page0002"})
    seen = await read_until(other, lambda s: any(x["state"] in ("live", "paused") for x in statuses(s)))
    assert statuses(seen)[-1]["state"] == "paused"
    for response in (before, after, other):
        await response._iterator.aclose()
