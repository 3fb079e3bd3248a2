"""ServiceErrorMiddleware: service failures become a banner (htmx) or an error page, never a traceback."""

import pytest
from django.test import RequestFactory
from django_htmx.middleware import HtmxDetails

from console.service import errors
from console.web.middleware import ServiceErrorMiddleware


def request_for(org, htmx=False):
    headers = {"HX-Request": "true"} if htmx else {}
    request = RequestFactory().get("/o/acme/", headers=headers)
    request.htmx = HtmxDetails(request)
    request.org = org
    request.memberships = []
    from django.contrib.auth.models import AnonymousUser

    request.user = AnonymousUser()
    return request


async def handle(request, error):
    middleware = ServiceErrorMiddleware(lambda r: None)
    return await middleware.process_exception(request, error)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("error", "status", "text"),
    [
        (errors.Unavailable("upstream down", request_id="req_1"), 503, "Service unavailable"),
        (errors.Unauthorized("bad key", status=401), 502, "rejected this organization&#x27;s API key"),
        (errors.RateLimited("slow down", status=429), 503, "rate limiting"),
        (errors.Conflict("busy", status=409), 502, "busy"),
    ],
)
async def test_it_renders_an_error_page(org, error, status, text):
    response = await handle(request_for(org), error)
    assert response.status_code == status
    html = response.content.decode()
    assert text in html
    assert "Traceback" not in html
    assert org.api_key not in html


@pytest.mark.django_db
async def test_it_says_what_the_service_answered_or_why_nothing_came(org):
    """A 5xx's own message (a browser that did not answer in time, a busy service) tells the operator
    whether waiting helps; so does the client's reason when nothing answered. Both bounded in length."""
    busy = errors.Unavailable("the recording did not answer in time; try again", status=503, code="busy")
    html = (await handle(request_for(org), busy)).content.decode()
    assert "The service answered 503: the recording did not answer in time; try again." in html
    timeout = errors.Unavailable("could not connect to http://svc.test within 5 s")
    html = (await handle(request_for(org), timeout)).content.decode()
    assert "The service did not answer (could not connect to http://svc.test within 5 s); try again." in html
    bare = (await handle(request_for(org), errors.Unavailable(status=502))).content.decode()
    assert "The service answered 502; try again." in bare
    long = (await handle(request_for(org), errors.Unavailable("x" * 5000, status=503))).content.decode()
    assert "x" * 300 in long and "x" * 301 not in long


@pytest.mark.django_db
async def test_it_links_to_settings_for_a_revoked_key(org):
    response = await handle(request_for(org), errors.Unauthorized("bad key", status=401))
    assert 'href="/o/acme/settings/"' in response.content.decode()


@pytest.mark.django_db
async def test_it_retargets_htmx_requests_to_the_banner(org):
    response = await handle(request_for(org, htmx=True), errors.Unavailable("down", request_id="req_9"))
    assert response.status_code == 200
    assert response["HX-Retarget"] == "#banner"
    assert response["HX-Reswap"] == "innerHTML"
    html = response.content.decode()
    assert html.lstrip().startswith('<div class="banner banner-error">')
    assert "req_9" in html


async def test_it_ignores_other_exceptions():
    assert await handle(request_for(None), ValueError("x")) is None


# --- a 200 whose body is not what the contract promises: the same banner as a 5xx -----------------

DETAIL_PAGES = [
    ("/o/acme/proxies/p1/", "^/proxies/p1$"),
    ("/o/acme/pools/p1/", "^/browser_pools/p1$"),
    ("/o/acme/invocations/i1/", "^/invocations/i1$"),
    ("/o/acme/deployments/d1/", "^/deployments/d1$"),
    ("/o/acme/browsers/b1/", "^/browsers/b1$"),
    ("/o/acme/credentials/c1/", "^/credentials/c1$"),
    ("/o/acme/auth/a1/", "^/auth/connections/a1$"),
]
LIST_PAGES = [
    ("/o/acme/proxies/", "^/proxies$"),
    ("/o/acme/projects/", "^/org/projects$"),
    ("/o/acme/deployments/", "^/deployments$"),
]
NOT_AN_OBJECT = [
    '"text"',
    "[1, 2]",
    '[{"name": "x"}]',
    "3",
    "{}",
    '{"name": "no id"}',
    "not json",
    "[" * 5000,
]
NOT_A_LIST = ['{"items": []}', "[1, 2]", '[{"name": "no id"}]', '"text"', "not json"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("page", "path"), DETAIL_PAGES)
async def test_it_shows_a_malformed_answer_like_a_5xx(admin_client, tenant, page, path):
    for body in NOT_AN_OBJECT:
        tenant.control("DELETE", "faults")
        tenant.fault(method="GET", path=path, status=200, body=body, count=None)
        response = await admin_client.get(page)
        html = response.content.decode()
        assert response.status_code == 503, body
        assert "Service unavailable" in html and "Traceback" not in html
        assert "Request id: <code>req_" in html


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("page", "path"), LIST_PAGES)
async def test_it_shows_a_malformed_list_like_a_5xx(admin_client, tenant, page, path):
    for body in NOT_A_LIST:
        tenant.control("DELETE", "faults")
        tenant.fault(method="GET", path=path, status=200, body=body, count=None)
        response = await admin_client.get(page)
        assert response.status_code == 503, body
        assert "Service unavailable" in response.content.decode()


@pytest.mark.django_db(transaction=True)
async def test_it_puts_a_malformed_answer_in_place_of_the_list_for_htmx(admin_client, tenant):
    tenant.fault(method="GET", path="^/proxies$", status=200, body="[1]")
    response = await admin_client.get(
        "/o/acme/proxies/", headers={"HX-Request": "true", "HX-Target": "proxies-table"}
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="proxies-table" class="deferred deferred-failed" role="alert">')
    assert "Service unavailable" in body and "Traceback" not in body
