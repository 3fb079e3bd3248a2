"""Sandbox conformance: proxies (notes §11; spec: Proxies, States and transitions)."""

import pytest

SECRET = "hunter2-proxy-secret"
PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"


def create(tenant, **body):
    response = tenant.call("POST", "/proxies", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def custom(tenant, **config):
    return create(
        tenant,
        type="custom",
        name="corp",
        config={"host": "proxy.example.net", "port": 3128, **config},
    )


def details(response) -> dict:
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    return {d["code"]: d["message"] for d in body["details"]}


@pytest.mark.parametrize(
    ("kind", "config", "expected"),
    [
        ("isp", {}, {"country": "US"}),
        ("isp", {"country": "gb"}, {"country": "GB"}),
        (
            "residential",
            {
                "country": "US",
                "city": "new_york",
                "state": "ny",
                "zip": "10001",
                "asn": "7922",
                "os": "macos",
            },
            {
                "country": "US",
                "city": "new_york",
                "state": "NY",
                "zip": "10001",
                "asn": "AS7922",
                "os": "macos",
            },
        ),
        ("mobile", {"country": "US", "state": "CA", "city": "t-mobile"}, {"country": "US", "state": "CA"}),
    ],
)
def test_it_creates_each_managed_type_with_its_config(tenant, kind, config, expected):
    proxy = create(tenant, type=kind, name=f"{kind}-1", config=config)
    assert proxy["id"].startswith("proxy_")
    assert proxy["type"] == kind
    assert proxy["protocol"] == "https"
    assert proxy["bypass_hosts"] == []
    assert proxy["config"].items() >= expected.items()
    assert "status" not in proxy and "last_checked" not in proxy


def test_it_never_returns_the_custom_password_or_bundle(tenant):
    proxy = custom(tenant, username="svc", password=SECRET, ca_bundle=PEM)
    assert proxy["config"] == {
        "host": "proxy.example.net",
        "port": 3128,
        "username": "svc",
        "has_password": True,
        "has_ca_bundle": True,
    }
    for response in (
        tenant.call("GET", f"/proxies/{proxy['id']}"),
        tenant.call("GET", "/proxies"),
        tenant.call("PATCH", f"/proxies/{proxy['id']}", json={"name": "corp-2"}),
        tenant.call("POST", f"/proxies/{proxy['id']}/check"),
        tenant.call("POST", f"/proxies/{proxy['id']}/check", json={"url": "https://example.com"}),
    ):
        assert response.status_code == 200
        assert SECRET not in response.text
        assert "BEGIN CERTIFICATE" not in response.text


def test_it_says_a_custom_proxy_without_password_has_none(tenant):
    assert custom(tenant)["config"]["has_password"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "type"),
        ({"type": "satellite"}, "type"),
        ({"type": "isp", "protocol": "socks5"}, "protocol"),
        ({"type": "isp", "config": {"country": "USA"}}, "config.country"),
        ({"type": "isp", "config": {"city": "paris"}}, "config.city"),
        ({"type": "residential", "config": {"city": "new york", "country": "US"}}, "config.city"),
        ({"type": "residential", "config": {"city": "paris"}}, "config.city"),
        ({"type": "residential", "config": {"os": "linux"}}, "config.os"),
        ({"type": "residential", "config": {"country": "FR", "zip": "75001"}}, "config.zip"),
        ({"type": "mobile", "config": {"country": "DE", "state": "BY"}}, "config.state"),
        ({"type": "custom", "config": {"port": 8080}}, "config.host"),
        ({"type": "custom", "config": {"host": "p.example.com"}}, "config.port"),
        ({"type": "custom", "config": {"host": "p.example.com", "port": 70000}}, "config.port"),
        ({"type": "custom", "config": {"host": "bad host", "port": 80}}, "config.host"),
        (
            {"type": "custom", "config": {"host": "p.example.com", "port": 80, "ca_bundle": "x"}},
            "config.ca_bundle",
        ),
        ({"type": "isp", "bypass_hosts": "example.com"}, "bypass_hosts"),
        ({"type": "isp", "name": ""}, "name"),
        ({"type": "isp", "region": "eu"}, "region"),
    ],
)
def test_it_refuses_bad_create_bodies_with_field_details(tenant, body, field):
    response = tenant.call("POST", "/proxies", json=body)
    assert response.status_code == 400
    assert field in details(response)


def test_it_allows_duplicate_names_and_renames_only(tenant):
    first = create(tenant, type="isp", name="shared")
    second = create(tenant, type="isp", name="shared")
    assert first["id"] != second["id"]
    listed = tenant.call("GET", "/proxies", params={"name": "shared"}).json()
    assert [p["id"] for p in listed] == [first["id"], second["id"]]

    renamed = tenant.call("PATCH", f"/proxies/{second['id']}", json={"name": "shared"})
    assert renamed.status_code == 200
    refused = tenant.call("PATCH", f"/proxies/{second['id']}", json={"name": "x", "type": "mobile"})
    assert refused.status_code == 400
    assert "type" in details(refused)
    assert tenant.call("PATCH", f"/proxies/{second['id']}", json={}).status_code == 400


def test_it_lists_by_query_over_name_host_ip_and_exact_id(tenant):
    dc = create(tenant, type="isp", name="frankfurt-isp")
    corp = custom(tenant)
    checked = tenant.call("POST", f"/proxies/{dc['id']}/check").json()

    def query(q):
        return [p["id"] for p in tenant.call("GET", "/proxies", params={"query": q}).json()]

    assert query("FRANKFURT") == [dc["id"]]
    assert query("example.net") == [corp["id"]]
    assert query(checked["ip_address"]) == [dc["id"]]
    assert query(corp["id"]) == [corp["id"]]
    assert query(corp["id"][:-2]) == []


def test_it_pages_with_the_service_headers(tenant):
    for n in range(5):
        create(tenant, type="isp", name=f"dc-{n}")
    page = tenant.call("GET", "/proxies", params={"limit": 2, "offset": 2})
    assert [p["name"] for p in page.json()] == ["dc-2", "dc-3"]
    assert page.headers["X-Has-More"] == "true"
    assert page.headers["X-Next-Offset"] == "4"


def test_it_soft_deletes_and_keeps_the_record_for_references(tenant):
    proxy = create(tenant, type="isp", name="gone")
    assert tenant.call("DELETE", f"/proxies/{proxy['id']}").status_code == 204
    assert tenant.call("GET", f"/proxies/{proxy['id']}").status_code == 404
    assert tenant.call("GET", "/proxies").json() == []
    assert tenant.call("POST", f"/proxies/{proxy['id']}/check").status_code == 404
    assert tenant.call("PATCH", f"/proxies/{proxy['id']}", json={"name": "x"}).status_code == 404
    assert tenant.call("DELETE", f"/proxies/{proxy['id']}").status_code == 404


def test_it_keeps_soft_deleted_records_in_the_sandbox_state():
    from console.sandbox.app import assemble
    from console.sandbox.core.state import Registry
    from console.sandbox.resources import proxies

    assemble()  # the sandbox's objects, in-process: wired as the app wires them
    sandbox = Registry().create()
    record = proxies.create(sandbox, sandbox.default_project_id, {"type": "isp"})
    record["_deleted"] = True
    # Sessions keep their proxy_id: the record still exists, it is only no longer live.
    assert sandbox.table("proxies")[record["id"]]["type"] == "isp"
    assert proxies.get_live(sandbox, sandbox.default_project_id, record["id"]) is None


def test_it_checks_health_and_records_status_ip_and_time(tenant):
    proxy = create(tenant, type="isp", name="dc")
    tenant.set_clock("2026-03-01T12:00:00Z")
    checked = tenant.call("POST", f"/proxies/{proxy['id']}/check")
    assert checked.status_code == 200
    body = checked.json()
    assert body["status"] == "available"
    assert body["last_checked"].startswith("2026-03-01T12:0")
    stored = tenant.call("GET", f"/proxies/{proxy['id']}").json()
    assert (stored["status"], stored["ip_address"], stored["last_checked"]) == (
        "available",
        body["ip_address"],
        body["last_checked"],
    )


def test_it_keeps_a_stable_exit_ip_for_datacenter_and_isp_and_rotates_residential(tenant):
    dc = create(tenant, type="isp")
    resi = create(tenant, type="residential")
    dc_ips = {tenant.call("POST", f"/proxies/{dc['id']}/check").json()["ip_address"] for _ in range(3)}
    resi_ips = {tenant.call("POST", f"/proxies/{resi['id']}/check").json()["ip_address"] for _ in range(3)}
    assert len(dc_ips) == 1
    assert len(resi_ips) == 3


@pytest.mark.parametrize(
    "config", [{"host": "gone.invalid", "port": 3128}, {"host": "p.example.net", "port": 1}]
)
def test_it_reports_an_unreachable_custom_proxy_as_unavailable(tenant, config):
    proxy = create(tenant, type="custom", config=config)
    body = tenant.call("POST", f"/proxies/{proxy['id']}/check").json()
    assert body["status"] == "unavailable"
    assert "ip_address" not in body
    assert "last_checked" in body


def test_it_uses_a_public_custom_host_ip_as_the_exit_ip(tenant):
    proxy = create(tenant, type="custom", config={"host": "8.8.4.4", "port": 8080})
    assert tenant.call("POST", f"/proxies/{proxy['id']}/check").json()["ip_address"] == "8.8.4.4"


def test_it_does_not_store_the_outcome_of_a_check_with_a_target(tenant):
    proxy = create(tenant, type="isp")
    before = tenant.call("POST", f"/proxies/{proxy['id']}/check").json()
    tenant.advance(3600)
    targeted = tenant.call("POST", f"/proxies/{proxy['id']}/check", json={"url": "https://shop.invalid/"})
    assert targeted.status_code == 200
    assert targeted.json()["status"] == "unavailable"
    stored = tenant.call("GET", f"/proxies/{proxy['id']}").json()
    assert stored["status"] == "available"
    assert stored["last_checked"] == before["last_checked"]


def test_it_tests_the_target_only_for_stable_exit_types(tenant):
    isp = create(tenant, type="isp")
    mobile = create(tenant, type="mobile")
    target = {"url": "http://unreachable.invalid/login"}
    assert tenant.call("POST", f"/proxies/{isp['id']}/check", json=target).json()["status"] == "unavailable"
    # Residential and mobile exits vary: the check validates config and connectivity only.
    assert tenant.call("POST", f"/proxies/{mobile['id']}/check", json=target).json()["status"] == "available"
    reachable = tenant.call("POST", f"/proxies/{isp['id']}/check", json={"url": "https://example.com/"})
    assert reachable.json()["status"] == "available"


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/",
        "example.com",
        "http://localhost:8000/",
        "http://127.0.0.1/",
        "http://10.1.2.3/",
        "http://192.168.0.10/",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://metadata.google.internal/",
        "http://printer.local/",
        "http://intranet/",
    ],
)
def test_it_refuses_a_target_that_is_not_public_http(tenant, url):
    proxy = create(tenant, type="isp")
    response = tenant.call("POST", f"/proxies/{proxy['id']}/check", json={"url": url})
    assert response.status_code == 400
    assert "url" in details(response)
    assert "status" not in tenant.call("GET", f"/proxies/{proxy['id']}").json()


def test_it_scopes_proxies_to_the_project(tenant):
    other = tenant.call("POST", "/org/projects", json={"name": "other"}).json()
    proxy = create(tenant, type="isp", name="mine")
    headers = {"X-Kernel-Project-Id": other["id"]}
    assert tenant.call("GET", "/proxies", headers=headers).json() == []
    assert tenant.call("GET", f"/proxies/{proxy['id']}", headers=headers).status_code == 404


def test_it_seeds_every_type_in_the_demo(demo_tenant):
    proxies = demo_tenant.call("GET", "/proxies", params={"limit": 100}).json()
    # No retired datacenter record: the SDK's proxies.list would refuse the whole list (tests that need
    # one create it, ``legacy`` below).
    assert {p["type"] for p in proxies} == {"isp", "residential", "mobile", "custom"}
    assert {p["status"] for p in proxies if "status" in p} == {"available", "unavailable"}
    assert "demo-proxy-password" not in demo_tenant.call("GET", "/proxies").text


def test_it_refuses_to_create_a_retired_datacenter_proxy(tenant):
    response = tenant.call("POST", "/proxies", json={"type": "datacenter", "name": "dc"})
    assert response.status_code == 400
    assert "isp, residential, mobile, custom" in details(response)["type"]
    assert tenant.call("GET", "/proxies").json() == []


def legacy(tenant, name="old-dc"):
    response = tenant.call(
        "POST", "/_sandbox/proxies/legacy", json={"name": name, "config": {"country": "DE"}}
    )
    assert response.status_code == 201, response.text
    return response.json()


def test_it_keeps_showing_checking_renaming_and_deleting_a_legacy_datacenter_proxy(tenant):
    old = legacy(tenant)
    assert old["type"] == "datacenter"
    assert [p["id"] for p in tenant.call("GET", "/proxies").json()] == [old["id"]]
    assert tenant.call("GET", f"/proxies/{old['id']}").json()["config"] == {"country": "DE"}
    assert tenant.call("POST", f"/proxies/{old['id']}/check").json()["status"] == "available"
    assert tenant.call("PATCH", f"/proxies/{old['id']}", json={"name": "older"}).status_code == 200
    assert tenant.call("DELETE", f"/proxies/{old['id']}").status_code == 204
    assert tenant.call("GET", "/proxies").json() == []


def test_it_reads_checks_renames_and_deletes_a_proxy_by_name(tenant):
    proxy = create(tenant, type="isp", name="by-name")
    assert tenant.call("GET", "/proxies/by-name").json()["id"] == proxy["id"]
    assert tenant.call("POST", "/proxies/by-name/check").json()["id"] == proxy["id"]
    assert tenant.call("PATCH", "/proxies/by-name", json={"name": "renamed"}).json()["id"] == proxy["id"]
    assert tenant.call("DELETE", "/proxies/renamed").status_code == 204
    assert tenant.call("GET", "/proxies/renamed").status_code == 404


def test_it_refuses_an_ambiguous_name_and_says_to_use_the_id(tenant):
    create(tenant, type="isp", name="twin")
    create(tenant, type="mobile", name="twin")
    response = tenant.call("GET", "/proxies/twin")
    assert response.status_code == 409
    assert response.json()["code"] == "proxy_name_ambiguous"
