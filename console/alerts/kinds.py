"""What a rule can watch: one entry per kind, written once and used by the forms, the evaluator and pages.

``threshold`` and ``window`` say what the rule's two numbers mean for the kind (None: the kind has none).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    key: str
    label: str
    description: str
    threshold: str | None = None  # what the threshold means, with its unit
    threshold_default: int | None = None
    window: str | None = None  # what the window (minutes) means
    window_default: int | None = None
    project_scoped: bool = True  # False: the rule reads org-wide data whatever its project


AUTH_NEEDS_HUMAN = "auth_needs_human"
SESSION_CRASHED = "session_crashed"
TELEMETRY_ERRORS = "telemetry_errors"
CAPACITY = "capacity"
INVOCATION_FAILED = "invocation_failed"
DEPLOYMENT_FAILED = "deployment_failed"
POOL_EXHAUSTED = "pool_exhausted"
PROXY_UNHEALTHY = "proxy_unhealthy"
API_KEY_EXPIRING = "api_key_expiring"
SERVICE = "service"

KINDS: dict[str, Kind] = {
    k.key: k
    for k in (
        Kind(
            AUTH_NEEDS_HUMAN,
            "A login needs a human",
            "An auth connection needs to log in again (NEEDS_AUTH), a login waits for input or an external "
            "action, or a login failed with credentials_invalid, bot_detected or captcha_blocked.",
        ),
        Kind(
            SESSION_CRASHED,
            "A browser crashed",
            "A session's telemetry reports its browser crashed (service_crashed) or a process was killed for "
            "lack of memory (system_oom_kill) within the window.",
            window="minutes a crash keeps the alert firing",
            window_default=15,
        ),
        Kind(
            TELEMETRY_ERRORS,
            "Console errors or failed requests",
            "Console errors and failed requests across the sessions, counted over the window, at or "
            "above the threshold.",
            threshold="errors and failed requests",
            threshold_default=20,
            window="minutes counted",
            window_default=5,
        ),
        Kind(
            CAPACITY,
            "Capacity near the cap",
            "Browsers in use (sessions and pool reservations) at or above the threshold of the project's cap "
            "or the org's limit, or creates refused with 429 within the window.",
            threshold="percent of the cap",
            threshold_default=90,
            window="minutes in which a 429 counts",
            window_default=10,
        ),
        Kind(
            INVOCATION_FAILED,
            "An invocation failed",
            "The latest finished invocation of an app's action within the window failed or timed out; "
            "resolved when a later one succeeds.",
            window="minutes looked back",
            window_default=60,
        ),
        Kind(
            DEPLOYMENT_FAILED,
            "A deployment failed",
            "The latest deployment of an app failed within the window; resolved when a later one runs.",
            window="minutes looked back",
            window_default=1440,
        ),
        Kind(
            POOL_EXHAUSTED,
            "A pool has no browser left",
            "A pool has no browser available and every browser of its size is leased, so acquires wait.",
        ),
        Kind(
            PROXY_UNHEALTHY,
            "A proxy failed its health check",
            "A proxy's last health check found it unavailable.",
            project_scoped=False,
        ),
        Kind(
            API_KEY_EXPIRING,
            "An API key expires soon",
            "A service API key expires within the threshold (or has expired).",
            threshold="days before expiry",
            threshold_default=14,
            project_scoped=False,
        ),
        Kind(
            SERVICE,
            "The service is unreachable or refuses the key",
            "The service did not answer, or refused the organization's API key (401 or 403). Every "
            "organization has this rule; it cannot be deleted.",
            project_scoped=False,
        ),
    )
}

CHOICES = [(k.key, k.label) for k in KINDS.values()]
SEVERITIES = [("critical", "Critical"), ("warning", "Warning"), ("info", "Info")]
