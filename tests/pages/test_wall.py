"""The session wall (console/browsers/wall.py): tiles, filters, badges and its one stream."""

from tests.sandbox_fixtures import create_session as create

ON = {"enabled": True, "browser": {c: {"enabled": True} for c in ("console", "network", "page")}}


def emit(tenant, sid, *events):
    body = {"session_id": sid, "events": list(events)}
    return tenant.control("POST", "telemetry/emit", body).json()["seqs"]


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
