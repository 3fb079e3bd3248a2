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
