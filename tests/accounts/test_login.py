import re

import pytest
from django.test import Client

from tests.conftest import PASSWORD, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user():
    return make_user("dana")


def login(client: Client, username: str, password: str = PASSWORD):
    return client.post("/login/", {"username": username, "password": password})


def test_it_logs_in_with_the_username(user):
    client = Client()
    response = login(client, "dana")
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(user.pk)


def test_it_logs_in_with_the_email(user):
    client = Client()
    response = login(client, "dana@example.com")
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(user.pk)


def test_it_refuses_a_wrong_password(user):
    response = login(Client(), "dana", "wrong")
    assert response.status_code == 200
    assert b"correct username" in response.content


def test_it_hashes_passwords_with_argon2(settings):
    from console import settings as console_settings

    # The tests' fast hasher (tests/conftest.py) stands aside: the console's own list is what is checked.
    settings.PASSWORD_HASHERS = console_settings.PASSWORD_HASHERS
    assert make_user("erin").password.startswith("argon2")


def test_it_logs_out_on_post(user):
    client = Client()
    client.force_login(user, backend="console.accounts.backends.UsernameOrEmailBackend")
    response = client.post("/logout/")
    assert response.status_code == 302
    assert "_auth_user_id" not in client.session


def test_it_changes_the_password(user):
    client = Client()
    client.force_login(user, backend="console.accounts.backends.UsernameOrEmailBackend")
    response = client.post(
        "/account/password/",
        {
            "old_password": PASSWORD,
            "new_password1": "another-long-pass-77",
            "new_password2": "another-long-pass-77",
        },
    )
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.check_password("another-long-pass-77")


def test_it_redirects_anonymous_users_to_login():
    response = Client().get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


@pytest.mark.parametrize("next_url", ["https://evil.example/", "//evil.example", "/\\evil.example"])
def test_it_never_redirects_off_site_after_login_or_logout(user, next_url):
    client = Client()
    response = client.post("/login/", {"username": "dana", "password": PASSWORD, "next": next_url})
    assert response.status_code == 302
    assert response["Location"] == "/"
    page = client.get("/login/", {"next": next_url})
    assert "evil.example" not in page.content.decode()
    response = client.post("/logout/", {"next": next_url})
    assert response["Location"] == "/login/"


def test_it_keeps_the_identifier_after_a_wrong_password(user):
    response = login(Client(), "dana@example.com", "wrong")
    assert response.status_code == 200
    assert b'value="dana@example.com"' in response.content
    # The password is never sent back, and the cursor waits in its field.
    assert b'value="wrong"' not in response.content
    assert re.search(rb'<input[^>]*name="password"[^>]*autofocus', response.content)
    assert not re.search(rb'<input[^>]*name="username"[^>]*autofocus', response.content)


def test_it_keeps_the_identifier_on_the_lockout_page(user, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = login(Client(), "dana", "wrong")
    assert response.status_code == 429
    assert b'value="dana"' in response.content
