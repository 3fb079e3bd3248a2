"""The service's error body, raised anywhere in a sandbox handler and rendered by the app."""

from __future__ import annotations


class ApiError(Exception):
    """An error the sandbox answers with, in the service's shape (spec: Errors).

    Field errors go into ``details`` as ``{"code": "<field name>", "message": "<why>"}``: the console's
    client reads a detail whose code names a field as that field's error.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: list[dict] | None = None,
        inner_error: dict | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []
        self.inner_error = inner_error
        self.headers = headers or {}

    def body(self) -> dict:
        body = {"code": self.code, "message": self.message, "details": self.details}
        if self.inner_error:
            body["inner_error"] = self.inner_error
        return body


def not_found(kind: str, key: str) -> ApiError:
    return ApiError(404, "not_found", f"{kind} {key!r} was not found")


def invalid(message: str, **fields: str) -> ApiError:
    """400 with one detail per offending field."""
    return ApiError(
        400,
        "invalid_request",
        message,
        details=[{"code": name, "message": why} for name, why in fields.items()],
    )


def conflict(message: str, code: str = "conflict") -> ApiError:
    return ApiError(409, code, message)
