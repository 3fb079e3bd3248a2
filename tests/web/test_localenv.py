"""The local .env of random per-install keys (console/localenv.py) and the settings refusing weak keys."""

import base64
import hashlib
import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.conf import settings

from console import localenv

ROOT = Path(__file__).resolve().parents[2]
SHOW_KEYS = "from django.conf import settings; print(settings.SECRET_KEY, settings.KEY_ENCRYPTION_KEYS)"


def load_settings(**environ: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "console.settings", **environ}
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {SHOW_KEYS}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_creates_the_local_env_with_random_keys_readable_by_its_owner_only(tmp_path):
    path = tmp_path / ".env"
    assert localenv.ensure(path, environ={}) == [
        "SECRET_KEY",
        "KEY_ENCRYPTION_KEYS",
        "SANDBOX_DEMO_KEY",
        "DEMO_IDP_CLIENT_SECRET",
    ]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    values = localenv.read(path)
    assert localenv.weak_secret_key(values["SECRET_KEY"]) is None
    Fernet(values["KEY_ENCRYPTION_KEYS"].encode())
    assert values["SANDBOX_DEMO_KEY"] != "sandbox-demo-key" and len(values["SANDBOX_DEMO_KEY"]) > 20
    other = tmp_path / "other"
    other.mkdir()
    localenv.ensure(other / ".env", environ={})
    assert set(localenv.read(other / ".env").values()).isdisjoint(values.values())


def test_it_keeps_the_keys_on_the_next_runs_and_adds_only_missing_ones(tmp_path):
    path = tmp_path / ".env"
    path.write_text(
        "DEBUG=true\nSECRET_KEY=\nSANDBOX_DEMO_KEY=mine-already\nDEMO_IDP_CLIENT_SECRET=mine-too\n"
    )
    added = localenv.ensure(path, environ={"KEY_ENCRYPTION_KEYS": "from-the-environment"})
    assert added == ["SECRET_KEY"]
    first = path.read_text()
    values = localenv.read(path)
    assert values["DEBUG"] == "true" and values["SANDBOX_DEMO_KEY"] == "mine-already"
    assert values["SECRET_KEY"] and "KEY_ENCRYPTION_KEYS" not in values
    assert localenv.ensure(path, environ={"KEY_ENCRYPTION_KEYS": "x"}) == []
    assert path.read_text() == first
    assert localenv.ensure(path, environ={}) == ["KEY_ENCRYPTION_KEYS"]
    assert localenv.read(path)["SECRET_KEY"] == values["SECRET_KEY"]


def test_it_writes_one_file_when_processes_race(tmp_path):
    path = tmp_path / ".env"
    script = (
        "import sys; from pathlib import Path; from console import localenv; "
        "p = Path(sys.argv[1]); localenv.ensure(p, environ={}); print(localenv.read(p)['SECRET_KEY'])"
    )
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path)], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    seen = {racer.communicate(timeout=60)[0].strip() for racer in racers}
    assert len(seen) == 1 and "" not in seen
    assert path.read_text().count("SECRET_KEY=") == 1


@pytest.mark.parametrize(
    "secret_key",
    ["", "dev-insecure-secret-key-change-me", "django-insecure-" + "x" * 60, secrets.token_urlsafe(20)],
    ids=["missing", "published", "django-default", "short"],
)
def test_it_refuses_to_start_in_production_with_a_missing_or_default_secret_key(secret_key):
    result = load_settings(
        DEBUG="false", SECRET_KEY=secret_key, KEY_ENCRYPTION_KEYS=Fernet.generate_key().decode()
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "SECRET_KEY" in result.stderr


def test_it_refuses_to_start_in_production_without_encryption_keys():
    result = load_settings(DEBUG="false", SECRET_KEY=secrets.token_urlsafe(50), KEY_ENCRYPTION_KEYS="")
    assert result.returncode != 0 and "KEY_ENCRYPTION_KEYS" in result.stderr


def test_it_starts_in_production_with_strong_keys():
    key, fernet = secrets.token_urlsafe(50), Fernet.generate_key().decode()
    result = load_settings(DEBUG="false", SECRET_KEY=key, KEY_ENCRYPTION_KEYS=fernet)
    assert result.returncode == 0, result.stderr
    assert key in result.stdout and fernet in result.stdout


def derived_from(secret_key: str) -> str:
    """The Fernet key the console once derived from SECRET_KEY (public whenever SECRET_KEY was)."""
    digest = hashlib.sha256(b"console.key-encryption:" + secret_key.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()


def test_it_never_derives_the_encryption_key_from_the_secret_key():
    assert derived_from(settings.SECRET_KEY) not in settings.KEY_ENCRYPTION_KEYS
    key = secrets.token_urlsafe(50)
    result = load_settings(DEBUG="true", SECRET_KEY=key, KEY_ENCRYPTION_KEYS="")
    assert derived_from(key) not in result.stdout
    assert result.returncode != 0 and "KEY_ENCRYPTION_KEYS" in result.stderr
