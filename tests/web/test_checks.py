"""Deploy checks (console/web/checks.py): Django's settings checks still run for our inline middleware."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.core.checks import run_checks
from django.test import override_settings

ROOT = Path(__file__).resolve().parents[2]


def check_deploy(**settings_env: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.environ["PATH"],
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "console.example.com",
        "KEY_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "DATABASE_URL": "sqlite:////tmp/console-deploy-check.sqlite3",
        "DJANGO_SETTINGS_MODULE": "console.settings",
        **settings_env,
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("setting", "value", "check_id"),
    [("SECURE_SSL_REDIRECT", "false", "security.W008"), ("SECURE_HSTS_SECONDS", "0", "security.W004")],
)
def test_it_warns_when_production_turns_off_https(setting, value, check_id):
    result = check_deploy(**{setting: value})
    assert result.returncode != 0, result.stdout + result.stderr
    assert check_id in result.stderr


def deploy_check_ids() -> set[str]:
    return {message.id for message in run_checks(include_deployment_checks=True)}


@pytest.mark.parametrize(
    ("overrides", "check_id"),
    [
        ({"SECURE_HSTS_SECONDS": 3600, "SECURE_HSTS_INCLUDE_SUBDOMAINS": False}, "security.W005"),
        ({"SECURE_HSTS_SECONDS": 3600, "SECURE_HSTS_PRELOAD": False}, "security.W021"),
        ({"SECURE_CONTENT_TYPE_NOSNIFF": False}, "security.W006"),
        ({"SECURE_REFERRER_POLICY": None}, "security.W022"),
        ({"SECURE_REFERRER_POLICY": "nonsense"}, "security.E023"),
        ({"SECURE_CROSS_ORIGIN_OPENER_POLICY": "nonsense"}, "security.E024"),
        ({"X_FRAME_OPTIONS": "SAMEORIGIN"}, "security.W019"),
        ({"CSRF_COOKIE_SECURE": False}, "security.W016"),
    ],
)
def test_it_runs_djangos_settings_checks_for_the_inline_middleware(overrides, check_id):
    with override_settings(**overrides):
        assert check_id in deploy_check_ids()


def test_it_warns_when_an_inline_middleware_is_missing(settings):
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if m != "console.web.inline.SecurityMiddleware"]
    ids = deploy_check_ids()
    assert "console.W001" in ids
    assert "security.W004" not in ids  # no middleware, so its settings are moot (like Django's own)
