"""`manage.py demo`: says where the console runs."""

import io

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def demo_output(**options) -> str:
    out = io.StringIO()
    call_command("demo", stdout=out, **options)
    return out.getvalue()


def test_it_prints_the_consoles_own_port(settings):
    settings.CONSOLE_PORT = 8123
    assert "Demo ready at http://127.0.0.1:8123/" in demo_output()


def test_it_prints_the_url_it_is_given(settings):
    assert "Demo ready at http://console.example/" in demo_output(url="http://console.example/")
