"""Single sign-on in Chromium, end to end: the console, a real OpenID Connect provider on loopback (the demo
identity provider, django-oauth-toolkit), the browser going back and forth between them."""

from __future__ import annotations

import secrets

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DEMO_PASSWORD, log_in_with_the_form
from tests.idp import CLIENT_ID, running_idp
from tests.sandbox_fixtures import new_tenant

IDP_PASSWORD = "idp-user-pass-42"


@pytest.fixture(scope="module")
def idp(console_server, tmp_path_factory):
    with running_idp(tmp_path_factory.mktemp("idp"), [f"{console_server.url}/sso/callback/"]) as idp:
        yield idp


@pytest.fixture
def sso_team(console_server, idp):
    """A team whose organization signs in ``@<slug>.test`` addresses through the provider."""
    team = console_server.team(new_tenant(console_server.sandbox_url))
    team.domain = f"{team.slug}.test"
    console_server.ask(
        "sso",
        slug=team.slug,
        sso_enabled=True,
        issuer_url=idp.issuer,
        client_id=CLIENT_ID,
        client_secret=idp.client_secret,
        domains=[team.domain],
        default_role="viewer",
        role_claim="groups",
        role_mapping=[["console-admins", "admin"], ["console-operators", "operator"]],
    )
    return team


def person(idp, team, groups=()) -> tuple[str, str]:
    """A new user of the provider with an address of the team's domain: (username, e-mail)."""
    username = "p" + secrets.token_hex(4)
    email = f"{username}@{team.domain}"
    idp.user(username, email=email, password=IDP_PASSWORD, groups=list(groups), active=True)
    return username, email


def sign_out_here(page) -> None:
    """Forget every cookie once the page has left the console: a request of the console page still on its
    way would otherwise come back with a token cookie of its own, after the sign-in page's, and the
    sign-in form would post a token that no longer matches (the console's "This form has expired")."""
    page.goto("about:blank")
    page.context.clear_cookies()


def sso_sign_in(page, console, email: str, username: str, password: str = IDP_PASSWORD) -> None:
    """From the console's login page, through the provider's login form and back."""
    page.goto(f"{console.url}/login/")
    page.get_by_label("Work e-mail").fill(email)
    page.get_by_role("button", name="Sign in with SSO").click()
    expect(page.get_by_role("heading", name="Demo identity provider")).to_be_visible()
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def test_it_makes_the_membership_with_the_mapped_role_and_follows_the_claim(
    console_server, idp, sso_team, browser
):
    username, email = person(idp, sso_team, groups=["console-operators"])
    context = browser.new_context()
    page = context.new_page()
    sso_sign_in(page, console_server, email, username)
    expect(page).to_have_url(sso_team.url())
    assert console_server.ask("member", slug=sso_team.slug, email=email)["role"] == "operator"
    first = context

    # The provider moves them to the admins' group: the next sign-in makes them admin.
    idp.user(username, groups=["console-admins"])
    context = browser.new_context()
    page = context.new_page()
    sso_sign_in(page, console_server, email, username)
    expect(page).to_have_url(sso_team.url())
    assert console_server.ask("member", slug=sso_team.slug, email=email)["role"] == "admin"
    # Two browsers signed in: this one signs the other out, whose next page is the login page.
    page.goto(f"{console_server.url}/account/sessions/")
    expect(page.locator("#sessions tbody tr")).to_have_count(2)
    page.get_by_role("button", name="Sign out all other sessions").click()
    expect(page.locator("#sessions tbody tr")).to_have_count(1)
    expect(page.locator("#sessions tbody")).to_contain_text("this browser")
    other = first.new_page()
    other.goto(sso_team.url())
    expect(other).to_have_url(f"{console_server.url}/login/?next={sso_team.path()}")
    first.close()
    context.close()


def test_it_refuses_a_disabled_user(console_server, idp, sso_team, browser_page):
    page = browser_page
    username, email = person(idp, sso_team)
    sso_sign_in(page, console_server, email, username)
    expect(page).to_have_url(sso_team.url())
    console_user = console_server.ask("member", slug=sso_team.slug, email=email)["username"]

    # Disabled in the console: the provider still vouches, the console refuses.
    console_server.ask("set_active", username=console_user, active=False)
    sign_out_here(page)
    sso_sign_in(page, console_server, email, username)
    expect(page.locator("#sso-failed")).to_contain_text("this account is disabled")
    page.goto(sso_team.url())
    expect(page).to_have_url(f"{console_server.url}/login/?next={sso_team.path()}")

    # Disabled in the provider: it refuses the sign-in itself; nothing reaches the console.
    console_server.ask("set_active", username=console_user, active=True)
    idp.user(username, active=False)
    sign_out_here(page)
    sso_sign_in(page, console_server, email, username)
    expect(page.get_by_role("heading", name="Demo identity provider")).to_be_visible()
    assert page.url.startswith(idp.url)


def test_it_refuses_an_answer_whose_state_was_changed(console_server, idp, sso_team, browser_page):
    page = browser_page
    username, email = person(idp, sso_team)

    # The provider answers with the state it was sent: one changed on the way comes back changed (a
    # redirect chain is not routed, so the authorization request is where it is changed).
    def tamper(route):
        route.continue_(url=route.request.url.replace("state=", "state=x"))

    page.route("**/o/authorize/**", tamper)
    sso_sign_in(page, console_server, email, username)
    expect(page.locator("#sso-failed")).to_contain_text("did not start here")
    page.unroute("**/o/authorize/**")
    assert console_server.ask("member", slug=sso_team.slug, email=email)["role"] is None
    page.goto(sso_team.url())
    expect(page).to_have_url(f"{console_server.url}/login/?next={sso_team.path()}")


def test_it_refuses_an_id_token_with_another_nonce(console_server, idp, sso_team, browser_page):
    page = browser_page
    username, email = person(idp, sso_team)
    idp.fault(nonce="an-id-token-of-another-sign-in")
    try:
        sso_sign_in(page, console_server, email, username)
        expect(page.locator("#sso-failed")).to_contain_text("nonce")
    finally:
        idp.fault()
    assert console_server.ask("member", slug=sso_team.slug, email=email)["role"] is None
    page.goto(sso_team.url())
    expect(page).to_have_url(f"{console_server.url}/login/?next={sso_team.path()}")


def test_it_refuses_the_password_when_single_sign_on_is_required(console_server, idp, sso_team, browser_page):
    page = browser_page
    console_server.ask("sso", slug=sso_team.slug, sso_required=True, break_glass=sso_team.user("admin"))
    page.goto(f"{console_server.url}/login/")
    page.get_by_label("Username or e-mail").fill(sso_team.user("operator"))
    page.get_by_label("Password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("form .errorlist")).to_contain_text("requires single sign-on")
    page.goto(sso_team.url())
    expect(page).to_have_url(f"{console_server.url}/login/?next={sso_team.path()}")

    # The break-glass admin still signs in with the password.
    page.goto(f"{console_server.url}/login/")
    log_in_with_the_form(page, console_server.url, sso_team.user("admin"), then=sso_team.path())


def test_it_ends_the_membership_when_the_provider_gives_no_role_any_more(
    console_server, idp, sso_team, browser
):
    console_server.ask("sso", slug=sso_team.slug, default_role="")  # only the mapping gives a role
    username, email = person(idp, sso_team, groups=["console-operators"])
    context = browser.new_context()
    sso_sign_in(context.new_page(), console_server, email, username)
    assert console_server.ask("member", slug=sso_team.slug, email=email)["role"] == "operator"
    context.close()

    idp.user(username, groups=[])  # removed from the group in the identity provider
    context = browser.new_context()
    page = context.new_page()
    sso_sign_in(page, console_server, email, username)
    expect(page.locator("#sso-failed")).to_contain_text("gives")
    assert console_server.ask("member", slug=sso_team.slug, email=email)["role"] is None
    context.close()
