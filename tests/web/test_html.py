"""Every page and partial of the console is well-formed, accessible HTML (the checks: tests/web/html_check.py).

The walk is the isolation test's (tests/web/test_isolation.py): every route under /o/<org>/ comes from the
resolver, with the real ids of a tenant holding the sandbox's demo data plus one of everything, asked as an
admin for the page and as htmx for its partial. Then the forms come back with their validation errors, the
markup most likely to go wrong: a field's error list inside the field's paragraph was such a defect.
"""

import re
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.core import signing
from django.test import AsyncClient
from django.utils import timezone

from console.accounts.models import Invite, hash_token
from console.accounts.views import INVITE_SALT
from tests.conftest import PASSWORD
from tests.sandbox_fixtures import new_tenant
from tests.web.html_check import problems
from tests.web.test_isolation import fill, org_routes, real_ids, seed

pytestmark = pytest.mark.django_db(transaction=True)

HX = {"HX-Request": "true"}


@pytest.fixture(scope="module")
def demo_seeded(sandbox_url):
    tenant = new_tenant(sandbox_url, demo=True)
    return tenant, seed(tenant, "acme")


@pytest.fixture
def tenant(demo_seeded):
    return demo_seeded[0]


def is_html(response) -> bool:
    return not response.streaming and response["Content-Type"].startswith("text/html")


def check(response, url: str, *, fragment: bool = False) -> None:
    html = response.content.decode()
    found = problems(html, fragment=fragment)
    assert found == [], f"{url}{' (htmx)' if fragment else ''}:\n" + "\n".join(found)


def self_refreshing(html: str, path: str) -> list[str]:
    """Ids of the page's elements that fetch their own partial from this same URL (their htmx target)."""
    targets = []
    for tag in re.finditer(r"<[a-z]+\b[^>]*>", html):
        text = tag.group(0)
        ident = re.search(r'\bid="([^"]+)"', text)
        get = re.search(r'\bhx-get="([^"]+)"', text)
        if ident and get and get.group(1).split("?")[0] == path:
            targets.append(ident.group(1))
    return targets


def test_it_finds_problems_in_broken_markup():
    broken = (
        '<form><p class="field"><label for="a">A</label><input id="a" name="a">'
        '<ul class="errorlist"><li>Required</li></ul></p>'
        '<input name="b"><label for="nowhere">X</label><span id="a"></span>'
        '<form></form><a href="/"><a href="/x">x</a></a></form>'
    )
    found = "\n".join(problems(broken))
    assert "<ul.errorlist> (line 1) inside <p.field>" in found
    assert "<input[name=b> (line 1) has no label" in found
    assert '<label for="nowhere">' in found
    assert 'id="a" appears 2 times' in found
    assert "inside another form" in found
    assert "inside another link" in found


@pytest.mark.parametrize("route", org_routes())
async def test_it_serves_valid_html_on_every_org_page(route, org, admin, admin_client, demo_seeded):
    url = fill(route, org.slug, await sync_to_async(real_ids)(demo_seeded, org))
    response = await admin_client.get(url)
    if response.status_code == 405 or not is_html(response):
        pytest.skip(f"{url} serves no page ({response.status_code} {response.get('Content-Type')})")
    check(response, url)
    page = response.content.decode()
    for target in ["x", *self_refreshing(page, url)]:
        partial = await admin_client.get(url, headers={**HX, "HX-Target": target})
        if is_html(partial):
            check(partial, f"{url} #{target}", fragment=True)


async def test_it_serves_valid_html_on_the_pages_outside_an_org(client, org, admin):
    await Invite.objects.acreate(
        org=org,
        email="new@example.com",
        token_hash=hash_token("t0ken"),
        expires_at=timezone.now() + timedelta(days=1),
    )
    link = signing.TimestampSigner(salt=INVITE_SALT).sign("t0ken")
    for url in ("/login/", f"/invite/{link}/", "/no-such-page/"):
        check(await AsyncClient().get(url), url)
    logged_in = AsyncClient()
    await logged_in.alogin(username=admin.username, password=PASSWORD)
    for url in ("/account/password/", "/", "/no-such-page/"):
        check(await logged_in.get(url, follow=True), url)
