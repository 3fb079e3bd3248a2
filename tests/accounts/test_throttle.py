import pytest
from django.conf import settings
from django.test import Client

from tests.conftest import PASSWORD, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def attempt(username: str, password: str, ip: str):
    return Client(REMOTE_ADDR=ip).post(
        "/login/", {"username": username, "password": password}, REMOTE_ADDR=ip
    )


def test_it_locks_an_account_after_repeated_failures_from_many_addresses():
    make_user("erin")
    for i in range(settings.AXES_FAILURE_LIMIT):
        attempt("erin", "wrong", f"10.0.0.{i + 1}")
    response = attempt("erin", PASSWORD, "10.0.1.1")
    assert response.status_code == 429
    assert b"Too many failed attempts" in response.content
    assert "_auth_user_id" not in response.client.session


def test_it_locks_an_address_after_repeated_failures_on_many_accounts():
    make_user("frank")
    for i in range(settings.AXES_FAILURE_LIMIT):
        attempt(f"nobody{i}", "wrong", "10.0.2.2")
    assert attempt("frank", PASSWORD, "10.0.2.2").status_code == 429
    # Another address is not affected.
    assert attempt("frank", PASSWORD, "10.0.2.3").status_code == 302


def test_it_allows_logins_below_the_limit():
    make_user("gina")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert attempt("gina", "wrong", "10.0.3.3").status_code == 200
    assert attempt("gina", PASSWORD, "10.0.3.3").status_code == 302


def test_it_locks_the_account_whatever_identifier_was_typed():
    make_user("lockme")
    for i in range(settings.AXES_FAILURE_LIMIT):
        attempt("lockme", "wrong", f"10.0.4.{i + 1}")
    for i, identifier in enumerate(["LOCKME", "LockMe", "lockme@example.com", "LOCKME@EXAMPLE.COM"]):
        response = attempt(identifier, PASSWORD, f"10.0.5.{i + 1}")
        assert response.status_code == 429, identifier
        assert "_auth_user_id" not in response.client.session


def test_it_counts_failures_under_every_identifier_against_one_account():
    make_user("mixed")
    identifiers = ["mixed", "MIXED", "mixed@example.com", "Mixed@Example.com", "mIxEd"]
    for i, identifier in enumerate(identifiers[: settings.AXES_FAILURE_LIMIT]):
        attempt(identifier, "wrong", f"10.0.6.{i + 1}")
    assert attempt("mixed", PASSWORD, "10.0.7.1").status_code == 429
