"""Settings for the operator console.

Every environment variable is read here, and only here; `.env.example` lists them all. The defaults
run the console locally against the sandbox with SQLite; production sets DEBUG=false and supplies
SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL and KEY_ENCRYPTION_KEYS.
"""

import importlib.util
import os
import tempfile
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from console import localenv

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# A local .env is a convenience for development; real deployments pass the environment directly.
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=True)

# No key ships in the repository: in development the keys are random per install, generated into the
# git-ignored .env (mode 0600) on first run and kept after (console/localenv.py); production supplies its
# own and refuses to start with a missing or published one.
if DEBUG and localenv.ensure(BASE_DIR / ".env"):
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
SECRET_KEY = env.str("SECRET_KEY", default="")
if (weakness := localenv.weak_secret_key(SECRET_KEY)) and not (DEBUG and SECRET_KEY):
    raise ImproperlyConfigured(f"SECRET_KEY {weakness}; with DEBUG=false it must be a long random value")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
# A form whose token no longer matches gets the console's page ("This form has expired"), not Django's.
CSRF_FAILURE_VIEW = "console.web.errors.csrf_failure"

# Organizations' service API keys are encrypted at rest with these Fernet keys (MultiFernet: the first
# encrypts, every one decrypts, so a new key is prepended, `manage.py rotate_org_keys` run, and the old
# key dropped later). Never derived from another value: in development they come from .env like SECRET_KEY.
KEY_ENCRYPTION_KEYS = env.list("KEY_ENCRYPTION_KEYS", default=[])
if not KEY_ENCRYPTION_KEYS:
    raise ImproperlyConfigured("KEY_ENCRYPTION_KEYS must be set (Fernet keys, comma-separated)")

# Whether an organization's service base URL may resolve to loopback or private addresses (the local
# sandbox in development). Link-local and cloud metadata addresses are refused even then; see
# console/service/targets.py.
SERVICE_URL_ALLOW_PRIVATE = env.bool("SERVICE_URL_ALLOW_PRIVATE", default=DEBUG)
# Seconds a read from the service (GET) may take before the page shows "did not answer" and a retry button;
# changes wait longer (console/service/http.py), streams have no read timeout.
SERVICE_READ_TIMEOUT = env.float("SERVICE_READ_TIMEOUT", default=5.0)
# The most of a JSON answer the console reads (console/service/http.py): one list page (at most 100 records,
# a few hundred KiB from the service), and any other answer (one record: a session may carry a 5 MiB policy).
SERVICE_LIST_MAX_BYTES = env.int("SERVICE_LIST_MAX_BYTES", default=4 * 1024 * 1024)  # 4 MiB
SERVICE_JSON_MAX_BYTES = env.int("SERVICE_JSON_MAX_BYTES", default=8 * 1024 * 1024)  # 8 MiB
# One export of the service's audit log stops after this many chunks (of 1000 rows) or bytes, and says so in
# the file: a service that always says "more" sent 1,153 MB in 20 s (console/audit_logs/views.py).
AUDIT_EXPORT_MAX_CHUNKS = env.int("AUDIT_EXPORT_MAX_CHUNKS", default=1000)
AUDIT_EXPORT_MAX_BYTES = env.int("AUDIT_EXPORT_MAX_BYTES", default=256 * 1024 * 1024)  # 256 MiB
# The port `make run` serves the console on (PORT, as in the Makefile): `manage.py demo` prints that address.
CONSOLE_PORT = env.int("PORT", default=8000)
# The demo organization (`manage.py demo`) points at the local sandbox.
SANDBOX_URL = env.str("SANDBOX_URL", default="http://127.0.0.1:8100")
SANDBOX_DEMO_KEY = env.str("SANDBOX_DEMO_KEY", default="")
DEMO_PASSWORD = env.str("DEMO_PASSWORD", default="demo")
EXTENSION_MAX_UPLOAD_BYTES = env.int("EXTENSION_MAX_UPLOAD_BYTES", default=10 * 1024 * 1024)  # 10 MiB
# Largest file or zip an operator uploads into a browser session's filesystem.
SESSION_UPLOAD_MAX_BYTES = env.int("SESSION_UPLOAD_MAX_BYTES", default=100 * 1024 * 1024)  # 100 MiB
# Live panes: the relay's keepalive event period, replay buffer per stream, and how far a viewer may fall
# behind. An upstream silent for one keepalive interval is checked (the service probed, given half an
# interval to answer): a pane says "Stalled" within two intervals of a frozen service (console/live/hub.py).
LIVE_KEEPALIVE_SECONDS = env.float("LIVE_KEEPALIVE_SECONDS", default=5.0)
# Every event stream re-checks this often that its member still may watch it (console/live/guard.py).
STREAM_RECHECK_SECONDS = env.float("STREAM_RECHECK_SECONDS", default=15.0)
# The service's own keepalive interval on its streams (15 s by its spec): an upstream that sends nothing for
# twice this long is shown as stalled.
LIVE_UPSTREAM_KEEPALIVE_SECONDS = env.float("LIVE_UPSTREAM_KEEPALIVE_SECONDS", default=15.0)
LIVE_BUFFER_SIZE = env.int("LIVE_BUFFER_SIZE", default=2000)
LIVE_MAX_PENDING = env.int("LIVE_MAX_PENDING", default=5000)
# The same two bounds in bytes (a service's event may be 16 MiB): kept for late viewers, and unread by one.
LIVE_BUFFER_BYTES = env.int("LIVE_BUFFER_BYTES", default=16 * 1024 * 1024)
LIVE_MAX_PENDING_BYTES = env.int("LIVE_MAX_PENDING_BYTES", default=64 * 1024 * 1024)
# The largest request body the console reads (console/asgi.py); 0: its largest upload plus 1 MiB.
MAX_REQUEST_BYTES = env.int("MAX_REQUEST_BYTES", default=0)
# The live screen: seconds a session's CDP screencast stays open after its last viewer left.
SCREEN_LINGER_SECONDS = env.float("SCREEN_LINGER_SECONDS", default=3.0)
# Control of a session's screen (a lease in the database): how long it holds without an action or the
# holder's pane renewing it (the pane renews it every quarter of this while open).
SCREEN_CONTROL_SECONDS = env.float("SCREEN_CONTROL_SECONDS", default=120.0)
# A request for control the driver leaves unanswered is granted after this many seconds, if the driver has
# not acted on the screen for as long either.
SCREEN_CONTROL_REQUEST_SECONDS = env.float("SCREEN_CONTROL_REQUEST_SECONDS", default=30.0)
# Each page watching a screen checks in this often (who watches, who drives, requests: in the database);
# one not heard for three of these is gone.
SCREEN_PRESENCE_SECONDS = env.float("SCREEN_PRESENCE_SECONDS", default=2.0)
# The session wall: live tiles (each a CDP connection that keeps a browser awake) per viewer (all their walls
# together) and per organization, in each console process; the rest are paused.
WALL_LIVE_TILES = env.int("WALL_LIVE_TILES", default=4)
WALL_LIVE_TILES_PER_ORG = env.int("WALL_LIVE_TILES_PER_ORG", default=8)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",  # allauth.mfa's security key list
    "django_htmx",
    # The default app config wraps the template loaders with the partials loader (`template#name`).
    "template_partials",
    "axes",
    # Sign-in (console/signin/, docs/architecture.md "Sign-in"): allauth's account core (its login stages),
    # two-factor devices (TOTP, WebAuthn, recovery codes) and each user's list of signed-in sessions.
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "allauth.usersessions",
    "console.accounts",
    # The shared view helpers: their deploy checks (console/web/checks.py).
    "console.web",
    # The background worker's queue (django-tasks, database backend) and its clock; alerts.
    "django_tasks",
    "django_tasks_db",
    "console.worker",
    "console.alerts",
    "console.signin",
    "console.metrics",
    "console.usage",
]
# The sandbox is its own ASGI app and never imports Django; its app here only adds `manage.py sandbox`. The
# production image holds neither it nor its packages (requirements/sandbox.txt, .dockerignore).
if importlib.util.find_spec("console.sandbox") and importlib.util.find_spec("starlette"):
    INSTALLED_APPS.append("console.sandbox")

# Everything on the request path runs on the event loop: under ASGI a sync-only middleware hook costs a
# thread hop per request (console/web/inline.py runs Django's own hooks inline). Static files are served
# by an async wrapper around WhiteNoise for the same reason.
# Django's checks for its own security, clickjacking and CSRF middleware paths; console/web/checks.py checks
# the inline subclasses that replace them instead.
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]

MIDDLEWARE = [
    # /healthz and /readyz, answered whatever the Host header: probes do not know the public host name.
    "console.web.middleware.ProbeMiddleware",
    # Counts and times every request for /metrics (console/metrics/health.py).
    "console.metrics.health.RequestMetricsMiddleware",
    "console.web.inline.SecurityMiddleware",
    "console.web.middleware.SecurityHeadersMiddleware",
    "console.web.middleware.StaticFilesMiddleware",
    "console.web.inline.SessionMiddleware",
    "console.web.inline.CommonMiddleware",
    "console.web.inline.CsrfViewMiddleware",
    "console.web.inline.AuthenticationMiddleware",
    "console.web.inline.MessageMiddleware",
    # allauth's request context and its login stages (async-capable: no thread hop).
    "allauth.account.middleware.AccountMiddleware",
    "console.web.inline.XFrameOptionsMiddleware",
    # 403/404 (and crashes with DEBUG on) as designed pages in the layout, never Django's debug pages.
    "console.web.errors.ErrorPageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "console.web.middleware.ServiceErrorMiddleware",
    # Axes documents itself as the last middleware: it replaces the response of a locked-out login.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "console.urls"
ASGI_APPLICATION = "console.asgi.application"

TEMPLATES = [
    {
        # Django's backend, with control and bidi characters made visible in every rendered template.
        "BACKEND": "console.web.templates.DjangoTemplates",
        "NAME": "django",  # the name django-template-partials looks for to add its loader
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "builtins": ["console.web.templatetags.console"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.web.context_processors.console",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
# ORM calls run on one thread per process (console/asgi.py), so one persistent connection serves them all.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite ignores select_for_update: transactions take the write lock at BEGIN instead, so a check and
    # its write (the last-admin guard) are never interleaved with another writer's; others wait up to
    # `timeout` seconds rather than failing with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(transaction_mode="IMMEDIATE", timeout=20)
    # Tests use a file too: connections to the in-memory test database share one cache, whose table locks
    # fail at once instead of waiting, unlike the file every deployment uses. On tmpfs where there is one,
    # so commits cost no disk sync (as fast as the in-memory database).
    _test_dir = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())  # noqa: S108
    DATABASES["default"].setdefault("TEST", {}).setdefault(
        "NAME", str(_test_dir / f"console-test-{os.getpid()}.sqlite3")
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Django's cache holds what allauth must remember across replicas: TOTP codes already used (a code works
# once), its rate limits and sign-in codes. A table of the console's own database by default (created by
# migrate: console/signin/migrations/0002), so several processes agree; a process's memory would let a code
# be replayed once per replica. CACHE_URL may name a shared cache instead (e.g. redis://).
CACHES = {"default": env.cache_url_config(env.str("CACHE_URL", default="") or "dbcache://console_cache")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]
AUTHENTICATION_BACKENDS = [
    # Axes first, so a locked-out account or address is refused before any password is checked.
    "axes.backends.AxesBackend",
    "console.accounts.backends.UsernameOrEmailBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Throttle failed logins per account and, separately, per client address.
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "console.signin_pages.views.lockout_response"
AXES_USERNAME_FORM_FIELD = "username"
# Failures count against the account, however it was named (any case, or its e-mail address).
AXES_USERNAME_CALLABLE = "console.accounts.backends.lockout_username"
AXES_SENSITIVE_PARAMETERS = ["password", "api_key", "code", "client_secret"]
AXES_VERBOSE = False

# Sign-in (console/signin/). allauth drives the second factor after the console's own login form (and after
# single sign-on); nobody signs up through it (invites only: AccountAdapter.is_open_for_signup).
ACCOUNT_ADAPTER = "console.signin.adapters.AccountAdapter"
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["email", "username*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_LOGOUT_ON_GET = False
ACCOUNT_REAUTHENTICATION_TIMEOUT = 300
MFA_ADAPTER = "console.signin.adapters.MFAAdapter"
MFA_SUPPORTED_TYPES = ["totp", "webauthn", "recovery_codes"]
MFA_PASSKEY_LOGIN_ENABLED = False
MFA_TRUST_ENABLED = False
MFA_TOTP_ISSUER = env.str("MFA_TOTP_ISSUER", default="Operator Console")
# WebAuthn over plain http only where browsers allow it anyway (localhost, in development).
MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN = DEBUG
# The forms that take a code: a wrong code counts towards the login lockout (django-axes), like a password.
MFA_FORMS = {
    "authenticate": "console.signin.forms.AuthenticateForm",
    "reauthenticate": "console.signin.forms.ReauthenticateForm",
}
# Sessions are tracked at sign-in and on org pages at most once a minute (console/signin/sessions.py).
USERSESSIONS_TRACK_ACTIVITY = False
# The local identity provider `make run` starts for trying single sign-on (console/demo_idp/; never with
# DEBUG=false): its port, and the client secret the demo organization and it share (generated into .env).
DEMO_IDP_PORT = env.int("DEMO_IDP_PORT", default=8200)
DEMO_IDP_CLIENT_SECRET = env.str("DEMO_IDP_CLIENT_SECRET", default="")

# Refusals a member meets (an action their role does not allow) are audited without flooding the log
# (console/accounts/audit.py, deny): the same refusal (member, action, target) repeated within this many
# seconds of the first is one row whose count and last time grow.
REFUSAL_COLLAPSE_SECONDS = env.int("REFUSAL_COLLAPSE_SECONDS", default=600)
# Past this many refusals of one user in REFUSAL_WINDOW_SECONDS (counted from the first of them), every
# further refusal is answered 429 until the window ends, and one of anything new is counted on a single
# `access.throttled` row rather than a row of its own.
REFUSAL_LIMIT = env.int("REFUSAL_LIMIT", default=30)
REFUSAL_WINDOW_SECONDS = env.int("REFUSAL_WINDOW_SECONDS", default=60)

# The background worker (`python manage.py worker`, console/worker/): django-tasks with its database
# backend, so several workers share the console's database and none runs a task twice.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
# Seconds an idle worker waits before looking at the queue again.
WORKER_POLL_SECONDS = env.float("WORKER_POLL_SECONDS", default=1.0)

# Alerts (console/alerts/). Seconds between evaluations of each organization's rules by the worker.
ALERTS_EVALUATION_SECONDS = env.float("ALERTS_EVALUATION_SECONDS", default=30.0)
# The most one round may cost: seconds before it stops (and says so), pages of 100 read per list, and
# sessions whose telemetry is read (the rest wait for the next round, oldest read first).
ALERTS_ROUND_SECONDS = env.float("ALERTS_ROUND_SECONDS", default=60.0)
ALERTS_MAX_PAGES = env.int("ALERTS_MAX_PAGES", default=5)
ALERTS_TELEMETRY_SESSIONS = env.int("ALERTS_TELEMETRY_SESSIONS", default=20)
# Deliveries: a try waits this long for an answer (webhook and SMTP), is retried this many times with
# growing waits (ALERTS_RETRY_SECONDS doubling, at most an hour), and a worker holds a delivery for
# ALERTS_DELIVERY_LEASE_SECONDS: past it (a worker killed mid-send) another worker sends it again.
ALERTS_SEND_TIMEOUT = env.float("ALERTS_SEND_TIMEOUT", default=10.0)
ALERTS_MAX_ATTEMPTS = env.int("ALERTS_MAX_ATTEMPTS", default=6)
ALERTS_RETRY_SECONDS = env.float("ALERTS_RETRY_SECONDS", default=30.0)
ALERTS_DELIVERY_LEASE_SECONDS = env.float("ALERTS_DELIVERY_LEASE_SECONDS", default=60.0)
# Webhook URLs pass the service URL's address rules (console/service/targets.py); loopback and private
# addresses only when this is on (default: SERVICE_URL_ALLOW_PRIVATE). Link-local and metadata: never.
ALERTS_WEBHOOK_ALLOW_PRIVATE = env.bool("ALERTS_WEBHOOK_ALLOW_PRIVATE", default=SERVICE_URL_ALLOW_PRIVATE)
# /metrics (console/metrics/): the projects of an organization measured per scrape (the first of its list),
# and how long a scrape's fleet figures are kept per organization in a process (several scrapers cost one).
METRICS_MAX_PROJECTS = env.int("METRICS_MAX_PROJECTS", default=20)
METRICS_FLEET_CACHE_SECONDS = env.float("METRICS_FLEET_CACHE_SECONDS", default=15.0)
# Usage over time (console/usage/): the worker samples each organization's projects (the first
# USAGE_MAX_PROJECTS) every USAGE_SAMPLE_SECONDS, keeps those samples USAGE_RAW_HOURS, then one row per
# hour until USAGE_RETENTION_DAYS.
USAGE_SAMPLE_SECONDS = env.int("USAGE_SAMPLE_SECONDS", default=60)
USAGE_MAX_PROJECTS = env.int("USAGE_MAX_PROJECTS", default=20)
USAGE_RAW_HOURS = env.float("USAGE_RAW_HOURS", default=48.0)
USAGE_RETENTION_DAYS = env.float("USAGE_RETENTION_DAYS", default=90.0)
# The console's address as people reach it: links in e-mails and webhooks.
CONSOLE_BASE_URL = env.str("CONSOLE_BASE_URL", default=f"http://127.0.0.1:{CONSOLE_PORT}")

# E-mail (alerts). Django's SMTP backend with these settings; `make run` prints e-mails to the worker's log
# instead (EMAIL_BACKEND=django.core.mail.backends.console.EmailBackend).
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=False)
EMAIL_USE_SSL = env.bool("EMAIL_USE_SSL", default=False)
EMAIL_TIMEOUT = ALERTS_SEND_TIMEOUT
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="alerts@localhost")

# Cookie storage keeps messages out of the session, so async views never touch the session for them.
MESSAGE_STORAGE = "django.contrib.messages.storage.cookie.CookieStorage"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed, compressed files in production (built by collectstatic); plain files in development and
    # tests so nothing needs collecting first.
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG

# Security headers. The CSP has no 'unsafe-inline' for scripts or styles: all JS and CSS are files.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# No frame-src here: SecurityHeadersMiddleware appends `frame-src 'none'` (or the one origin a view sets in
# request.csp_frame_src: none does since the service's live view is no longer framed, docs/security.md).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
# Behind a TLS-terminating proxy, e.g. SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO,https
_proxy_header = env.list("SECURE_PROXY_SSL_HEADER", default=[])
SECURE_PROXY_SSL_HEADER = tuple(_proxy_header) if len(_proxy_header) == 2 else None
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # Health probes come over plain HTTP: ProbeMiddleware answers them before any redirect.
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# Never log request headers or bodies: they carry session cookies and, upstream, API keys.
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}
