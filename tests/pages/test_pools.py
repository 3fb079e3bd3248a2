"""Pools pages: live list with capacity, create/edit with the whole configuration, acquire, release,
flush, delete (blocked while leased unless forced)."""

import http.server
import json
import re
from urllib.parse import parse_qs

import pytest

from console.accounts.models import AuditLog
from console.service import pools


def url(path=""):
    return f"/o/acme/pools/{path}"


def make_pool(tenant, **body):
    response = tenant.call("POST", "/browser_pools", json={"size": 4, **body})
    assert response.status_code == 201, response.text
    return response.json()


@pytest.fixture
def pool(tenant):
    return make_pool(tenant, name="warm")


def sent(tenant, method="POST", path="/browser_pools"):
    return [r for r in tenant.requests() if r["method"] == method and r["path"] == path]


VALID = {"size": "5", "fill_rate_per_minute": "25", "timeout_seconds": "600", "viewport": ""}


# --- list ---------------------------------------------------------------------------------------


async def test_it_lists_pools_with_capacity_bars(viewer_client, tenant, pool):
    tenant.advance(60)  # 25% of 4 per minute: one warm browser
    response = await viewer_client.get(url())
    assert response.status_code == 200
    body = response.content.decode()
    assert "warm" in body
    assert 'data-size="4" data-acquired="0" data-available="1"' in body
    assert "3 warming" in body
    assert "js/pools.js" in body
    assert 'data-poll="3"' in body and 'hx-trigger="poll"' in body


async def test_it_shows_pooled_capacity_beside_the_project_cap(viewer_client, tenant, pool):
    make_pool(tenant, size=6)
    tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 40})
    body = (await viewer_client.get(url())).content.decode()
    assert "10 of 40 concurrent sessions in use in this project" in body
    assert "0 on-demand sessions and 10 reserved by 2 pools" in body
    assert "Cap: the organization&#x27;s default cap per project; 30 left." in body
    assert "lower bounds" not in body


@pytest.fixture
def endless_pools_service(org):
    """The org's service is one whose pool list always says "more" (one pool of size 2 a page)."""
    from tests.listener import serving

    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path, _, query = self.path.partition("?")
            asked.append(path)
            headers = {}
            if path.endswith("/browser_pools"):
                offset = int(parse_qs(query).get("offset", ["0"])[0])
                data = [{"id": f"pool_{offset}", "browser_pool_config": {"size": 2}}]
                headers = {"X-Has-More": "true", "X-Next-Offset": str(offset + 1)}
            elif path.endswith("/org/limits"):
                data = {"max_concurrent_sessions": 50}
            elif path.endswith(("/browsers", "/invocations", "/org/projects")):
                data = []
            else:
                data = {}
            body = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as org.service_base_url:
        org.save()
        yield asked


async def test_it_says_at_least_when_the_service_lists_more_pools_than_it_adds_up(
    viewer_client, endless_pools_service
):
    body = (await viewer_client.get(url())).content.decode()
    floor = 2 * pools.POOLED_PAGES
    assert f"at least {floor} of 50 concurrent sessions in use in this project" in body
    assert f"at most {50 - floor} left" in body
    assert "the figures are lower bounds" in body
    # The page's own list asks for one page; the sum asks for at most POOLED_PAGES more.
    assert endless_pools_service.count("/browser_pools") <= pools.POOLED_PAGES + 1


async def test_it_shows_the_current_projects_own_cap(viewer_client, viewer, org, tenant):
    project = tenant.call("POST", "/org/projects", json={"name": "capped"}).json()
    tenant.call("PATCH", f"/org/projects/{project['id']}/limits", json={"max_concurrent_sessions": 12})
    membership = await viewer.memberships.aget(org=org)
    membership.project_id = project["id"]
    await membership.asave()
    body = (await viewer_client.get(url())).content.decode()
    assert "0 of 12 concurrent sessions in use in this project" in body
    assert "Cap: this project&#x27;s own cap; 12 left." in body


async def test_it_refreshes_the_live_partial_for_htmx_polls(viewer_client, tenant, pool):
    response = await viewer_client.get(url(), headers={"HX-Request": "true", "HX-Target": "pools-live"})
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="pools-live"')
    assert "<html" not in body
    tenant.advance(600)
    again = (
        await viewer_client.get(url(), headers={"HX-Request": "true", "HX-Target": "pools-live"})
    ).content
    assert b'data-available="4"' in again


async def test_it_searches_pools(viewer_client, tenant, pool):
    make_pool(tenant, name="other")
    body = (await viewer_client.get(url(), {"q": "war"})).content.decode()
    assert "warm" in body and "other" not in body


async def test_it_offers_new_pool_to_admins_only(viewer_client, operator_client, admin_client):
    assert "New pool" not in (await viewer_client.get(url())).content.decode()
    assert "New pool" not in (await operator_client.get(url())).content.decode()
    assert "New pool" in (await admin_client.get(url())).content.decode()


# --- create -------------------------------------------------------------------------------------


async def test_it_shows_the_whole_configuration_form(admin_client, tenant):
    tenant.call("POST", "/profiles", json={"name": "shop"})
    body = (await admin_client.get(url("new/"))).content.decode()
    for name in (
        "size",
        "fill_rate_per_minute",
        "timeout_seconds",
        "stealth",
        "headless",
        "kiosk_mode",
        "profile",
        "refresh_on_profile_update",
        "proxy_id",
        "viewport",
        "chrome_policy",
        "start_url",
        "telemetry_captcha",
    ):
        assert f'name="{name}"' in body, name
    assert "shop" in body
    assert "read-only" in body and "ignored (not rejected)" in body
    assert "1280 \u00d7 800 @ 60 Hz" in body


async def test_it_creates_a_pool_with_the_whole_configuration(admin_client, tenant):
    profile = tenant.call("POST", "/profiles", json={"name": "shop"}).json()
    form = {
        **VALID,
        "name": "checkout",
        "stealth": "on",
        "kiosk_mode": "on",
        "profile": profile["id"],
        "viewport": "custom",
        "viewport_width": "1366",
        "viewport_height": "768",
        "chrome_policy": '{"BlockThirdPartyCookies": true}',
        "start_url": "https://shop.example.com/",
        "telemetry_enabled": "on",
        "telemetry_console": "on",
        "telemetry_control": "on",
    }
    response = await admin_client.post(url("new/"), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    pool = tenant.call("GET", "/browser_pools/checkout").json()
    assert response["Location"] == url(f"{pool['id']}/")
    config = pool["browser_pool_config"]
    assert config["size"] == 5
    assert config["stealth"] and config["kiosk_mode"] and not config["headless"]
    assert pool["profile_id"] == profile["id"]
    assert config["refresh_on_profile_update"] is False  # the box was left unticked
    assert config["viewport"] == {"width": 1366, "height": 768}
    assert config["chrome_policy"] == {"BlockThirdPartyCookies": True}
    assert config["start_url"] == "https://shop.example.com/"
    assert config["telemetry"]["browser"]["console"]["enabled"] is True
    assert config["telemetry"]["browser"]["network"]["enabled"] is False
    entry = await AuditLog.objects.aget(action="pool.create")
    assert (entry.target_id, entry.outcome) == (pool["id"], "ok")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"size": ""}, "Size is required."),
        ({"size": "0"}, "At least 1."),
        ({"chrome_policy": "{not json"}, "Not valid JSON"),
        ({"chrome_policy": "[1, 2]"}, "JSON object"),
        ({"chrome_policy": "[" * 100_000}, "too deeply nested"),
        ({"chrome_policy": '{"a": ' * 100_000}, "too deeply nested"),
        ({"chrome_policy": '{"ProxyMode": "direct"}'}, "Managed by the service"),
        ({"chrome_policy": '{"DeveloperToolsAvailability": 2}'}, "Managed by the service"),
        ({"start_url": "javascript:alert(1)"}, "http:// or https://"),
        ({"viewport": "custom"}, "Required for a custom viewport."),
        ({"name": "a/b"}, "cannot contain /"),
    ],
)
async def test_it_refuses_bad_input_before_sending_anything(admin_client, tenant, changes, message):
    response = await admin_client.post(url("new/"), {**VALID, **changes})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert sent(tenant) == []


async def test_it_shows_the_services_field_errors_next_to_the_field(admin_client, tenant):
    error = {
        "code": "invalid_request",
        "message": "the pool configuration is not valid",
        "details": [{"code": "viewport.width", "message": "this width is not offered in us-east"}],
    }
    tenant.fault(method="POST", path="^/browser_pools$", status=400, body=json.dumps(error))
    form = {**VALID, "viewport": "custom", "viewport_width": "7000", "viewport_height": "900"}
    response = await admin_client.post(url("new/"), form)
    assert response.status_code == 200
    body = response.content.decode()
    assert "this width is not offered in us-east" in body
    assert await AuditLog.objects.filter(action="pool.create", outcome="error").aexists()


async def test_it_explains_a_taken_name_next_to_the_field(admin_client, tenant):
    make_pool(tenant, name="taken")
    response = await admin_client.post(url("new/"), {**VALID, "name": "taken"})
    assert response.status_code == 200
    assert "already exists" in response.content.decode()


async def test_it_explains_the_concurrency_cap_at_the_size_field(admin_client, tenant):
    tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 3})
    response = await admin_client.post(url("new/"), {**VALID, "size": "5"})
    assert response.status_code == 200
    body = response.content.decode()
    # Nothing is in use: the pool is too big for what is left.
    assert "That would go over this project&#x27;s cap: 0 of 3 in use (0 on-demand sessions" in body
    assert "default_project_max_concurrent_sessions of 3" not in body  # the service's words are not repeated
    assert 'href="/o/acme/projects/">the project&rsquo;s limits</a>' in body


async def test_it_returns_the_form_partial_to_htmx(admin_client, tenant):
    response = await admin_client.post(
        url("new/"), {**VALID, "size": ""}, headers={"HX-Request": "true", "HX-Target": "pool-form"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<form id="pool-form"')
    assert "Size is required." in body


async def test_it_refuses_create_to_operators(operator_client, tenant):
    assert (await operator_client.get(url("new/"))).status_code == 403
    assert (await operator_client.post(url("new/"), VALID)).status_code == 403
    assert sent(tenant) == []


# --- detail, acquire, release, flush ------------------------------------------------------------


async def test_it_shows_the_configuration_and_counts(viewer_client, tenant):
    tenant.call("POST", "/profiles", json={"name": "shop"})
    made = make_pool(
        tenant,
        name="cfg",
        profile={"name": "shop"},
        chrome_policy={"BlockThirdPartyCookies": True},
        viewport={"width": 1280, "height": 800, "refresh_rate": 60},
    )
    body = (await viewer_client.get(url(f"{made['id']}/"))).content.decode()
    assert "shop" in body and "Loaded read-only" in body
    assert "1280\u00d7800 @ 60 Hz" in body
    assert "&quot;BlockThirdPartyCookies&quot;: true" in body
    assert 'id="pool-counts"' in body
    assert "Lease a browser" not in body and "Edit configuration" not in body  # a viewer reads only


async def test_it_serves_the_counts_partial_for_polling(viewer_client, tenant, pool):
    tenant.advance(120)
    response = await viewer_client.get(
        url(f"{pool['id']}/"), headers={"HX-Request": "true", "HX-Target": "pool-counts"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="pool-counts"')
    assert 'data-available="2"' in body


async def test_it_acquires_a_browser_and_links_to_the_session(operator_client, tenant, pool):
    tenant.advance(600)
    response = await operator_client.post(
        url(f"{pool['id']}/acquire/"),
        {"timeout_seconds": "0", "name": "debugging"},
        headers={"HX-Request": "true", "HX-Target": "pool-lease"},
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="pool-lease"')
    leased = tenant.call("GET", f"/browser_pools/{pool['id']}").json()
    assert leased["acquired_count"] == 1
    assert "Acquired session" in body
    entry = await AuditLog.objects.aget(action="pool.acquire")
    session_id = entry.detail.removeprefix("session ")
    assert session_id in body
    # The release form is filled in with the session just acquired, and the session's page is linked.
    assert f'value="{session_id}"' in body
    assert f'href="/o/acme/browsers/{session_id}/"' in body
    assert "pool-changed" in response["HX-Trigger"]  # the counts refresh at once


async def test_it_says_when_no_browser_became_free(operator_client, pool):
    response = await operator_client.post(url(f"{pool['id']}/acquire/"), {"timeout_seconds": "0"})
    assert response.status_code == 200
    assert "No browser became free within 0 seconds" in response.content.decode()


async def test_it_refuses_an_out_of_range_wait(operator_client, tenant, pool):
    response = await operator_client.post(url(f"{pool['id']}/acquire/"), {"timeout_seconds": "600"})
    assert "At most 60." in response.content.decode()
    assert sent(tenant, path=f"/browser_pools/{pool['id']}/acquire") == []


async def test_it_releases_with_and_without_reuse(operator_client, tenant, pool):
    tenant.advance(600)
    first = tenant.call("POST", f"/browser_pools/{pool['id']}/acquire", json={}).json()
    second = tenant.call("POST", f"/browser_pools/{pool['id']}/acquire", json={}).json()
    response = await operator_client.post(
        url(f"{pool['id']}/release/"), {"session_id": first["session_id"], "reuse": "on"}
    )
    assert response.status_code == 302
    assert tenant.call("GET", f"/browser_pools/{pool['id']}").json()["available_count"] == 3
    await operator_client.post(url(f"{pool['id']}/release/"), {"session_id": second["session_id"]})
    after = tenant.call("GET", f"/browser_pools/{pool['id']}").json()
    assert (after["available_count"], after["acquired_count"]) == (3, 0)  # destroyed, not returned
    details = [e.detail async for e in AuditLog.objects.filter(action="pool.release").order_by("pk")]
    assert details == [
        f"session {first['session_id']} reuse=True",
        f"session {second['session_id']} reuse=False",
    ]


async def test_it_explains_releasing_an_unknown_session(operator_client, pool):
    response = await operator_client.post(
        url(f"{pool['id']}/release/"), {"session_id": "nope", "reuse": "on"}
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "Session “nope” is not leased from this pool" in body
    assert "was not found" not in body and "&#x27;nope&#x27;" not in body  # not the service's own words


async def test_it_lists_leased_browsers_with_a_release_button_each(operator_client, tenant, pool):
    tenant.advance(600)
    first = tenant.call("POST", f"/browser_pools/{pool['id']}/acquire", json={"name": "first"}).json()
    second = tenant.call("POST", f"/browser_pools/{pool['id']}/acquire", json={}).json()
    tenant.call("POST", "/browsers", json={"name": "warm on demand"})
    body = (await operator_client.get(url(f"{pool['id']}/"))).content.decode()
    leases = body[body.index('id="pool-leases"') : body.index('<section id="pool-lease" ')]
    assert "2 leased" in leases
    assert first["session_id"] in leases and second["session_id"] in leases and "first" in leases
    assert "warm on demand" not in leases
    assert leases.count(f'action="/o/acme/pools/{pool["id"]}/release/"') == 4  # release, or destroy
    assert f'name="session_id" value="{first["session_id"]}"' in leases
    response = await operator_client.post(
        url(f"{pool['id']}/release/"), {"session_id": first["session_id"], "reuse": "on"}
    )
    assert response.status_code == 302
    assert tenant.call("GET", f"/browser_pools/{pool['id']}").json()["acquired_count"] == 1


async def test_it_shows_leases_to_viewers_without_release_buttons(viewer_client, tenant, pool):
    tenant.advance(600)
    leased = tenant.call("POST", f"/browser_pools/{pool['id']}/acquire", json={}).json()
    body = (await viewer_client.get(url(f"{pool['id']}/"))).content.decode()
    assert leased["session_id"] in body and "/release/" not in body


async def test_it_renders_the_frame_at_once_and_the_pool_after(viewer_client, tenant, pool, settings):
    settings.SERVICE_READ_TIMEOUT = 0.5
    tenant.fault(method="GET", path=f"^/browser_pools/{pool['id']}$", latency_ms=2000, count=1)
    frame = await viewer_client.get(url(f"{pool['id']}/"), headers={"Sec-Fetch-Mode": "navigate"})
    body = frame.content.decode()
    assert frame.status_code == 200 and "Browser pools" in body
    assert f'hx-get="/o/acme/pools/{pool["id"]}/?part=pool-detail"' in body and 'hx-trigger="load"' in body
    assert not [r for r in tenant.requests() if r["path"].startswith("/browser_pools/")]
    part = url(f"{pool['id']}/?part=pool-detail")
    failed = (await viewer_client.get(part, headers={"HX-Request": "true"})).content.decode()
    assert "did not answer within 0.5 s" in failed and ">Retry</a>" in failed
    loaded = (await viewer_client.get(part, headers={"HX-Request": "true"})).content.decode()
    assert loaded.lstrip().startswith('<div id="pool-detail"') and "warm" in loaded
    # the leases load on their own, after the pool
    assert f'hx-get="/o/acme/pools/{pool["id"]}/?part=pool-leases"' in loaded


async def test_it_says_a_deferred_pool_does_not_exist(viewer_client, tenant):
    response = await viewer_client.get(url("pool_nope/?part=pool-detail"), headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert "Not found" in response.content.decode()


async def test_it_flushes_idle_browsers(operator_client, tenant, pool):
    tenant.advance(600)
    page = (await operator_client.get(url(f"{pool['id']}/"))).content.decode()
    assert "Flush idle browsers…" in page and "leased browsers are untouched" in page
    response = await operator_client.post(url(f"{pool['id']}/flush/"))
    assert response.status_code == 302
    assert tenant.call("GET", f"/browser_pools/{pool['id']}").json()["available_count"] == 0
    assert await AuditLog.objects.filter(action="pool.flush", target_id=pool["id"]).aexists()


async def test_it_refuses_actions_to_viewers(viewer_client, tenant, pool):
    for action in ("acquire", "release", "flush"):
        assert (await viewer_client.post(url(f"{pool['id']}/{action}/"))).status_code == 403
    assert [r for r in tenant.requests() if r["path"].startswith(f"/browser_pools/{pool['id']}/")] == []


# --- edit ---------------------------------------------------------------------------------------


async def test_it_prefills_the_edit_form(admin_client, tenant):
    made = make_pool(
        tenant,
        name="pre",
        viewport={"width": 1440, "height": 900, "refresh_rate": 25},
        start_url="https://a.example/",
    )
    body = (await admin_client.get(url(f"{made['id']}/edit/"))).content.decode()
    assert 'value="pre"' in body
    assert '<option value="1440x900@25" selected>' in body
    assert 'value="https://a.example/"' in body


async def test_it_sends_only_what_changed(admin_client, tenant):
    made = make_pool(tenant, name="patch-me", start_url="https://a.example/")
    form = {"name": "patch-me", "size": "4", "fill_rate_per_minute": "25", "timeout_seconds": "600"}
    form.update(
        {"viewport": "", "start_url": "", "headless": "on", "telemetry_control": "", "telemetry_enabled": ""}
    )
    form.update({"telemetry_connection": "", "telemetry_system": "", "telemetry_captcha": ""})
    response = await admin_client.post(url(f"{made['id']}/edit/"), form)
    assert response.status_code == 302, response.content.decode()[:3000]
    config = tenant.call("GET", f"/browser_pools/{made['id']}").json()["browser_pool_config"]
    assert config["headless"] is True
    assert "start_url" not in config  # cleared
    entry = await AuditLog.objects.aget(action="pool.update")
    assert entry.detail == "headless, start_url"


async def test_it_discards_idle_browsers_when_asked(admin_client, tenant, pool):
    tenant.advance(600)
    form = {
        "name": "warm",
        "size": "4",
        "fill_rate_per_minute": "25",
        "timeout_seconds": "600",
        "viewport": "",
    }
    response = await admin_client.post(url(f"{pool['id']}/edit/"), {**form, "discard_all_idle": "on"})
    assert response.status_code == 302
    assert tenant.call("GET", f"/browser_pools/{pool['id']}").json()["available_count"] == 0


async def test_it_says_when_nothing_changed(admin_client, tenant, pool):
    form = {
        "name": "warm",
        "size": "4",
        "fill_rate_per_minute": "25",
        "timeout_seconds": "600",
        "viewport": "",
    }
    response = await admin_client.post(url(f"{pool['id']}/edit/"), form)
    assert "Nothing changed." in response.content.decode()
    assert sent(tenant, "PATCH", f"/browser_pools/{pool['id']}") == []


async def test_it_refuses_edit_to_operators(operator_client, pool):
    assert (await operator_client.get(url(f"{pool['id']}/edit/"))).status_code == 403


# --- delete -------------------------------------------------------------------------------------


async def test_it_confirms_then_deletes_an_idle_pool(admin_client, tenant, pool):
    confirm = (await admin_client.get(url(f"{pool['id']}/delete/"))).content.decode()
    assert "Delete pool" in confirm
    response = await admin_client.post(url(f"{pool['id']}/delete/"))
    assert response.status_code == 302
    assert tenant.call("GET", f"/browser_pools/{pool['id']}").status_code == 404
    assert await AuditLog.objects.filter(action="pool.delete", outcome="ok").aexists()


async def test_it_spells_out_forcing_a_delete_while_leased(admin_client, tenant, pool):
    tenant.advance(600)
    tenant.call("POST", f"/browser_pools/{pool['id']}/acquire", json={})
    confirm = (await admin_client.get(url(f"{pool['id']}/delete/"))).content.decode()
    assert "1 browser is leased right now" in confirm
    assert "loses the session" in confirm
    refused = await admin_client.post(url(f"{pool['id']}/delete/"))
    assert refused.status_code == 200
    assert "browsers are leased from this pool" in refused.content.decode()
    assert await AuditLog.objects.filter(action="pool.delete", outcome="error").aexists()
    forced = await admin_client.post(url(f"{pool['id']}/delete/"), {"force": "on"})
    assert forced.status_code == 302
    assert tenant.call("GET", f"/browser_pools/{pool['id']}").status_code == 404


async def test_it_refuses_delete_to_operators(operator_client, tenant, pool):
    assert (await operator_client.post(url(f"{pool['id']}/delete/"))).status_code == 403
    assert tenant.call("GET", f"/browser_pools/{pool['id']}").status_code == 200


# --- not found, outsiders, service errors --------------------------------------------------------


async def test_it_answers_404_for_an_unknown_pool(viewer_client, admin_client):
    assert (await viewer_client.get(url("pool_missing/"))).status_code == 404
    assert (await admin_client.get(url("pool_missing/edit/"))).status_code == 404


async def test_it_hides_the_org_from_outsiders(outsider_client, pool):
    assert (await outsider_client.get(url())).status_code == 404
    assert (await outsider_client.get(url(f"{pool['id']}/"))).status_code == 404


async def test_it_shows_a_banner_when_the_service_fails(viewer_client, tenant):
    tenant.fault(method="GET", path="^/browser_pools$", status=500, count=1)
    response = await viewer_client.get(url())
    assert response.status_code in (502, 503)
    assert "Traceback" not in response.content.decode()


async def test_it_shows_a_failed_poll_in_place_and_keeps_polling(viewer_client, tenant, pool):
    tenant.fault(method="GET", path="^/browser_pools$", status=500, count=1)
    response = await viewer_client.get(url(), headers={"HX-Request": "true", "HX-Target": "pools-live"})
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="pools-live" class="deferred deferred-failed"')
    assert 'hx-get="/o/acme/pools/?part=pools-live" hx-trigger="poll" data-poll="3"' in body
    again = await viewer_client.get(url("?part=pools-live"), headers={"HX-Request": "true"})
    assert again.content.decode().lstrip().startswith('<section id="pools-live"')


async def test_it_starts_a_new_pool_with_the_telemetry_of_a_new_session(admin_client):
    """A pool and a session begin alike: telemetry on, the operational categories plus console, network
    and page (console.web.forms.DEFAULT_TELEMETRY_CATEGORIES)."""
    pool = (await admin_client.get("/o/acme/pools/new/")).content.decode()
    session = (await admin_client.get("/o/acme/browsers/new/")).content.decode()

    def checked(body, pattern):
        return set(re.findall(pattern, body))

    pool_on = checked(pool, r'<input type="checkbox" name="telemetry_(\w+)"[^>]*checked')
    session_on = checked(session, r'<input type="checkbox" name="categories" value="(\w+)"[^>]*checked')
    assert "enabled" in pool_on
    assert (
        pool_on - {"enabled"}
        == session_on
        == {"control", "connection", "system", "captcha", "console", "network", "page"}
    )
