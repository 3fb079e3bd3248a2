"""Apps pages: list with search, filters and bounded paging; detail with schemas; the invoke form."""

import json

import pytest

from console.accounts.models import AuditLog
from tests.sandbox_fixtures import new_tenant


@pytest.fixture
def tenant(sandbox_url):
    """The demo tenant: web-scraper, checkout-bot and report-builder with several versions."""
    return new_tenant(sandbox_url, demo=True)


def url(path=""):
    return f"/o/acme/apps/{path}"


INVOKE = url("web-scraper/versions/1.2.0/actions/get-page-title/invoke/")


def posted_invocations(tenant):
    return [r for r in tenant.requests() if r["method"] == "POST" and r["path"] == "/invocations"]


async def test_it_lists_app_versions_with_search_and_filters(viewer_client):
    body = (await viewer_client.get(url())).content.decode()
    assert "web-scraper" in body and "checkout-bot" in body and "report-builder" in body
    assert "get-page-title" in body
    searched = (await viewer_client.get(url(), {"query": "check"})).content.decode()
    assert "checkout-bot" in searched and "web-scraper" not in searched
    version = (
        await viewer_client.get(url(), {"app_name": "web-scraper", "version": "1.1.0"})
    ).content.decode()
    assert "1.1.0" in version and "1.2.0" not in version


async def test_it_serves_the_table_partial_to_htmx(viewer_client):
    response = await viewer_client.get(url(), headers={"HX-Request": "true", "HX-Target": "apps-table"})
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="apps-table">')
    assert "<html" not in body


async def test_it_corrects_out_of_range_paging_instead_of_forwarding_it(viewer_client, tenant):
    response = await viewer_client.get(url(), {"limit": "500", "offset": "-4"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "between 1 and 100" in body and "0 or more" in body
    assert [r["status"] for r in tenant.requests() if r["path"] == "/apps"] == [200]
    pages = await viewer_client.get(url(), {"limit": "2"})
    assert 'rel="next"' in pages.content.decode()


async def test_it_shows_versions_env_var_names_and_readable_schemas(viewer_client):
    response = await viewer_client.get(url("web-scraper/"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "1.2.0" in body and "1.1.0" in body
    assert "SCRAPER_API_TOKEN" in body and "demo-token" not in body
    assert "wait_until" in body and "networkidle" in body and "text (uri)" in body
    assert "Page to open" in body
    assert "Invoke…" not in body  # viewers read only
    older = (await viewer_client.get(url("web-scraper/versions/1.1.0/"))).content.decode()
    assert "Version 1.1.0" in older


async def test_it_offers_invoke_to_operators(operator_client):
    body = (await operator_client.get(url("web-scraper/"))).content.decode()
    assert INVOKE in body


@pytest.mark.parametrize(
    "path", ["nope/", "web-scraper/versions/1.0.0/", "web-scraper/versions/9/actions/x/invoke/"]
)
async def test_it_answers_404_for_what_is_not_deployed(operator_client, path):
    assert (await operator_client.get(url(path))).status_code == 404


async def test_it_generates_the_form_from_the_input_schema(operator_client):
    body = (
        await operator_client.get(url("checkout-bot/versions/1.0.0/actions/place-order/invoke/"))
    ).content.decode()
    assert 'type="text" name="input-p__sku"' in body
    assert 'name="input-p__quantity"' in body and 'min="1"' in body and 'max="10"' in body
    assert '<option value="standard" selected>' in body and "overnight" in body
    assert 'type="checkbox" name="input-p__gift_wrap"' in body
    assert "One item per line" in body  # coupon_codes, a list of text


async def test_it_starts_an_async_invocation_and_goes_to_its_page(operator_client, tenant, operator):
    response = await operator_client.post(
        INVOKE,
        {"input-p__url": "https://example.com", "input-p__wait_until": "load", "input-p__timeout_ms": "5000"},
    )
    assert response.status_code == 302
    (started,) = tenant.call("GET", "/invocations", params={"limit": 1}).json()
    assert response["Location"] == f"/o/acme/invocations/{started['id']}/"
    assert json.loads(started["payload"]) == {
        "url": "https://example.com",
        "wait_until": "load",
        "timeout_ms": 5000,
    }
    entry = await AuditLog.objects.aget(action="invocation.create")
    assert (entry.target_id, entry.actor_id, entry.outcome) == (started["id"], operator.pk, "ok")


async def test_it_answers_htmx_with_a_client_redirect(operator_client):
    response = await operator_client.post(
        INVOKE,
        {"input-p__url": "https://example.com"},
        headers={"HX-Request": "true", "HX-Target": "invoke-form"},
    )
    assert response.status_code == 200
    assert response["HX-Redirect"].startswith("/o/acme/invocations/inv_")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "This field is required"),
        ({"input-p__url": "not a url"}, "must be a full URL"),
        (
            {"input-p__url": "https://example.com", "input-p__timeout_ms": "5"},
            "greater than or equal to 1000",
        ),
        (
            {"input-p__url": "https://example.com", "input-async_timeout_seconds": "5"},
            "greater than or equal to 10",
        ),
    ],
)
async def test_it_validates_before_sending_anything(operator_client, tenant, data, message):
    response = await operator_client.post(INVOKE, data)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert posted_invocations(tenant) == []


async def test_it_checks_patterns_and_nested_json_against_the_schema(operator_client, tenant):
    order = url("checkout-bot/versions/1.0.0/actions/place-order/invoke/")
    body = (
        await operator_client.post(order, {"input-p__sku": "abc", "input-p__quantity": "1"})
    ).content.decode()
    assert "sku must match" in body
    report = url("report-builder/versions/latest/actions/build-report/invoke/")
    bad = {"input-p__format": "csv", "input-p__period": '{"from": "2025-02-30"}'}
    assert "period.from must be a date" in (await operator_client.post(report, bad)).content.decode()
    broken = {"input-p__format": "csv", "input-p__period": "{oops"}
    assert "Not valid JSON" in (await operator_client.post(report, broken)).content.decode()
    deep = {"input-p__format": "csv", "input-p__period": "[" * 100_000}
    response = await operator_client.post(report, deep)
    assert response.status_code == 200 and "too deeply nested" in response.content.decode()
    assert posted_invocations(tenant) == []


async def test_it_falls_back_to_raw_json_for_a_schema_it_cannot_render(operator_client, tenant):
    query = url("report-builder/versions/latest/actions/run-query/invoke/")
    page = (await operator_client.get(query)).content.decode()
    assert 'name="input-payload"' in page and "cannot be shown as a form" in page
    wrong = await operator_client.post(query, {"input-payload": '{"table": "x"}'})
    assert "matches none of the 2 accepted shapes" in wrong.content.decode()
    assert posted_invocations(tenant) == []
    right = await operator_client.post(query, {"input-payload": '{"sql": "select 1"}'})
    assert right.status_code == 302


async def test_it_shows_the_services_own_refusal(operator_client, tenant):
    tenant.fault(
        method="POST", path="^/invocations$", status=400, code="invalid_request", message="quota exhausted"
    )
    response = await operator_client.post(INVOKE, {"input-p__url": "https://example.com"})
    assert response.status_code == 200
    assert "quota exhausted" in response.content.decode()
    assert (await AuditLog.objects.aget(action="invocation.create")).outcome == "error"


async def test_it_explains_a_version_that_went_away(operator_client, tenant):
    tenant.fault(method="POST", path="^/invocations$", status=404, code="not_found", message="version gone")
    response = await operator_client.post(INVOKE, {"input-p__url": "https://example.com"})
    assert "no longer deployed" in response.content.decode()


async def test_it_forbids_viewers_to_invoke(viewer_client, tenant):
    assert (await viewer_client.get(INVOKE)).status_code == 403
    assert (await viewer_client.post(INVOKE, {"input-p__url": "https://example.com"})).status_code == 403
    assert posted_invocations(tenant) == []


async def test_it_hides_the_org_from_outsiders(outsider_client):
    assert (await outsider_client.get(url())).status_code == 404
    assert (await outsider_client.get(INVOKE)).status_code == 404
