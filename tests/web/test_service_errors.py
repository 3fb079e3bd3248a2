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
