"""Error pages: designed, inside the console's layout, never Django's debug pages (even with DEBUG on)."""

import pytest
from django.test import AsyncClient

from console.web import search

DEBUG_PAGE_MARKERS = ("URLconf", "Django tried these URL patterns", "Traceback", "DEBUG = True")


def assert_designed(body: str, heading: str) -> None:
    assert f"<h1>{heading}</h1>" in body
    for marker in DEBUG_PAGE_MARKERS:
        assert marker not in body


@pytest.fixture(params=[True, False], ids=["debug", "no-debug"])
def debug(request, settings):
    settings.DEBUG = request.param
    return request.param


async def test_it_shows_a_missing_page_inside_the_layout(viewer_client, debug):
    response = await viewer_client.get("/o/acme/no-such-page/")
    assert response.status_code == 404
    body = response.content.decode()
    assert_designed(body, "Not found")
    # The member's sidebar is there, so the way back is one click.
    assert 'aria-label="Sections"' in body and 'href="/o/acme/browsers/"' in body


async def test_it_shows_a_missing_resource_inside_the_layout(viewer_client, debug):
    response = await viewer_client.get("/o/acme/credentials/no-such-credential/")
    assert response.status_code == 404
    body = response.content.decode()
    assert_designed(body, "Not found")
    assert 'href="/o/acme/credentials/"' in body


async def test_it_reveals_nothing_of_an_org_to_a_non_member(outsider_client, debug):
    response = await outsider_client.get("/o/acme/no-such-page/")
    assert response.status_code == 404
    body = response.content.decode()
    assert_designed(body, "Not found")
    assert "/o/acme/" not in body and "Acme" not in body


async def test_it_shows_a_forbidden_page_inside_the_layout(viewer_client, debug):
    response = await viewer_client.get("/o/acme/audit/")
    assert response.status_code == 403
    body = response.content.decode()
    assert_designed(body, "Not allowed")
    assert 'aria-label="Sections"' in body


async def test_it_shows_a_designed_server_error_even_with_debug(viewer_client, monkeypatch, settings):
    settings.DEBUG = True

    def broken(request, query):
        raise RuntimeError("a bug with a secret-ish detail")

    monkeypatch.setattr(search, "_pages", broken)
    viewer_client.raise_request_exception = False
    response = await viewer_client.get("/o/acme/search/", {"q": "x"})
    assert response.status_code == 500
    body = response.content.decode()
    assert_designed(body, "Something went wrong")
    assert "secret-ish" not in body


async def test_it_shows_a_missing_page_to_anonymous_visitors(async_client, settings, transactional_db):
    settings.DEBUG = True
    response = await async_client.get("/nowhere/")
    assert response.status_code == 404
    assert_designed(response.content.decode(), "Not found")


@pytest.mark.django_db
async def test_it_says_a_form_has_expired_when_its_csrf_token_no_longer_matches(debug):
    """Signing in or out in another tab changes the token: the form's next post is refused with the
    console's words (nothing changed, reload and send again), not Django's page for developers."""
    client = AsyncClient(enforce_csrf_checks=True)
    await client.get("/login/")  # the token's cookie
    response = await client.post(
        "/login/", {"username": "a", "password": "b", "csrfmiddlewaretoken": "x" * 64}
    )
    assert response.status_code == 403
    body = response.content.decode()
    assert_designed(body, "This form has expired")
    assert "Nothing was changed" in body and "CSRF verification failed" not in body
