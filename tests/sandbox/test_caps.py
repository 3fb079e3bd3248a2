"""Sandbox conformance: project caps are enforced with 429 and the shared error body."""

import pytest

from tests.sandbox.test_invocations import (
    deployed,  # noqa: F401  (fixture)
    invoke,
)


def cap(tenant, **limits):
    response = tenant.call("PATCH", "/org/projects/default/limits", json=limits)
    assert response.status_code == 200, response.text


def refusal(response, code: str, field: str) -> dict:
    assert response.status_code == 429, response.text
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    assert body["code"] == code
    assert [d["code"] for d in body["details"]] == [field]
    return body


def test_it_refuses_a_session_over_the_projects_concurrent_sessions_cap(tenant):
    cap(tenant, max_concurrent_sessions=2)
    first = tenant.call("POST", "/browsers", json={"headless": True})
    assert first.status_code == 201, first.text
    assert tenant.call("POST", "/browsers", json={"headless": True}).status_code == 201
    over = tenant.call("POST", "/browsers", json={"headless": True})
    body = refusal(over, "concurrent_sessions_limit_exceeded", "max_concurrent_sessions")
    assert "2 of 2" in body["details"][0]["message"]
    assert len(tenant.call("GET", "/browsers").json()) == 2
    # Ending one frees a slot.
    assert tenant.call("DELETE", f"/browsers/{first.json()['session_id']}").status_code == 204
    assert tenant.call("POST", "/browsers", json={"headless": True}).status_code == 201


def test_it_counts_pool_reservations_against_the_sessions_cap(tenant):
    cap(tenant, max_concurrent_sessions=5)
    assert tenant.call("POST", "/browser_pools", json={"size": 4}).status_code == 201
    assert tenant.call("POST", "/browsers", json={"headless": True}).status_code == 201
    refusal(
        tenant.call("POST", "/browsers", json={"headless": True}),
        "concurrent_sessions_limit_exceeded",
        "max_concurrent_sessions",
    )
    over = tenant.call("POST", "/browser_pools", json={"size": 1})
    refusal(over, "concurrent_sessions_limit_exceeded", "max_concurrent_sessions")


def test_it_applies_the_org_default_when_the_project_has_no_cap(tenant):
    tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 1})
    assert tenant.call("POST", "/browsers", json={"headless": True}).status_code == 201
    over = tenant.call("POST", "/browsers", json={"headless": True})
    assert (
        "default_project_max_concurrent_sessions"
        in refusal(over, "concurrent_sessions_limit_exceeded", "max_concurrent_sessions")["message"]
    )


def test_it_removes_the_cap_with_zero(tenant):
    cap(tenant, max_concurrent_sessions=1)
    tenant.call("POST", "/browsers", json={"headless": True})
    cap(tenant, max_concurrent_sessions=0)
    assert tenant.call("POST", "/browsers", json={"headless": True}).status_code == 201


def test_it_refuses_an_invocation_over_the_concurrent_invocations_cap(deployed):  # noqa: F811
    cap(deployed, max_concurrent_invocations=1)
    assert invoke(deployed).status_code == 202
    refusal(invoke(deployed), "concurrent_invocations_limit_exceeded", "max_concurrent_invocations")
    deployed.advance(30)  # the first one finished
    assert invoke(deployed).status_code == 202


def test_it_reports_org_usage_in_the_org_limits(tenant):
    tenant.call("POST", "/browsers", json={"headless": True})
    tenant.call("POST", "/browser_pools", json={"size": 3})
    limits = tenant.call("GET", "/org/limits").json()
    assert limits["concurrent_sessions_used"] == 4
    assert limits["concurrent_sessions_available"] == limits["max_concurrent_sessions"] - 4
    assert (limits["vaults_used"], limits["max_vaults"]) == (0, 20)


@pytest.mark.parametrize(
    ("feature", "expected"), [("search", {"enabled": True}), ("vaults", {"enabled": True})]
)
def test_it_reports_the_newer_entitlements(tenant, feature, expected):
    entitlements = tenant.call("GET", "/org/entitlements").json()
    assert entitlements["features"][feature] == expected
    assert entitlements["limits"]["max_vaults"] == 20
