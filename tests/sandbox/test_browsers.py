"""Sandbox conformance: browser sessions (notes §2): create, get, update, list, delete, timeout."""

import httpx
import pytest

from tests.sandbox_fixtures import new_tenant

LONG = 259_200


def error_shape(response):
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    return body


def create(tenant, **body):
    response = tenant.call("POST", "/browsers", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_it_creates_a_session_with_the_defaults_of_the_notes(tenant):
    session = create(tenant)
    assert len(session["session_id"]) >= 20
    assert session["timeout_seconds"] == 60
    assert session["viewport"] == {"width": 1920, "height": 1080, "refresh_rate": 25}
    assert session["memory"] == "8GiB"
    assert session["region"] == "us-east"
    assert session["headless"] is False and session["stealth"] is False
    assert session["cdp_ws_url"].startswith("wss://") and "jwt=" in session["cdp_ws_url"]
    assert session["webdriver_ws_url"].startswith("wss://")
    assert session["created_at"].endswith("Z")
    assert 0 <= session["usage"]["uptime_ms"] < 1000
    assert "telemetry" not in session and "deleted_at" not in session and "status" not in session
    assert "/_sandbox/live/" in session["browser_live_view_url"]


def test_it_creates_a_session_with_every_option(tenant):
    profile = tenant.call("POST", "/profiles", json={"name": "shop-login"}).json()
    proxy = tenant.call("POST", "/proxies", json={"type": "isp", "name": "dc-1"}).json()
    session = create(
        tenant,
        name="checkout-1",
        tags={"team": "checkout", "env": "prod"},
        stealth=True,
        kiosk_mode=True,
        memory="16GiB",
        region="eu-west",
        timeout_seconds=600,
        viewport={"width": 1440, "height": 900},
        profile={"name": "shop-login", "save_changes": True},
        proxy={"id": proxy["id"]},
        start_url="https://shop.example.com/",
        chrome_policy={"PasswordManagerEnabled": False},
        network={"private_hosts": ["*.corp.example.com"]},
        telemetry={"enabled": True, "browser": {"console": {"enabled": True}, "captcha": {"enabled": False}}},
    )
    assert session["name"] == "checkout-1"
    assert session["tags"] == {"team": "checkout", "env": "prod"}
    assert (session["stealth"], session["kiosk_mode"], session["memory"]) == (True, True, "16GiB")
    assert session["region"] == "eu-west" and session["timeout_seconds"] == 600
    assert session["viewport"] == {"width": 1440, "height": 900, "refresh_rate": 25}
    assert session["profile"]["id"] == profile["id"] and session["profile_save_changes"] is True
    assert session["proxy"]["id"] == proxy["id"] and session["proxy_id"] == proxy["id"]
    assert session["start_url"] == "https://shop.example.com/"
    assert session["network"] == {"private_hosts": ["*.corp.example.com"]}
    enabled = {k for k, v in session["telemetry"]["browser"].items() if v["enabled"]}
    assert enabled == {"control", "connection", "system", "console"}


def test_it_gives_a_headless_session_no_live_view(tenant):
    session = create(tenant, headless=True)
    assert "browser_live_view_url" not in session


def test_it_serves_the_live_view_of_a_headful_session(tenant):
    session = create(tenant, name="watch-me", timeout_seconds=LONG)
    page = httpx.get(session["browser_live_view_url"])
    assert page.status_code == 200 and "watch-me" in page.text
    assert httpx.get(session["browser_live_view_url"].split("?")[0] + "?jwt=wrong").status_code == 404


def test_it_refuses_a_live_view_token_that_is_not_ascii_as_a_wrong_one(tenant):
    """``secrets.compare_digest`` raises on a str with non-ASCII characters: anyone who knew a session id
    had a 500 (an exception in the sandbox's log) for ``?jwt=é``, not the page every wrong token gets."""
    session = create(tenant, name="accents", timeout_seconds=LONG)
    page = session["browser_live_view_url"].split("?")[0]
    for token in ("é", "\u2603" * 40):
        response = httpx.get(page, params={"jwt": token})
        assert response.status_code == 404 and "has ended" in response.text


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"timeout_seconds": 5}, "timeout_seconds"),
        ({"timeout_seconds": 259_201}, "timeout_seconds"),
        ({"viewport": {"width": 1024}}, "viewport"),
        ({"memory": "4GiB"}, "memory"),
        ({"headless": True, "memory": "16GiB"}, "memory"),
        ({"region": "ap-south"}, "region"),
        ({"proxy": {}}, "proxy"),
        ({"proxy": {"mode": "direct"}, "proxy_id": "x"}, "proxy"),
        ({"proxy": {"mode": "default", "id": "x"}}, "proxy"),
        ({"proxy": {"id": "proxy_missing"}}, "proxy"),
        ({"profile": {"name": "no-such-profile"}}, "profile"),
        ({"profile": {"name": "bad name!"}}, "profile"),
        ({"extensions": [{"name": "missing"}]}, "extensions"),
        ({"telemetry": {"enabled": False, "browser": {"console": {"enabled": True}}}}, "telemetry"),
        ({"telemetry": {"browser": {"nope": {"enabled": True}}}}, "telemetry"),
        ({"gpu": True}, "gpu"),
        ({"headless": "yes"}, "headless"),
        ({"tags": {f"k{i}": "v" for i in range(51)}}, "tags"),
        ({"tags": {"team": 3}}, "tags"),
        ({"chrome_policy": {"ProxySettings": {}}}, "chrome_policy"),
        ({"start_url": "ftp://example.com"}, "start_url"),
        ({"favourite_colour": "blue"}, "favourite_colour"),
    ],
)
def test_it_refuses_a_bad_create_body_with_field_details(tenant, body, field):
    response = tenant.call("POST", "/browsers", json=body)
    assert response.status_code == 400
    assert field in [d["code"] for d in error_shape(response)["details"]]
    assert tenant.call("GET", "/browsers").json() == []


def test_it_keeps_names_unique_among_active_sessions(tenant):
    first = create(tenant, name="unique")
    duplicate = tenant.call("POST", "/browsers", json={"name": "unique"})
    assert duplicate.status_code == 409
    assert error_shape(duplicate)["code"] == "browser_name_taken"
    tenant.call("DELETE", f"/browsers/{first['session_id']}")
    assert create(tenant, name="unique")["session_id"] != first["session_id"]


def test_it_gets_by_id_or_name(tenant):
    session = create(tenant, name="by-name")
    assert tenant.call("GET", "/browsers/by-name").json()["session_id"] == session["session_id"]
    missing = tenant.call("GET", "/browsers/nope")
    assert missing.status_code == 404
    assert error_shape(missing)["code"] == "not_found"


def test_it_soft_deletes_and_ends_the_session(tenant):
    session = create(tenant, name="doomed")
    sid = session["session_id"]
    assert tenant.call("DELETE", f"/browsers/{sid}").status_code == 204
    assert tenant.call("GET", f"/browsers/{sid}").status_code == 404
    deleted = tenant.call("GET", f"/browsers/{sid}", params={"include_deleted": "true"}).json()
    assert deleted["deleted_at"].endswith("Z")
    assert "browser_live_view_url" not in deleted
    assert tenant.call("DELETE", f"/browsers/{sid}").status_code == 404
    assert tenant.call("PATCH", f"/browsers/{sid}", json={"name": "x"}).status_code == 404


def test_it_times_out_after_inactivity_on_the_tenant_clock(tenant):
    session = create(tenant, timeout_seconds=60)
    sid = session["session_id"]
    tenant.advance(30)
    # A PATCH drives the session: the timeout counts from here.
    tenant.call("PATCH", f"/browsers/{sid}", json={"tags": {"k": "v"}})
    tenant.advance(45)
    alive = tenant.call("GET", f"/browsers/{sid}").json()
    assert alive["usage"]["uptime_ms"] >= 75_000
    tenant.advance(16)
    assert tenant.call("GET", f"/browsers/{sid}").status_code == 404
    ended = tenant.call("GET", f"/browsers/{sid}", params={"include_deleted": "true"}).json()
    assert 90_000 <= ended["usage"]["uptime_ms"] < 100_000  # last activity at 30 s, plus the 60 s timeout
    deleted = tenant.call("GET", "/browsers", params={"status": "deleted"}).json()
    assert [s["session_id"] for s in deleted] == [sid]


def test_it_ends_a_session_through_the_control_route(tenant):
    sid = create(tenant, timeout_seconds=LONG)["session_id"]
    assert tenant.control("POST", f"browsers/{sid}/end").json()["deleted_at"].endswith("Z")
    assert tenant.call("GET", f"/browsers/{sid}").status_code == 404


def test_it_updates_name_and_replaces_tags(tenant):
    sid = create(tenant, name="old", tags={"a": "1", "b": "2"}, timeout_seconds=LONG)["session_id"]
    updated = tenant.call("PATCH", f"/browsers/{sid}", json={"name": "new", "tags": {"c": "3"}}).json()
    assert updated["name"] == "new" and updated["tags"] == {"c": "3"}
    cleared = tenant.call("PATCH", f"/browsers/{sid}", json={"name": "", "tags": {}}).json()
    assert "name" not in cleared and "tags" not in cleared
    untouched = tenant.call("PATCH", f"/browsers/{sid}", json={"tags": None}).json()
    assert "tags" not in untouched
    refused = tenant.call("PATCH", f"/browsers/{sid}", json={"region": "eu-west"})
    assert refused.status_code == 400
    assert error_shape(refused)["details"][0]["code"] == "region"


def enabled(session):
    telemetry = session.get("telemetry")
    if telemetry is None:
        return None
    return {k for k, v in telemetry["browser"].items() if v["enabled"]}


def test_it_updates_telemetry_with_the_rules_of_the_notes(tenant):
    sid = create(tenant, timeout_seconds=LONG)["session_id"]

    def patch(telemetry):
        response = tenant.call("PATCH", f"/browsers/{sid}", json={"telemetry": telemetry})
        assert response.status_code == 200, response.text
        return enabled(response.json())

    assert patch({}) is None
    assert patch({"enabled": True, "browser": {"network": {"enabled": True}}}) == {
        "control",
        "connection",
        "system",
        "captcha",
        "network",
    }
    # browser alone merges onto the current set
    assert "console" in patch({"browser": {"console": {"enabled": True}, "captcha": {"enabled": False}}})
    assert patch(None) == {"control", "connection", "system", "network", "console"}
    # enabled: true rebuilds from the defaults
    assert patch({"enabled": True}) == {"control", "connection", "system", "captcha"}
    assert patch({"enabled": False}) is None
    refused = tenant.call(
        "PATCH",
        f"/browsers/{sid}",
        json={"telemetry": {"enabled": False, "browser": {"page": {"enabled": True}}}},
    )
    assert refused.status_code == 400


def test_it_loads_a_profile_only_once(tenant):
    tenant.call("POST", "/profiles", json={"name": "p1"})
    sid = create(tenant, timeout_seconds=LONG)["session_id"]
    loaded = tenant.call("PATCH", f"/browsers/{sid}", json={"profile": {"name": "p1"}}).json()
    assert loaded["profile"]["name"] == "p1"
    again = tenant.call("PATCH", f"/browsers/{sid}", json={"profile": {"name": "p1"}})
    assert again.status_code == 409
    assert error_shape(again)["code"] == "profile_already_loaded"


def test_it_lists_newest_first_with_search_status_tags_and_paging(tenant):
    tenant.call("POST", "/profiles", json={"name": "vip-profile"})
    a = create(tenant, name="alpha", tags={"team": "checkout", "env": "prod"}, timeout_seconds=LONG)
    tenant.advance(1)
    b = create(tenant, name="beta", tags={"team": "checkout", "env": "staging"}, timeout_seconds=LONG)
    tenant.advance(1)
    c = create(tenant, name="gamma", profile={"name": "vip-profile"}, timeout_seconds=LONG)
    tenant.call("DELETE", f"/browsers/{b['session_id']}")

    def names(**params):
        return [s.get("name") for s in tenant.call("GET", "/browsers", params=params).json()]

    assert names() == ["gamma", "alpha"]
    assert names(status="deleted") == ["beta"]
    assert names(status="all") == ["gamma", "beta", "alpha"]
    assert names(include_deleted="true") == ["gamma", "beta", "alpha"]
    assert names(query="ALPHA") == ["alpha"]
    assert names(query=c["session_id"]) == ["gamma"]
    assert names(query="vip-prof") == ["gamma"]
    assert names(**{"tags[team]": "checkout", "status": "all"}) == ["beta", "alpha"]
    assert names(**{"tags[team]": "checkout", "tags[env]": "prod"}) == ["alpha"]
    assert names(**{"tags[team]": "Checkout"}) == []
    first = tenant.call("GET", "/browsers", params={"status": "all", "limit": 2})
    assert first.headers["X-Has-More"] == "true" and first.headers["X-Next-Offset"] == "2"
    last = tenant.call("GET", "/browsers", params={"status": "all", "limit": 2, "offset": 2})
    assert [s["session_id"] for s in last.json()] == [a["session_id"]]
    assert last.headers["X-Has-More"] == "false"
    assert tenant.call("GET", "/browsers", params={"status": "gone"}).status_code == 400
    assert tenant.call("GET", "/browsers", params={"limit": 101}).status_code == 400


def test_it_scopes_sessions_to_the_project(tenant):
    tenant.call("POST", "/org/projects", json={"name": "other"})
    create(tenant, name="in-default", timeout_seconds=LONG)
    assert tenant.call("GET", "/browsers", headers={"X-Kernel-Project": "other"}).json() == []
    other = tenant.call("GET", "/browsers/in-default", headers={"X-Kernel-Project": "other"})
    assert other.status_code == 404


def test_it_seeds_demo_sessions(sandbox_url):
    demo = new_tenant(sandbox_url, demo=True)
    sessions = demo.call("GET", "/browsers", params={"status": "all", "limit": 100}).json()
    by_name = {s.get("name"): s for s in sessions}
    assert "browser_live_view_url" in by_name["checkout-smoke"]
    assert by_name["search-crawler-7"]["headless"] is True
    assert by_name["login-debug"]["deleted_at"]
    assert any(s.get("pool") for s in sessions)
    assert any(s.get("tags") == {"team": "checkout", "env": "prod"} for s in sessions)


@pytest.mark.parametrize("token", ["%C3%A9", "wrong"])
def test_it_refuses_a_cdp_token_that_is_not_the_sessions_even_one_not_in_ascii(tenant, sandbox_url, token):
    # compare_digest raises on a str holding non-ASCII characters: ``?jwt=é`` was a 500, not a refusal.
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    session = create(tenant)
    ws = sandbox_url.replace("http://", "ws://", 1)
    with pytest.raises(InvalidStatus) as refused:
        connect(f"{ws}/_sandbox/cdp/{session['session_id']}?jwt={token}", open_timeout=30).close()
    assert refused.value.response.status_code == 403
