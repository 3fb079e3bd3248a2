from unittest import mock

import pytest
from django.test import AsyncClient, Client


async def test_it_answers_healthz_without_the_database():
    # No django_db mark: any query would fail the test.
    response = await AsyncClient().get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok"


@pytest.mark.django_db
def test_it_answers_readyz_when_the_database_is_up():
    response = Client().get("/readyz")
    assert response.status_code == 200


@pytest.mark.django_db
def test_it_answers_503_when_the_database_is_down():
    with mock.patch("console.web.views._db_ok", return_value=False):
        response = Client().get("/readyz")
    assert response.status_code == 503


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
@pytest.mark.django_db
def test_it_answers_probes_whatever_the_host_header(path, settings):
    # Probes come from the orchestrator with its own idea of the host, over plain HTTP.
    settings.ALLOWED_HOSTS = ["console.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    response = Client().get(path, headers={"host": "evil.example"})
    assert response.status_code == 200
    assert response.content == b"ok"


def test_it_still_refuses_a_bad_host_header_elsewhere(settings):
    settings.ALLOWED_HOSTS = ["console.example.com"]
    assert Client().get("/login/", headers={"host": "evil.example"}).status_code == 400
    assert Client().get("/healthz/", headers={"host": "evil.example"}).status_code == 400


def test_it_answers_probes_only_to_get(settings):
    assert Client().post("/healthz").status_code == 405
