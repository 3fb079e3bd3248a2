"""Settings of the demo identity provider (never the console's)."""

import os
import secrets
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent

DEBUG = os.environ.get("DEBUG", "true").strip().lower() in ("1", "true", "yes", "on")
if not DEBUG:
    raise ImproperlyConfigured("the demo identity provider is for development only: it refuses DEBUG=false")

PORT = int(os.environ.get("DEMO_IDP_PORT", "8200"))
ISSUER = os.environ.get("DEMO_IDP_ISSUER", f"http://127.0.0.1:{PORT}/o")
# A key per process: its sessions and tokens do not outlive it, which a demo does not need.
SECRET_KEY = secrets.token_urlsafe(50)
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
# Tests change users and misbehave on purpose through /_idp/ with this bearer token; unset, that is off.
CONTROL_TOKEN = os.environ.get("DEMO_IDP_CONTROL_TOKEN", "")

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oauth2_provider",
    "console.demo_idp",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "console.demo_idp.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DEMO_IDP_DB", str(BASE_DIR.parent.parent / ".run" / "demo_idp.sqlite3")),
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
# Browsers keep cookies per host, not per port: the console on the same host must keep its own.
SESSION_COOKIE_NAME = "demo_idp_session"
CSRF_COOKIE_NAME = "demo_idp_csrftoken"
LOGIN_URL = "/accounts/login/"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]

_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_ISS_ENDPOINT": ISSUER,
    "OIDC_RSA_PRIVATE_KEY": _key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode(),
    "PKCE_REQUIRED": True,
    "SCOPES": {"openid": "OpenID Connect", "email": "E-mail address", "profile": "Profile"},
    "OAUTH2_VALIDATOR_CLASS": "console.demo_idp.validator.Validator",
}
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
