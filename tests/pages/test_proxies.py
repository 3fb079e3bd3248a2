"""Proxies pages: list, create per type, inline rename, soft delete, health checks; no password leaks."""

import pytest

from console.accounts.models import AuditLog

SECRET = "pr0xy-Pa55word-never-shown"


def url(path=""):
    return f"/o/acme/proxies/{path}"


def hx(target):
    return {"HX-Request": "true", "HX-Target": target}


def posts(tenant, path="/proxies"):
    return [
        r
        for r in tenant.requests()
        if r["method"] in ("POST", "PATCH", "DELETE") and r["path"].startswith(path)
    ]


@pytest.fixture
def proxy(tenant):
    return tenant.call("POST", "/proxies", json={"type": "isp", "name": "dc-east"}).json()


@pytest.fixture
def legacy(tenant):
    """A datacenter proxy made before the service retired the type."""
    body = {"name": "old-dc", "config": {"country": "DE"}}
    return tenant.call("POST", "/_sandbox/proxies/legacy", json=body).json()


@pytest.fixture
def custom(tenant):
    body = {
        "type": "custom",
        "name": "corp",
        "config": {"host": "egress.example.net", "port": 3128, "username": "svc", "password": SECRET},
    }
    return tenant.call("POST", "/proxies", json=body).json()


async def test_it_lists_type_name_protocol_status_ip_and_last_check(viewer_client, tenant, proxy, custom):
    tenant.set_clock("2026-04-02T09:30:00Z")
    checked = tenant.call("POST", f"/proxies/{proxy['id']}/check").json()
    body = (await viewer_client.get(url())).content.decode()
    assert "dc-east" in body and "ISP" in body and "https" in body
    assert "available" in body and checked["ip_address"] in body and "2026-04-02 09:30" in body
    assert "corp" in body and "egress.example.net:3128" in body and "not checked" in body
    assert "New proxy" not in body


async def test_it_serves_the_table_partial_and_searches(viewer_client, proxy, custom):
    response = await viewer_client.get(url(), {"q": "egress"}, headers=hx("proxies-table"))
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="proxies-table">')
    assert "corp" in body and "dc-east" not in body


async def test_it_shows_only_the_fields_of_the_chosen_type(admin_client):
    custom = (await admin_client.get(url("new/"), {"type": "custom"})).content.decode()
    for field in ('name="host"', 'name="port"', 'name="username"', 'name="password"', 'name="ca_bundle"'):
        assert field in custom
    assert 'name="country"' not in custom
    dc = (await admin_client.get(url("new/"), {"type": "isp"}, headers=hx("proxy-create"))).content.decode()
    assert dc.lstrip().startswith('<section id="proxy-create"')
    assert 'name="country"' in dc and 'name="host"' not in dc and 'name="city"' not in dc
    resi = (await admin_client.get(url("new/"), {"type": "residential"})).content.decode()
    assert all(f'name="{f}"' in resi for f in ("country", "city", "state", "zip", "asn", "os"))
    mobile = (await admin_client.get(url("new/"), {"type": "mobile"})).content.decode()
    assert 'name="state"' in mobile and 'name="zip"' not in mobile


async def test_it_creates_a_managed_proxy_and_audits_it(admin_client, tenant, admin):
    form = {
        "type": "residential",
        "name": "resi",
        "protocol": "https",
        "country": "us",
        "city": "austin",
        "os": "windows",
    }
    response = await admin_client.post(url("new/"), form)
    assert response.status_code == 302
    created = tenant.call("GET", "/proxies", params={"name": "resi"}).json()[0]
    assert created["config"] == {"country": "US", "city": "austin", "os": "windows"}
    assert response["Location"] == url(f"{created['id']}/")
    entry = await AuditLog.objects.aget(action="proxy.create")
    assert (entry.target_id, entry.actor_id, entry.outcome) == (created["id"], admin.pk, "ok")


async def test_it_never_shows_or_audits_the_custom_password(admin_client, tenant):
    form = {
        "type": "custom",
        "name": "corp",
        "protocol": "http",
        "host": "egress.example.net",
        "port": "3128",
        "username": "svc",
        "password": SECRET,
        "bypass_hosts": "intranet.example.com\n*.corp.example.com",
    }
    created = await admin_client.post(url("new/"), form, headers=hx("proxy-create"))
    assert created.status_code == 200 and created["HX-Redirect"].startswith(url())
    assert SECRET not in created.content.decode()
    record = tenant.call("GET", "/proxies", params={"name": "corp"}).json()[0]
    assert record["config"]["has_password"] is True
    assert record["bypass_hosts"] == ["intranet.example.com", "*.corp.example.com"]
    detail = (await admin_client.get(created["HX-Redirect"])).content.decode()
    assert "write-only" in detail and "egress.example.net" in detail
    # A form that comes back with an error does not echo the password either.
    refused = await admin_client.post(url("new/"), {**form, "port": "70000"})
    for body in (detail, refused.content.decode(), (await admin_client.get(url())).content.decode()):
        assert SECRET not in body
    async for entry in AuditLog.objects.all():
        assert SECRET not in f"{entry.action} {entry.target_id} {entry.detail}"


async def test_it_never_re_renders_a_submitted_ca_bundle(admin_client, tenant):
    bundle = "-----BEGIN CERTIFICATE-----\nMIIBca-bundle-leak-probe\n-----END CERTIFICATE-----"
    form = {
        "type": "custom",
        "protocol": "http",
        "host": "p.example.com",
        "port": "70000",
        "ca_bundle": bundle,
    }
    for headers in ({}, hx("proxy-create")):
        response = await admin_client.post(url("new/"), form, headers=headers)
        body = response.content.decode()
        assert response.status_code == 200 and "1 to 65535" in body
        assert "ca-bundle-leak-probe" not in body and 'name="ca_bundle"' in body
    assert posts(tenant) == []


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"type": "custom", "port": "3128"}, "This field is required"),
        ({"type": "custom", "host": "http://p.example.com", "port": "80"}, "no scheme"),
        ({"type": "custom", "host": "p.example.com", "port": "70000"}, "1 to 65535"),
        ({"type": "custom", "host": "p.example.com", "port": "80", "ca_bundle": "nope"}, "PEM"),
        ({"type": "isp", "country": "USA"}, "two-letter country"),
        ({"type": "residential", "country": "US", "city": "new york"}, "No spaces"),
        ({"type": "residential", "city": "paris"}, "A city needs a country"),
        ({"type": "residential", "country": "FR", "zip": "75001"}, "US proxies only"),
        ({"type": "mobile", "country": "DE", "state": "BY"}, "US mobile proxies only"),
        ({"type": "isp", "bypass_hosts": "ok.example.com bad_host!"}, "Not a host name"),
    ],
)
async def test_it_refuses_bad_input_without_calling_the_service(admin_client, tenant, form, message):
    response = await admin_client.post(url("new/"), {"protocol": "https", **form}, headers=hx("proxy-create"))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert posts(tenant) == []


async def test_it_shows_the_services_own_validation_error(admin_client, tenant):
    tenant.fault(method="POST", path="^/proxies$", status=400, message="this plan has no ISP proxies in GB")
    response = await admin_client.post(url("new/"), {"type": "isp", "protocol": "https", "country": "GB"})
    assert response.status_code == 200
    assert "this plan has no ISP proxies in GB" in response.content.decode()
    assert await AuditLog.objects.filter(action="proxy.create", outcome="error").aexists()


@pytest.mark.parametrize("path", ["new/", "{id}/rename/", "{id}/delete/"])
async def test_it_forbids_viewers_and_operators_to_change_proxies(
    viewer_client, operator_client, proxy, path
):
    target = url(path.format(id=proxy["id"]))
    for client in (viewer_client, operator_client):
        assert (await client.get(target)).status_code == 403
        assert (await client.post(target, {"type": "isp", "name": "x"})).status_code == 403


async def test_it_hides_every_proxy_page_from_outsiders(outsider_client, proxy):
    for path in ("", "new/", f"{proxy['id']}/", f"{proxy['id']}/rename/", f"{proxy['id']}/delete/"):
        assert (await outsider_client.get(url(path))).status_code == 404
    assert (await outsider_client.post(url(f"{proxy['id']}/check/"))).status_code == 404


async def test_it_answers_404_for_an_unknown_proxy(viewer_client):
    assert (await viewer_client.get(url("proxy_nope/"))).status_code == 404


async def test_it_renames_inline_and_allows_duplicate_names(admin_client, tenant, proxy, custom):
    form = await admin_client.get(url(f"{proxy['id']}/rename/"), headers=hx("proxy-name"))
    assert form.content.decode().lstrip().startswith('<div id="proxy-name">')
    assert 'name="name"' in form.content.decode()
    response = await admin_client.post(
        url(f"{proxy['id']}/rename/"), {"name": "corp"}, headers=hx("proxy-name")
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "<h1>corp" in body and "errorlist" not in body
    assert tenant.call("GET", f"/proxies/{proxy['id']}").json()["name"] == "corp"
    assert [p["id"] for p in tenant.call("GET", "/proxies", params={"name": "corp"}).json()] == [
        proxy["id"],
        custom["id"],
    ]
    assert await AuditLog.objects.filter(action="proxy.rename", target_id=proxy["id"]).aexists()
    blank = await admin_client.post(url(f"{proxy['id']}/rename/"), {"name": "  "}, headers=hx("proxy-name"))
    assert "This field is required" in blank.content.decode() or "cannot be blank" in blank.content.decode()


async def test_it_renames_without_javascript(admin_client, tenant, proxy):
    page = await admin_client.get(url(f"{proxy['id']}/rename/"))
    assert "<html" in page.content.decode() and 'name="name"' in page.content.decode()
    response = await admin_client.post(url(f"{proxy['id']}/rename/"), {"name": "renamed"})
    assert response.status_code == 302
    assert tenant.call("GET", f"/proxies/{proxy['id']}").json()["name"] == "renamed"


async def test_it_confirms_a_soft_delete_and_says_sessions_are_not_modified(admin_client, tenant, proxy):
    confirm = (await admin_client.get(url(f"{proxy['id']}/delete/"))).content.decode()
    assert "Sessions that reference this proxy are not modified" in confirm
    assert posts(tenant, "/proxies/") == []
    response = await admin_client.post(url(f"{proxy['id']}/delete/"))
    assert response.status_code == 302 and response["Location"] == url()
    assert tenant.call("GET", f"/proxies/{proxy['id']}").status_code == 404
    assert await AuditLog.objects.filter(action="proxy.delete", target_id=proxy["id"]).aexists()


async def test_it_lets_an_operator_check_health_and_refreshes_the_panel(operator_client, tenant, proxy):
    page = (await operator_client.get(url(f"{proxy['id']}/"))).content.decode()
    assert "Run check" in page and "stable IP" in page
    response = await operator_client.post(
        url(f"{proxy['id']}/check/"), {"url": ""}, headers=hx("proxy-check")
    )
    body = response.content.decode()
    stored = tenant.call("GET", f"/proxies/{proxy['id']}").json()
    assert body.lstrip().startswith('<section class="card" id="proxy-check">')
    assert "Available" in body and stored["ip_address"] in body
    assert "proxy-checked" in response["HX-Trigger"]
    health = await operator_client.get(url(f"{proxy['id']}/"), headers=hx("proxy-health"))
    assert stored["ip_address"] in health.content.decode()
    entry = await AuditLog.objects.aget(action="proxy.check")
    assert entry.target_id == proxy["id"] and "available" in entry.detail


async def test_it_reports_a_target_check_without_changing_the_recorded_health(operator_client, tenant, proxy):
    response = await operator_client.post(
        url(f"{proxy['id']}/check/"), {"url": "https://shop.invalid/cart"}, headers=hx("proxy-check")
    )
    body = response.content.decode()
    assert "Unavailable" in body and "could not be reached" in body
    assert "recorded health status was not changed" in body
    assert "HX-Trigger" not in response
    assert "status" not in tenant.call("GET", f"/proxies/{proxy['id']}").json()


async def test_it_explains_that_residential_checks_validate_configuration_only(operator_client, tenant):
    resi = tenant.call("POST", "/proxies", json={"type": "mobile", "name": "m"}).json()
    page = (await operator_client.get(url(f"{resi['id']}/"))).content.decode()
    assert "validates the configuration and connectivity only" in page
    response = await operator_client.post(url(f"{resi['id']}/check/"), {"url": "https://shop.invalid/"})
    body = response.content.decode()
    assert "<html" in body and "The target itself was not tested" in body


async def test_it_reports_an_unreachable_custom_proxy(operator_client, tenant):
    dead = tenant.call(
        "POST", "/proxies", json={"type": "custom", "config": {"host": "gone.invalid", "port": 8080}}
    ).json()
    body = (
        await operator_client.post(url(f"{dead['id']}/check/"), headers=hx("proxy-check"))
    ).content.decode()
    assert "Unavailable" in body and "did not answer" in body


@pytest.mark.parametrize(
    "target", ["ftp://example.com", "http://localhost:8080/", "http://10.0.0.1/", "http://db.internal/"]
)
async def test_it_refuses_a_private_target_without_calling_the_service(
    operator_client, tenant, proxy, target
):
    response = await operator_client.post(
        url(f"{proxy['id']}/check/"), {"url": target}, headers=hx("proxy-check")
    )
    assert response.status_code == 200
    assert "errorlist" in response.content.decode()
    assert posts(tenant, "/proxies/") == []


async def test_it_forbids_viewers_to_check(viewer_client, tenant, proxy):
    page = (await viewer_client.get(url(f"{proxy['id']}/"))).content.decode()
    assert "Run check" not in page and "Rename" not in page
    assert (await viewer_client.post(url(f"{proxy['id']}/check/"))).status_code == 403
    assert posts(tenant, "/proxies/") == []


async def test_it_shows_a_failed_search_in_place_of_the_list_with_a_retry(viewer_client, tenant):
    tenant.fault(method="GET", path="^/proxies$", status=503, count=3)
    response = await viewer_client.get(url(), {"q": "x"}, headers=hx("proxies-table"))
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="proxies-table" class="deferred deferred-failed"')
    assert 'hx-get="/o/acme/proxies/?part=proxies-table&amp;q=x"' in body and ">Retry</a>" in body
    assert "Traceback" not in body


async def test_it_offers_the_current_types_and_defaults_to_isp(admin_client):
    body = (await admin_client.get(url("new/"))).content.decode()
    assert 'name="type" value="isp"' in body
    assert "?type=datacenter" not in body
    for kind in ("isp", "residential", "mobile", "custom"):
        assert f"?type={kind}" in body


async def test_it_refuses_a_datacenter_create_without_calling_the_service(admin_client, tenant):
    response = await admin_client.post(url("new/"), {"type": "datacenter", "name": "dc", "protocol": "https"})
    assert response.status_code == 200
    assert "can no longer be created" in response.content.decode()
    assert posts(tenant) == []


async def test_it_shows_checks_and_deletes_a_legacy_datacenter_proxy(admin_client, tenant, legacy):
    listing = (await admin_client.get(url())).content.decode()
    assert "old-dc" in listing and "Datacenter" in listing
    detail = await admin_client.get(url(f"{legacy['id']}/"))
    assert detail.status_code == 200
    assert "retired" in detail.content.decode()
    assert (await admin_client.post(url(f"{legacy['id']}/check/"))).status_code == 200
    confirm = await admin_client.get(url(f"{legacy['id']}/delete/"))
    assert confirm.status_code == 200
    assert (await admin_client.post(url(f"{legacy['id']}/delete/"))).status_code == 302
    assert tenant.call("GET", "/proxies").json() == []


async def test_it_renders_a_record_with_an_unknown_type_and_fields_raw(viewer_client, tenant):
    record = {"id": "proxy_future1", "type": "satellite", "name": "sky", "status": "degraded", "orbit": "leo"}
    import json

    tenant.fault(method="GET", path="^/proxies$", status=200, body=json.dumps([record]))
    listing = await viewer_client.get(url())
    assert listing.status_code == 200
    assert "Satellite" in listing.content.decode() and "degraded" in listing.content.decode()
    tenant.fault(method="GET", path="^/proxies/proxy_future1$", status=200, body=json.dumps(record))
    detail = await viewer_client.get(url("proxy_future1/"))
    assert detail.status_code == 200
    assert "sky" in detail.content.decode()
