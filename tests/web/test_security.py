import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.test import AsyncClient

ROOT = Path(__file__).resolve().parents[2]


async def test_it_sends_security_headers():
    response = await AsyncClient().get("/login/")
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp
    assert "style-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Content-Type-Options"] == "nosniff"


async def test_it_frames_nothing_on_pages_without_a_live_view():
    response = await AsyncClient().get("/login/")
    assert response["Content-Security-Policy"].endswith("; frame-src 'none'")


async def test_it_keeps_signed_in_pages_and_partials_out_of_every_cache(viewer_client):
    for response in (
        await viewer_client.get("/o/acme/browsers/"),
        await viewer_client.get(
            "/o/acme/browsers/", headers={"HX-Request": "true", "HX-Target": "browsers-table"}
        ),
        await viewer_client.get("/"),
    ):
        assert response.status_code in (200, 302)
        directives = set(response["Cache-Control"].split(", "))
        assert {"no-store", "private"} <= directives


async def test_it_lets_static_files_keep_their_caching(viewer_client):
    response = await viewer_client.get("/static/css/console.css")
    assert response.status_code == 200
    assert "no-store" not in response.get("Cache-Control", "")


async def test_it_has_no_inline_scripts():
    html = (await AsyncClient().get("/login/")).content.decode()
    for tag in html.split("<script")[1:]:
        assert tag.split(">", 1)[0].strip().startswith("src="), "every script is a file"


def test_it_passes_the_deploy_checks_in_production():
    env = {
        "PATH": os.environ["PATH"],
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "console.example.com",
        "KEY_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "DATABASE_URL": "sqlite:////tmp/console-deploy-check.sqlite3",
        "DJANGO_SETTINGS_MODULE": "console.settings",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_it_refuses_production_without_encryption_keys():
    env = {
        "PATH": os.environ["PATH"],
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "KEY_ENCRYPTION_KEYS": "",  # explicitly empty: a local .env must not fill it in
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "KEY_ENCRYPTION_KEYS" in result.stderr


@pytest.mark.django_db(transaction=True)
async def test_it_shows_custom_404_pages(admin_client):
    response = await admin_client.get("/o/nowhere/")
    assert response.status_code == 404
    assert b"Not found" in response.content
    assert b"Traceback" not in response.content
