"""Every page and partial of the console is well-formed, accessible HTML (checks: tests/web/html_check.py).

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
from django.urls import Resolver404, resolve
from django.utils import timezone

from console.accounts.models import Invite, hash_token
from console.members.views import INVITE_SALT
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


# Bad input for every form that validates what people type, by route: each comes back with its errors.
BAD_INPUT = {
    "o/<slug:org_slug>/projects/new/": {"name": ""},
    "o/<slug:org_slug>/projects/<str:project_id>/rename/": {"name": ""},
    "o/<slug:org_slug>/projects/<str:project_id>/limits/": {"max_concurrent_sessions": "-3"},
    "o/<slug:org_slug>/profiles/new/": {"name": "no spaces allowed?"},
    "o/<slug:org_slug>/profiles/<str:profile_id>/rename/": {"name": ""},
    "o/<slug:org_slug>/pools/new/": {"size": "-1", "chrome_policy": "{not json"},
    "o/<slug:org_slug>/pools/<str:pool_id>/edit/": {"size": "", "viewport": "custom", "viewport_width": "x"},
    "o/<slug:org_slug>/pools/<str:pool_id>/acquire/": {"timeout_seconds": "-5", "start_url": "not a url"},
    "o/<slug:org_slug>/pools/<str:pool_id>/release/": {"session_id": ""},
    "o/<slug:org_slug>/proxies/new/?type=custom": {"type": "custom", "port": "x"},
    "o/<slug:org_slug>/proxies/<str:proxy_id>/rename/": {"name": ""},
    "o/<slug:org_slug>/proxies/<str:proxy_id>/check/": {"url": "not a url"},
    "o/<slug:org_slug>/extensions/new/": {"name": "x"},
    "o/<slug:org_slug>/credentials/new/": {"name": "", "domain": ""},
    "o/<slug:org_slug>/credentials/<str:credential_id>/edit/": {"name": "", "totp_action": "replace"},
    "o/<slug:org_slug>/auth/new/": {"domain": "", "health_check_interval": "x", "credential_item": "bad"},
    "o/<slug:org_slug>/auth/<str:connection_id>/settings/": {
        "health_checks": "on",
        "health_check_interval": "x",
    },
    "o/<slug:org_slug>/telemetry_destinations/new/": {"name": "", "endpoint": "not a url"},
    "o/<slug:org_slug>/telemetry_destinations/<str:destination_id>/": {"name": "", "endpoint": "not a url"},
    "o/<slug:org_slug>/api_keys/": {"name": "", "expire_in_days": "-1"},
    "o/<slug:org_slug>/api_keys/<str:key_id>/rename/": {"name": ""},
    "o/<slug:org_slug>/api_keys/<str:key_id>/rotate/": {"expire_in_days": "-1"},
    "o/<slug:org_slug>/vaults/": {"name": ""},
    "o/<slug:org_slug>/vaults/<str:vault_id>/": {"key": "", "fields_spec": "{not json"},
    "o/<slug:org_slug>/vaults/<str:vault_id>/items/<str:key>/": {"fields_spec": "{not json"},
    "o/<slug:org_slug>/credential_providers/new/": {"name": "", "token": ""},
    "o/<slug:org_slug>/credential_providers/<str:provider_id>/": {"name": ""},
    "o/<slug:org_slug>/browsers/new/": {"timeout_seconds": "1", "start_url": "not a url"},
    "o/<slug:org_slug>/browsers/<str:session_id>/processes/": {"command": ""},
    "o/<slug:org_slug>/browsers/<str:session_id>/processes/exec/": {"exec-command": ""},
    "o/<slug:org_slug>/browsers/<str:session_id>/processes/<str:process_id>/stdin/": {"text": ""},
    "o/<slug:org_slug>/browsers/<str:session_id>/files/mkdir/": {"path": "relative"},
    "o/<slug:org_slug>/browsers/<str:session_id>/files/move/": {"src_path": "/home/kernel", "dest_path": ""},
    "o/<slug:org_slug>/browsers/<str:session_id>/files/upload/": {"directory": "relative"},
    "o/<slug:org_slug>/browsers/<str:session_id>/files/upload-zip/": {"dest_path": "relative"},
    "o/<slug:org_slug>/browsers/<str:session_id>/files/watch/": {"path": "relative"},
    "o/<slug:org_slug>/browsers/<str:session_id>/replays/start/": {"framerate": "0"},
    "o/<slug:org_slug>/browsers/<str:session_id>/tools/curl/": {"url": "not a url"},
    "o/<slug:org_slug>/browsers/<str:session_id>/computer/click/": {"click-x": "x"},
    "o/<slug:org_slug>/apps/<str:app_name>/versions/<str:version>/actions/<str:action_name>/invoke/": {
        "input-async_timeout_seconds": "-1"
    },
    "o/<slug:org_slug>/deployments/new/": {"version": ""},
    "o/<slug:org_slug>/members/invite/": {"email": "not an address", "role": "nobody"},
    "o/<slug:org_slug>/settings/": {"name": "", "service_base_url": "not a url"},
    "o/<slug:org_slug>/settings/metrics/": {"name": " "},
    "o/<slug:org_slug>/alerts/rules/new/": {
        "name": "",
        "kind": "capacity",
        "threshold": "0",
        "for_seconds": "-1",
    },
    "o/<slug:org_slug>/alerts/channels/new/": {
        "name": "",
        "kind": "webhook",
        "url": "http://169.254.169.254/",
    },
    "o/<slug:org_slug>/settings/sign-in/": {
        "sso_enabled": "on",
        "issuer_url": "not a url",
        "role_mapping": "x",
    },
}


def test_it_knows_every_bad_input_route():
    ids = dict.fromkeys(re.findall(r"<(?:\w+:)?(\w+)>", " ".join(BAD_INPUT)), "x")
    assert [route for route in BAD_INPUT if not resolves(fill(route, "acme", ids))] == []


def resolves(url: str) -> bool:
    try:
        resolve(url.split("?")[0])
    except Resolver404:
        return False
    return True


def htmx_target(html: str, url: str) -> str | None:
    """The id the page's form posting to ``url`` swaps its answer into (what htmx sends as HX-Target)."""
    for tag in re.finditer(r"<form\b[^>]*>", html):
        post = re.search(r'\bhx-post="([^"]+)"', tag.group(0))
        target = re.search(r'\bhx-target="#([^"]+)"', tag.group(0))
        if post and target and post.group(1).replace("&amp;", "&") == url:
            return target.group(1)
    return None


@pytest.mark.parametrize("route", BAD_INPUT)
async def test_it_serves_valid_html_on_every_form_with_errors(route, org, admin, admin_client, demo_seeded):
    url = fill(route, org.slug, await sync_to_async(real_ids)(demo_seeded, org))
    response = await admin_client.post(url, BAD_INPUT[route])
    shows_errors(response, url)
    check(response, url)
    target = htmx_target(response.content.decode(), url)
    if target:  # the same through htmx, as the form sends it
        partial = await admin_client.post(url, BAD_INPUT[route], headers={**HX, "HX-Target": target})
        shows_errors(partial, url)
        check(partial, f"{url} #{target}", fragment=True)


def shows_errors(response, url: str) -> None:
    html = response.content.decode()
    assert response.status_code in (200, 400, 422), f"{url}: {response.status_code}"
    assert 'aria-invalid="true"' in html or "errorlist" in html, f"{url} shows no error:\n{html[:3000]}"


async def test_it_serves_valid_html_on_the_forms_outside_an_org_with_errors(org, admin):
    await Invite.objects.acreate(
        org=org, email="", token_hash=hash_token("t0ken"), expires_at=timezone.now() + timedelta(days=1)
    )
    link = signing.TimestampSigner(salt=INVITE_SALT).sign("t0ken")
    for url, data in (
        ("/login/", {"username": admin.username, "password": "wrong"}),
        (f"/invite/{link}/", {"username": "", "password1": "a", "password2": "b"}),
    ):
        response = await AsyncClient().post(url, data)
        assert "errorlist" in response.content.decode(), url
        check(response, url)
    logged_in = AsyncClient()
    await logged_in.alogin(username=admin.username, password=PASSWORD)
    response = await logged_in.post("/account/password/", {"old_password": "x", "new_password1": "a"})
    assert 'aria-invalid="true"' in response.content.decode()
    check(response, "/account/password/")
