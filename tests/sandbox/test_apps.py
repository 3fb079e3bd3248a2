"""Sandbox conformance: the app list (spec: App summary, Limits for apps paging; notes §13)."""

import pytest

from tests.sandbox.test_deployments import app_zip, created, error


def test_it_lists_the_app_versions_running_deployments_serve(tenant):
    schemas = {"greet": {"input_schema": {"type": "object", "properties": {"name": {"type": "string"}}}}}
    deployment = created(tenant, app_zip(schemas=schemas), **{"env_vars[TOKEN]": "secret"})
    assert tenant.call("GET", "/apps").json() == []  # still queued
    tenant.advance(10)
    (app,) = tenant.call("GET", "/apps").json()
    assert app["id"].startswith("app_")
    assert (app["app_name"], app["version"], app["region"]) == ("hello-app", "1.0.0", "aws.us-east-1a")
    assert app["deployment"] == deployment["id"]
    assert app["env_vars"] == {"TOKEN": ""}
    greet, add = app["actions"]
    assert greet["name"] == "greet"
    assert greet["input_schema"]["properties"]["name"] == {"type": "string"}
    assert add["input_schema"] == {"type": "object", "additionalProperties": True}


def test_it_keeps_an_app_version_id_across_forced_redeploys(tenant):
    created(tenant)
    tenant.advance(10)
    before = tenant.call("GET", "/apps").json()[0]["id"]
    created(tenant, force="true")
    tenant.advance(10)
    (after,) = tenant.call("GET", "/apps").json()
    assert after["id"] == before


def test_it_filters_by_name_version_and_query(demo_tenant):
    def names(**params):
        response = demo_tenant.call("GET", "/apps", params=params)
        assert response.status_code == 200
        return [(a["app_name"], a["version"]) for a in response.json()]

    everything = names()
    assert ("web-scraper", "1.2.0") in everything
    assert ("web-scraper", "1.0.0") not in everything  # its deployment is stopped
    assert names(app_name="web-scraper") == [("web-scraper", "1.2.0"), ("web-scraper", "1.1.0")]
    assert names(app_name="web-scraper", version="1.1.0") == [("web-scraper", "1.1.0")]
    assert {n for n, _ in names(query="CHECK")} == {"checkout-bot"}


def test_it_pages_with_the_contract_defaults(demo_tenant):
    first = demo_tenant.call("GET", "/apps", params={"limit": 2})
    assert len(first.json()) == 2
    assert (first.headers["X-Has-More"], first.headers["X-Next-Offset"]) == ("true", "2")
    everything = demo_tenant.call("GET", "/apps")
    assert everything.headers["X-Has-More"] == "false"
    assert "X-Next-Offset" not in everything.headers


@pytest.mark.parametrize(
    "params", [{"limit": 0}, {"limit": 101}, {"limit": "many"}, {"offset": -1}, {"offset": "x"}]
)
def test_it_refuses_paging_outside_the_bounds(tenant, params):
    response = tenant.call("GET", "/apps", params=params)
    assert response.status_code == 400
    assert error(response)["details"][0]["code"] in params
