"""Sandbox conformance: projects, project limits, org limits and the deprecated routes (notes §1)."""

import pytest

from tests.sandbox_fixtures import new_tenant


def error_shape(response):
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    assert isinstance(body["details"], list)
    return body


def create(tenant, name):
    response = tenant.call("POST", "/org/projects", json={"name": name})
    assert response.status_code == 201, response.text
    return response.json()


def test_it_refuses_a_missing_or_unknown_key(tenant):
    import httpx

    missing = httpx.get(f"{tenant.url}/org/projects")
    assert missing.status_code == 401
    assert error_shape(missing)["code"] == "unauthorized"
    unknown = httpx.get(f"{tenant.url}/org/projects", headers={"Authorization": "Bearer nope"})
    assert unknown.status_code == 401
    assert "not valid" in error_shape(unknown)["message"]


def test_it_answers_unknown_routes_with_the_error_body(tenant):
    response = tenant.call("GET", "/no/such/route")
    assert response.status_code == 404
    error_shape(response)


def test_it_creates_gets_renames_and_archives_a_project(tenant):
    project = create(tenant, "checkout")
    assert project["id"].startswith("proj_")
    assert project["status"] == "active"
    assert project["created_at"].endswith("Z")
    by_name = tenant.call("GET", "/org/projects/checkout").json()
    assert by_name["id"] == project["id"]
    renamed = tenant.call("PATCH", f"/org/projects/{project['id']}", json={"name": "checkout-eu"}).json()
    assert renamed["name"] == "checkout-eu"
    archived = tenant.call("PATCH", f"/org/projects/{project['id']}", json={"status": "archived"}).json()
    assert archived["status"] == "archived"


@pytest.mark.parametrize("name", ["", "a/b", "50%", "x" * 256])
def test_it_refuses_a_bad_project_name_with_field_details(tenant, name):
    response = tenant.call("POST", "/org/projects", json={"name": name})
    assert response.status_code == 400
    assert error_shape(response)["details"][0]["code"] == "name"


def test_it_refuses_a_duplicate_name(tenant):
    create(tenant, "dup")
    response = tenant.call("POST", "/org/projects", json={"name": "DUP"})
    assert response.status_code == 409
    assert error_shape(response)["code"] == "project_name_taken"


def test_it_lists_with_name_query_and_paging_headers(tenant):
    for i in range(25):
        create(tenant, f"team-{i:02d}")
    first = tenant.call("GET", "/org/projects", params={"limit": 10})
    assert first.headers["X-Has-More"] == "true"
    assert first.headers["X-Next-Offset"] == "10"
    assert len(first.json()) == 10
    last = tenant.call("GET", "/org/projects", params={"limit": 10, "offset": 20})
    # 25 created + the default project = 26 in all
    assert [p["name"] for p in last.json()] == [f"team-{i:02d}" for i in range(19, 25)]
    assert last.headers["X-Has-More"] == "false"
    assert "X-Next-Offset" not in last.headers
    assert [p["name"] for p in tenant.call("GET", "/org/projects", params={"name": "TEAM-03"}).json()] == [
        "team-03"
    ]
    assert len(tenant.call("GET", "/org/projects", params={"query": "am-1"}).json()) == 10


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"offset": -1}, {"limit": "ten"}])
def test_it_refuses_out_of_range_paging(tenant, params):
    response = tenant.call("GET", "/org/projects", params=params)
    assert response.status_code == 400
    assert error_shape(response)["details"][0]["code"] in params


def test_it_soft_deletes_an_empty_project(tenant):
    project = create(tenant, "empty")
    assert tenant.call("DELETE", f"/org/projects/{project['id']}").status_code == 204
    assert tenant.call("GET", f"/org/projects/{project['id']}").status_code == 404
    assert "empty" not in [p["name"] for p in tenant.call("GET", "/org/projects").json()]


def test_it_never_deletes_the_default_project(tenant):
    response = tenant.call("DELETE", "/org/projects/default")
    assert response.status_code == 409
    assert error_shape(response)["code"] == "project_is_default"


def test_it_scopes_by_the_project_header(tenant):
    create(tenant, "scoped")
    assert tenant.call("GET", "/org/limits", headers={"X-Kernel-Project": "scoped"}).status_code == 200
    missing = tenant.call("GET", "/org/limits", headers={"X-Kernel-Project": "nope"})
    assert missing.status_code == 404
    assert error_shape(missing)["code"] == "project_not_found"


def test_it_reads_and_patches_limits_with_the_contract_rules(tenant):
    project = create(tenant, "limited")
    path = f"/org/projects/{project['id']}/limits"
    assert tenant.call("GET", path).json() == {
        "max_concurrent_sessions": None,
        "max_concurrent_invocations": None,
        "max_pooled_sessions": None,
    }
    set_cap = tenant.call("PATCH", path, json={"max_concurrent_sessions": 12}).json()
    assert set_cap["max_concurrent_sessions"] == 12
    # An omitted field is unchanged.
    other = tenant.call("PATCH", path, json={"max_concurrent_invocations": 3}).json()
    assert other == {
        "max_concurrent_sessions": 12,
        "max_concurrent_invocations": 3,
        "max_pooled_sessions": None,
    }
    # 0 removes the cap.
    removed = tenant.call("PATCH", path, json={"max_concurrent_sessions": 0}).json()
    assert removed["max_concurrent_sessions"] is None
    assert removed["max_concurrent_invocations"] == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_concurrent_sessions": -1}, "max_concurrent_sessions"),
        ({"max_concurrent_sessions": "5"}, "max_concurrent_sessions"),
        ({"max_concurrent_invocations": 10**9}, "max_concurrent_invocations"),
        ({"max_concurrent_sessions": True}, "max_concurrent_sessions"),
        ({"max_pooled_sessions": 4}, "max_pooled_sessions"),
    ],
)
def test_it_refuses_invalid_limits_with_field_details(tenant, body, field):
    project = create(tenant, "strict")
    response = tenant.call("PATCH", f"/org/projects/{project['id']}/limits", json=body)
    assert response.status_code == 400
    assert [d["code"] for d in error_shape(response)["details"]] == [field]
    assert (
        tenant.call("GET", f"/org/projects/{project['id']}/limits").json()["max_concurrent_sessions"] is None
    )


def test_it_serves_deprecated_routes_with_sunset_headers_until_the_sunset(tenant):
    project = create(tenant, "legacy")
    tenant.set_clock("2026-11-23T23:59:00Z")
    before = tenant.call("GET", f"/projects/{project['id']}/limits")
    assert before.status_code == 200
    assert before.headers["Sunset"] == "Tue, 24 Nov 2026 00:00:00 GMT"
    assert before.headers["Deprecation"].startswith("@")
    patched = tenant.call("PATCH", f"/projects/{project['id']}/limits", json={"max_concurrent_sessions": 5})
    assert patched.json()["max_concurrent_sessions"] == 5
    tenant.advance(120)
    for method, path in [
        ("GET", f"/projects/{project['id']}/limits"),
        ("PATCH", f"/projects/{project['id']}/limits"),
        ("DELETE", f"/projects/{project['id']}"),
    ]:
        gone = tenant.call(method, path, json={})
        assert gone.status_code == 410
        assert "/org/projects" in error_shape(gone)["message"]
    assert tenant.call("GET", f"/org/projects/{project['id']}/limits").status_code == 200


def test_it_isolates_tenants(tenant, sandbox_url):
    create(tenant, "mine")
    other = new_tenant(sandbox_url)
    assert "mine" not in [p["name"] for p in other.call("GET", "/org/projects").json()]
    assert other.call("GET", "/org/projects/mine").status_code == 404


def test_it_reports_org_limits_entitlements_and_auth_context(tenant):
    limits = tenant.call("GET", "/org/limits").json()
    assert limits["min_health_check_interval_seconds"] == 300
    patched = tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 30}).json()
    assert patched["default_project_max_concurrent_sessions"] == 30
    assert (
        tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 0}).json()[
            "default_project_max_concurrent_sessions"
        ]
        is None
    )
    assert tenant.call("GET", "/org/entitlements").json()["plan"]["effective_id"] == "ENTERPRISE"
    assert tenant.call("GET", "/auth/context").json()["principal"]["type"] == "api_key"


def test_it_seeds_the_demo_tenant(sandbox_url):
    demo = new_tenant(sandbox_url, demo=True)
    names = [p["name"] for p in demo.call("GET", "/org/projects").json()]
    assert {"default", "checkout-flows", "scraping-prod", "qa-staging"} <= set(names)


def test_it_injects_faults_for_the_next_n_requests(tenant):
    tenant.fault(method="GET", path="^/org/projects$", status=503, count=2, retry_after=1)
    assert tenant.call("GET", "/org/projects").status_code == 503
    second = tenant.call("GET", "/org/projects")
    assert second.status_code == 503
    assert second.headers["Retry-After"] == "1"
    assert tenant.call("GET", "/org/projects").status_code == 200
    assert [r["status"] for r in tenant.requests()] == [503, 503, 200]


def test_it_refuses_to_delete_a_project_holding_a_profile(tenant):
    project = create(tenant, "holds-a-profile")
    scope = {"X-Kernel-Project": project["id"]}
    assert tenant.call("POST", "/profiles", json={"name": "kept"}, headers=scope).status_code == 201
    response = tenant.call("DELETE", f"/org/projects/{project['id']}")
    assert response.status_code == 409
    assert error_shape(response)["code"] == "project_not_empty"
    assert "profiles" in error_shape(response)["message"]


def test_it_counts_open_streams_for_tests_and_benchmarks(tenant):
    import threading

    import httpx

    assert tenant.control("GET", "streams").json() == {}
    started = threading.Event()

    def read():
        headers = {"Authorization": f"Bearer {tenant.api_key}"}
        url = f"{tenant.url}/_sandbox/test_stream?count=3&interval=0.3"
        with httpx.stream("GET", url, headers=headers) as r:
            for _ in r.iter_bytes():
                started.set()

    reader = threading.Thread(target=read)
    reader.start()
    started.wait(5)
    assert tenant.control("GET", "streams").json() == {"/_sandbox/test_stream": 1}
    reader.join(10)
    assert tenant.control("GET", "streams").json() == {}
