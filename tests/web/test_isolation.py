"""A non-member gets 404 on every URL of an organization, partials included.

The URL list comes from the resolver, so every page other engineers add under /o/<org_slug>/ is
covered without touching this file.
"""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db(transaction=True)

PARAM = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")
DUMMY = {"int": "1", "slug": "x", "str": "x", "uuid": "00000000-0000-0000-0000-000000000001", "path": "x"}


def walk(patterns, prefix=""):
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from walk(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            yield route


def org_routes():
    return sorted(
        {route for route in walk(get_resolver().url_patterns) if route.startswith("o/<slug:org_slug>/")}
    )


def fill(route: str, org_slug: str) -> str:
    def value(match):
        if match["name"] == "org_slug":
            return org_slug
        return DUMMY.get(match["converter"] or "str", "x")

    return "/" + PARAM.sub(value, route).lstrip("^").rstrip("$")


def test_it_finds_the_org_pages():
    routes = org_routes()
    assert "o/<slug:org_slug>/" in routes
    assert "o/<slug:org_slug>/members/" in routes


@pytest.mark.parametrize("route", org_routes())
async def test_it_hides_every_org_url_from_outsiders(route, org, outsider_client):
    url = fill(route, org.slug)
    for headers in ({}, {"HX-Request": "true", "HX-Target": "x"}):
        response = await outsider_client.get(url, headers=headers)
        if response.status_code == 405:
            response = await outsider_client.post(url, headers=headers)
        assert response.status_code == 404, f"{url} answered {response.status_code} to a non-member"


@pytest.mark.parametrize("route", org_routes())
async def test_it_sends_anonymous_users_to_login(route, org):
    from django.test import AsyncClient

    url = fill(route, org.slug)
    response = await AsyncClient().get(url)
    if response.status_code == 405:
        response = await AsyncClient().post(url)
    assert response.status_code in (302, 404), f"{url} answered {response.status_code} anonymously"
