"""Sandbox conformance: browser pools (spec: Browser pool; notes §7, §2 for the leased session)."""

import threading

import pytest


def create(tenant, **body):
    response = tenant.call("POST", "/browser_pools", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def error_of(response, status):
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    return body


def fields(body):
    return [d["code"] for d in body["details"]]


def counts(tenant, pool_id):
    pool = tenant.call("GET", f"/browser_pools/{pool_id}").json()
    return pool["available_count"], pool["acquired_count"]


def acquire(tenant, pool_id, **body):
    body.setdefault("acquire_timeout_seconds", 0)
    return tenant.call("POST", f"/browser_pools/{pool_id}/acquire", json=body)


def test_it_creates_a_pool_with_defaults(tenant):
    pool = create(tenant, size=4)
    assert pool["id"].startswith("pool_")
    assert pool["region"] == "us-east"
    assert pool["created_at"].endswith("Z")
    assert (pool["available_count"], pool["acquired_count"]) == (0, 0)
    config = pool["browser_pool_config"]
    assert config["size"] == 4
    assert config["fill_rate_per_minute"] == 25
    assert config["timeout_seconds"] == 600
    assert (config["stealth"], config["headless"], config["kiosk_mode"]) == (False, False, False)
    assert set(config["telemetry"]["browser"]) == {
        "console",
        "page",
        "interaction",
        "network",
        "control",
        "connection",
        "system",
        "screenshot",
        "captcha",
    }
    assert pool["extension_ids"] == []
    assert pool["profile_id"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "size"),
        ({"size": None}, "size"),
        ({"size": 0}, "size"),
        ({"size": "3"}, "size"),
        ({"size": True}, "size"),
        ({"size": 2, "fill_rate_per_minute": 0}, "fill_rate_per_minute"),
        ({"size": 2, "timeout_seconds": 5}, "timeout_seconds"),
        ({"size": 2, "headless": "yes"}, "headless"),
        ({"size": 2, "viewport": {"width": 1920}}, "viewport.height"),
        ({"size": 2, "chrome_policy": ["not", "an", "object"]}, "chrome_policy"),
        ({"size": 2, "chrome_policy": {"ProxyMode": "direct"}}, "chrome_policy"),
        ({"size": 2, "start_url": "ftp://example.com"}, "start_url"),
        ({"size": 2, "region": "mars"}, "region"),
        ({"size": 2, "gpu": True}, "gpu"),
        ({"size": 2, "memory": "16GiB"}, "memory"),
        ({"size": 2, "proxy": {"id": "x"}}, "proxy"),
        (
            {"size": 2, "telemetry": {"browser": {"keyboard": {"enabled": True}}}},
            "telemetry.browser.keyboard",
        ),
        (
            {"size": 2, "telemetry": {"enabled": False, "browser": {"console": {"enabled": True}}}},
            "telemetry.browser",
        ),
        ({"size": 2, "name": "a/b"}, "name"),
    ],
)
def test_it_refuses_an_invalid_configuration_with_field_details(tenant, body, field):
    error = error_of(tenant.call("POST", "/browser_pools", json=body), 400)
    assert field in fields(error)
    assert tenant.call("GET", "/browser_pools").json() == []


def test_it_reports_every_invalid_field_at_once(tenant):
    error = error_of(tenant.call("POST", "/browser_pools", json={"timeout_seconds": 1, "stealth": 3}), 400)
    assert set(fields(error)) == {"size", "timeout_seconds", "stealth"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"profile": {"id": "prof_missing"}}, "profile"),
        ({"profile": {"name": "nobody"}}, "profile"),
        ({"extensions": [{"id": "ext_missing"}]}, "extensions"),
        ({"proxy_id": "proxy_missing"}, "proxy_id"),
    ],
)
def test_it_refuses_references_to_records_that_do_not_exist(tenant, body, field):
    error = error_of(tenant.call("POST", "/browser_pools", json={"size": 1, **body}), 400)
    assert fields(error) == [field]


def test_it_resolves_a_profile_by_name_and_ignores_save_changes(tenant):
    profile = tenant.call("POST", "/profiles", json={"name": "shop"}).json()
    pool = create(tenant, size=2, profile={"name": "shop", "save_changes": True})
    assert pool["profile_id"] == profile["id"]
    assert pool["browser_pool_config"]["profile"] == {"id": profile["id"], "name": "shop"}
    assert "save_changes" not in pool["browser_pool_config"]["profile"]
    # refresh_on_profile_update defaults to true when a profile is set
    assert pool["browser_pool_config"]["refresh_on_profile_update"] is True


def test_it_accepts_extensions_and_proxies_of_the_project(tenant):
    proxy = tenant.call("POST", "/proxies", json={"type": "isp", "name": "dc"})
    assert proxy.status_code in (200, 201), proxy.text
    pool = create(tenant, size=1, proxy_id=proxy.json()["id"])
    assert pool["browser_pool_config"]["proxy_id"] == proxy.json()["id"]


def test_it_refuses_a_duplicate_pool_name_with_409(tenant):
    create(tenant, size=1, name="warm")
    error = error_of(tenant.call("POST", "/browser_pools", json={"size": 1, "name": "warm"}), 409)
    assert error["code"] == "pool_name_taken"


def test_it_fills_at_the_fill_rate_on_the_tenant_clock(tenant):
    pool = create(tenant, size=8, fill_rate_per_minute=25)  # 2 browsers a minute
    assert counts(tenant, pool["id"]) == (0, 0)
    tenant.advance(30)
    assert counts(tenant, pool["id"]) == (1, 0)
    tenant.advance(30)
    assert counts(tenant, pool["id"]) == (2, 0)
    tenant.advance(600)
    assert counts(tenant, pool["id"]) == (8, 0)


def test_it_acquires_an_available_browser_as_a_browser_session(tenant):
    pool = create(tenant, size=2, name="leasing", stealth=True, timeout_seconds=900)
    tenant.advance(600)
    response = acquire(tenant, pool["id"], name="lease-1", tags={"team": "qa"})
    assert response.status_code == 200, response.text
    session = response.json()
    for key in ("session_id", "cdp_ws_url", "webdriver_ws_url", "created_at", "base_url"):
        assert session[key]
    assert session["pool"]["id"] == pool["id"]
    assert session["pool"]["name"] == "leasing"
    assert session["stealth"] is True
    assert session["headless"] is False
    assert session["browser_live_view_url"]
    assert session["timeout_seconds"] == 900
    assert session["memory"] == "8GiB"
    assert session["region"] == "us-east"
    assert session["name"] == "lease-1"
    assert counts(tenant, pool["id"]) == (1, 1)


def test_it_gives_pooled_browsers_the_profile_read_only(tenant):
    tenant.call("POST", "/profiles", json={"name": "ro"})
    pool = create(tenant, size=1, profile={"name": "ro", "save_changes": True})
    tenant.advance(600)
    session = acquire(tenant, pool["id"]).json()
    assert session["profile"]["name"] == "ro"
    assert session["profile_save_changes"] is False


def test_it_answers_204_when_the_long_poll_times_out(tenant):
    pool = create(tenant, size=1)
    response = acquire(tenant, pool["id"], acquire_timeout_seconds=0)
    assert response.status_code == 204
    assert response.content == b""


def test_it_hands_a_browser_to_a_waiting_acquire_when_the_clock_moves(tenant):
    # A minute of fill gives nothing; 100 min gives 1. The pool's browsers outlive the clock's moves: one
    # more move after the hand-off (its answer still on the way to the waiter) must not end the leased one.
    pool = create(tenant, size=1, fill_rate_per_minute=1, timeout_seconds=259_200)
    result = {}

    def wait():
        result["response"] = acquire(tenant, pool["id"], acquire_timeout_seconds=8)

    waiter = threading.Thread(target=wait)
    waiter.start()
    # Keep moving the clock until the waiter has its browser (it re-checks when the clock moves).
    for _ in range(80):
        tenant.advance(6000)
        waiter.join(timeout=0.1)
        if not waiter.is_alive() or counts(tenant, pool["id"])[1]:
            break
    waiter.join()
    assert result["response"].status_code == 200
    assert counts(tenant, pool["id"]) == (0, 1)


def test_it_releases_with_reuse_back_to_the_pool(tenant):
    pool = create(tenant, size=2)
    tenant.advance(600)
    session = acquire(tenant, pool["id"]).json()
    path = f"/browser_pools/{pool['id']}/release"
    assert tenant.call("POST", path, json={"session_id": session["session_id"]}).status_code == 204
    assert counts(tenant, pool["id"]) == (2, 0)
    # The lease is over: the session is gone.
    assert tenant.call("POST", path, json={"session_id": session["session_id"]}).status_code == 404


def test_it_releases_without_reuse_and_refills_later(tenant):
    pool = create(tenant, size=4, fill_rate_per_minute=25)  # one browser a minute
    tenant.advance(600)
    session = acquire(tenant, pool["id"]).json()
    response = tenant.call(
        "POST",
        f"/browser_pools/{pool['id']}/release",
        json={"session_id": session["session_id"], "reuse": False},
    )
    assert response.status_code == 204
    assert counts(tenant, pool["id"]) == (3, 0)
    tenant.advance(60)
    assert counts(tenant, pool["id"]) == (4, 0)


def test_it_requires_a_session_id_to_release(tenant):
    pool = create(tenant, size=1)
    error = error_of(tenant.call("POST", f"/browser_pools/{pool['id']}/release", json={"reuse": "no"}), 400)
    assert set(fields(error)) == {"session_id", "reuse"}


def test_it_flushes_idle_browsers_but_not_leased_ones(tenant):
    pool = create(tenant, size=3)
    tenant.advance(600)
    acquire(tenant, pool["id"])
    assert tenant.call("POST", f"/browser_pools/{pool['id']}/flush").status_code == 204
    assert counts(tenant, pool["id"]) == (0, 1)


def test_it_blocks_delete_while_browsers_are_leased_unless_forced(tenant):
    pool = create(tenant, size=2, name="busy")
    tenant.advance(600)
    session = acquire(tenant, pool["id"]).json()
    error = error_of(tenant.call("DELETE", "/browser_pools/busy", json={}), 409)
    assert error["code"] == "pool_in_use"
    assert "force" in error["message"]
    assert tenant.call("DELETE", "/browser_pools/busy", json={"force": True}).status_code == 204
    assert tenant.call("GET", f"/browser_pools/{pool['id']}").status_code == 404
    # Forcing terminated the leased browser.
    assert tenant.call("GET", f"/browsers/{session['session_id']}").status_code in (404, 410)


def test_it_deletes_an_idle_pool_without_a_body(tenant):
    pool = create(tenant, size=1)
    assert tenant.call("DELETE", f"/browser_pools/{pool['id']}").status_code == 204


def test_it_caps_the_sum_of_pool_sizes_by_the_project_limit(tenant):
    tenant.call("POST", "/org/projects", json={"name": "capped"})
    tenant.call("PATCH", "/org/projects/capped/limits", json={"max_concurrent_sessions": 10})
    scope = {"X-Kernel-Project": "capped"}
    assert tenant.call("POST", "/browser_pools", json={"size": 6}, headers=scope).status_code == 201
    over = tenant.call("POST", "/browser_pools", json={"size": 5}, headers=scope)
    error = error_of(over, 429)
    assert error["code"] == "concurrent_sessions_limit_exceeded"
    assert "max_concurrent_sessions of 10" in error["message"]
    assert fields(error) == ["max_concurrent_sessions"]
    assert tenant.call("POST", "/browser_pools", json={"size": 4}, headers=scope).status_code == 201


def test_it_applies_the_cap_when_a_pool_grows(tenant):
    tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 5})
    pool = create(tenant, size=3)
    grown = tenant.call("PATCH", f"/browser_pools/{pool['id']}", json={"size": 6})
    assert "default_project_max_concurrent_sessions" in error_of(grown, 429)["message"]
    assert tenant.call("PATCH", f"/browser_pools/{pool['id']}", json={"size": 5}).status_code == 200


def test_it_updates_with_patch_semantics(tenant):
    tenant.call("POST", "/profiles", json={"name": "p1"})
    pool = create(tenant, size=2, name="cfg", start_url="https://example.com", profile={"name": "p1"})
    path = f"/browser_pools/{pool['id']}"
    updated = tenant.call("PATCH", path, json={"name": "", "headless": True}).json()
    assert updated["name"] == "cfg"  # "" is a no-op
    assert updated["browser_pool_config"]["headless"] is True
    assert updated["browser_pool_config"]["start_url"] == "https://example.com"
    cleared = tenant.call("PATCH", path, json={"start_url": "", "profile": {"id": ""}}).json()
    assert "start_url" not in cleared["browser_pool_config"]
    assert cleared["profile_id"] is None
    assert cleared["browser_pool_config"]["refresh_on_profile_update"] is False
    refused = tenant.call("PATCH", path, json={"region": "eu-west"})
    assert fields(error_of(refused, 400)) == ["region"]


def test_it_discards_idle_browsers_on_update_when_asked(tenant):
    pool = create(tenant, size=2)
    tenant.advance(600)
    path = f"/browser_pools/{pool['id']}"
    assert tenant.call("PATCH", path, json={"stealth": True}).json()["available_count"] == 2
    assert tenant.call("PATCH", path, json={"discard_all_idle": True}).json()["available_count"] == 0


def test_it_refreshes_pools_when_their_profile_is_updated(tenant):
    tenant.call("POST", "/profiles", json={"name": "followed"})
    following = create(tenant, size=2, profile={"name": "followed"})
    pinned = create(tenant, size=2, profile={"name": "followed"}, refresh_on_profile_update=False)
    tenant.advance(600)
    tenant.control("POST", "profiles/followed/updated")
    assert counts(tenant, following["id"]) == (0, 0)
    assert counts(tenant, pinned["id"]) == (2, 0)


def test_it_lists_with_name_query_region_and_paging(tenant):
    for n in range(5):
        create(tenant, size=1, name=f"pool-{n}", region="eu-west" if n % 2 else "us-east")
    assert len(tenant.call("GET", "/browser_pools").json()) == 5
    assert [p["name"] for p in tenant.call("GET", "/browser_pools", params={"name": "POOL-3"}).json()] == [
        "pool-3"
    ]
    assert len(tenant.call("GET", "/browser_pools", params={"region": "eu-west"}).json()) == 2
    page = tenant.call("GET", "/browser_pools", params={"limit": 2, "offset": 2})
    assert [p["name"] for p in page.json()] == ["pool-2", "pool-3"]
    assert page.headers["X-Next-Offset"] == "4"


def test_it_scopes_pools_to_the_project(tenant):
    tenant.call("POST", "/org/projects", json={"name": "elsewhere"})
    create(tenant, size=1, name="here")
    assert tenant.call("GET", "/browser_pools", headers={"X-Kernel-Project": "elsewhere"}).json() == []
    assert (
        tenant.call("GET", "/browser_pools/here", headers={"X-Kernel-Project": "elsewhere"}).status_code
        == 404
    )


def test_it_seeds_demo_pools(demo_tenant):
    pools = {p["name"]: p for p in demo_tenant.call("GET", "/browser_pools").json()}
    assert {"checkout-warm", "scraper-headless", "support-inbox", "qa-smoke"} <= set(pools)
    assert pools["checkout-warm"]["acquired_count"] == 3
    assert pools["checkout-warm"]["browser_pool_config"]["profile"]["name"] == "checkout-bot"
