"""console.service.apps against the sandbox (spec: App summary, Limits)."""

import pytest

from console.service import Invalid, Service, apps


@pytest.fixture
def demo_service(demo_tenant):
    return Service(base_url=demo_tenant.url, api_key=demo_tenant.api_key, allow_private=True)


async def test_it_reads_app_summaries_with_actions_and_env_var_names(demo_service):
    summary = await apps.get_app_version(demo_service, "web-scraper", "1.2.0")
    assert summary.id.startswith("app_")
    assert summary.deployment.startswith("dep_")
    assert summary.region == "aws.us-east-1a"
    assert summary.env_var_names == ["LOG_LEVEL", "SCRAPER_API_TOKEN", "USER_AGENT"]
    action = summary.action("get-page-title")
    assert action.input_schema["required"] == ["url"]
    assert summary.action("nope") is None


async def test_it_returns_none_for_a_version_that_is_not_served(demo_service):
    assert await apps.get_app_version(demo_service, "web-scraper", "1.0.0") is None


async def test_it_lists_versions_and_searches(demo_service):
    versions = await apps.list_app_versions(demo_service, "web-scraper")
    assert [v.version for v in versions] == ["1.2.0", "1.1.0"]
    page = await apps.list_apps(demo_service, query="report", limit=1)
    assert [a.app_name for a in page.items] == ["report-builder"]
    first = await apps.list_apps(demo_service, limit=2)
    assert (first.has_more, first.next_offset) == (True, 2)


async def test_it_surfaces_the_paging_bounds_as_invalid(demo_service):
    with pytest.raises(Invalid) as caught:
        await apps.list_apps(demo_service, limit=101)
    assert "limit" in caught.value.field_errors
