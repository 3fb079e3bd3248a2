"""The small exception tree of the service client.

Every failure of a call to the service becomes one of these, chosen by status in
``console.service.http.raise_for_status``. Each carries what the service said
(``status, code, message, details, inner_error``) plus the ``request_id`` from the
``X-Request-Id`` response header, so a view can show it and the audit log can keep it.

Field errors convention (``Invalid.field_errors``): the contract's ErrorDetail has only
``code`` and ``message``. A detail whose ``code`` names a field of the request body
(an identifier such as ``size`` or ``browser_pool_config.size``, i.e. not one of the
generic codes in ``GENERIC_DETAIL_CODES``) is a field error:
``{"code": "<field name>", "message": "<human message>"}``. ``field_errors`` maps each
such field name to its list of messages; details with a generic code (``invalid``,
``required``, ...) are collected under the key ``"__all__"`` (Django's non-field key).
"""

from __future__ import annotations

import re
from typing import Any

# Detail codes that describe a kind of problem rather than naming a field.
GENERIC_DETAIL_CODES = frozenset(
    {
        "invalid",
        "invalid_request",
        "invalid_input",
        "invalid_value",
        "invalid_json",
        "bad_request",
        "required",
        "missing",
        "validation_error",
        "unprocessable",
        "error",
    }
)
_FIELD_CODE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_\[\]]+)*$")


class ServiceError(Exception):
    """Base of every error raised by the service client."""

    default_message = "the service returned an error"

    def __init__(
        self,
        message: str | None = None,
        *,
        status: int | None = None,
        code: str | None = None,
        details: list[dict[str, Any]] | None = None,
        inner_error: dict[str, Any] | None = None,
        request_id: str | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.status = status
        self.code = code
        self.details = list(details or [])
        self.inner_error = inner_error
        self.request_id = request_id
        super().__init__(self.message)

    def __str__(self) -> str:
        head = " ".join(str(part) for part in (self.status and f"HTTP {self.status}", self.code) if part)
        text = f"{head}: {self.message}" if head else self.message
        if self.request_id:
            text += f" (request id {self.request_id})"
        return text

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, "
            f"message={self.message!r}, request_id={self.request_id!r})"
        )


class Invalid(ServiceError):
    """400 or 422: the request was rejected; ``field_errors`` says which fields."""

    default_message = "the service rejected the request"

    @property
    def field_errors(self) -> dict[str, list[str]]:
        errors: dict[str, list[str]] = {}
        for detail in self.details:
            if not isinstance(detail, dict):
                continue
            code = str(detail.get("code") or "")
            message = str(detail.get("message") or code or "invalid")
            is_field = code and code.lower() not in GENERIC_DETAIL_CODES and _FIELD_CODE.match(code)
            errors.setdefault(code if is_field else "__all__", []).append(message)
        return errors


# The architecture names both; they are the same class.
BadRequest = Invalid


class Unauthorized(ServiceError):
    default_message = "the service did not accept the API key"


class Forbidden(ServiceError):
    default_message = "the API key may not do this"


class NotFound(ServiceError):
    default_message = "not found"


class Conflict(ServiceError):
    default_message = "the request conflicts with the current state"


class Gone(ServiceError):
    default_message = "this resource no longer exists"


class TryLater(ServiceError):
    """A refusal that may pass with time: ``retry_after`` is the service's hint in seconds (its
    ``Retry-After``), if it gave one."""

    def __init__(self, message: str | None = None, *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class Unavailable(TryLater):
    """5xx, timeouts and connection errors; ``status`` is None when nothing answered."""

    default_message = "the service is unavailable"


class RateLimited(TryLater):
    """429."""

    default_message = "too many requests"


class NoAnswer(Unavailable):
    """The request went out but no complete answer came back (read timeout, connection cut mid-way).

    Unlike a refused connection, the service may have acted on it: a mutation's result is unknown.
    """

    default_message = "the service did not answer"


class BadResponse(Unavailable):
    """A 2xx whose body is not what the contract promises (not JSON, wrong shape, missing fields).

    Shown like a 5xx. For a mutation the service said yes but we cannot read what it did: unknown.
    """

    default_message = "the service sent an answer the console cannot read"


# Refusals because a project cap is reached (429, docs/service-changes.md "Caps"): code → the cap.
CAP_CODES = {
    "concurrent_sessions_limit_exceeded": "max_concurrent_sessions",
    "pooled_sessions_limit_exceeded": "max_pooled_sessions",
    "concurrent_invocations_limit_exceeded": "max_concurrent_invocations",
}


class CapReached(RateLimited):
    """429 because a project cap is reached: waiting does not help, ending something or a higher cap does."""

    default_message = "a project cap is reached"

    @property
    def cap(self) -> str:
        """The cap's field name (``max_concurrent_sessions``, ...)."""
        return CAP_CODES.get(self.code or "", "max_concurrent_sessions")


class StreamDropped(Unavailable):
    """An event stream ended abruptly (connection reset, incomplete chunked body, read error)."""

    default_message = "the event stream was interrupted"


def leaves_outcome_unknown(error: BaseException) -> bool:
    """Whether a failed call may still have taken effect: no answer, an unreadable one, or a gateway
    timeout. Every other error is the service's own refusal, or came before anything was sent."""
    if isinstance(error, NoAnswer | BadResponse):
        return True
    return isinstance(error, ServiceError) and error.status == 504


ERROR_BY_STATUS: dict[int, type[ServiceError]] = {
    400: Invalid,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: RateLimited,
}


def error_class_for(status: int, code: str | None = None) -> type[ServiceError]:
    if status == 429 and code in CAP_CODES:
        return CapReached
    if status in ERROR_BY_STATUS:
        return ERROR_BY_STATUS[status]
    if status >= 500:
        return Unavailable
    return ServiceError
