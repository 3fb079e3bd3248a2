"""Showing the service's own validation errors the same way as ours: next to the field."""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any
from urllib.parse import SplitResult, urlsplit

from django import forms

from console.service.contract import OPERATIONAL_CATEGORIES
from console.service.errors import Conflict, Invalid


class WriteOnlyTextarea(forms.Textarea):
    """A textarea for secret-ish text (a CA bundle, environment variables): what was typed is never rendered
    back, not even when the form comes back with an error elsewhere; the user pastes it again."""

    def format_value(self, value):
        return None


class NameField(forms.CharField):
    """A required name (255 characters at most unless told), trimmed; all blanks is refused as blank."""

    def __init__(self, **kwargs):
        super().__init__(**{"max_length": 255, **kwargs})

    def clean(self, value):
        value = super().clean(value).strip()
        if not value:
            raise forms.ValidationError("A name cannot be blank.")
        return value


def path_name(value: str, what: str) -> str:
    """A name the service takes in a URL path in place of an id: trimmed, not blank, without "/" or "%"."""
    value = value.strip()
    if not value:
        raise forms.ValidationError(f"A {what} needs a name.")
    if "/" in value or "%" in value:
        raise forms.ValidationError(f"A {what} name cannot contain / or %.")
    return value


def apply_service_errors(form: forms.Form, error: Invalid, field_map: dict[str, str] | None = None) -> None:
    """Attach ``error.field_errors`` to the form's fields (service name → form field via ``field_map``);
    what names no field of the form goes to the form's non-field errors, with the service's message."""
    field_map = field_map or {}
    placed = False
    for name, messages in error.field_errors.items():
        target = field_map.get(name, name)
        if name != "__all__" and target in form.fields:
            for message in messages:
                form.add_error(target, message)
            placed = True
        else:
            for message in messages:
                form.add_error(None, f"{name}: {message}" if name != "__all__" else message)
            placed = True
    if not placed:
        form.add_error(None, error.message)


def show_refusal(
    form: forms.Form,
    error: Invalid | Conflict,
    field_map: dict[str, str] | None = None,
    *,
    conflict_field: str | None = "name",
) -> None:
    """The service's refusal of what the form sent, on the form: an ``Invalid`` field by field
    (``apply_service_errors``), a ``Conflict`` (a name taken) on ``conflict_field`` (None: the form)."""
    if isinstance(error, Invalid):
        apply_service_errors(form, error, field_map)
    else:
        form.add_error(conflict_field, error.message)


# Host names that are not on the internet, whatever they resolve to here.
PRIVATE_SUFFIXES = (".internal", ".local", ".localhost", ".lan", ".home.arpa", ".intranet", ".corp")
HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,128}$")


def http_url(value: str) -> SplitResult:
    """An absolute http(s) URL typed into a form, split; anything else is a ValidationError."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise forms.ValidationError("Enter an http:// or https:// URL.")
    return parts


def public_url(value: str, refusal: str) -> SplitResult:
    """``http_url``, on a public address or a host name that may be one: the service reaches it from the
    internet, so a private one is refused with ``{host} is not a public host: <refusal>``."""
    parts = http_url(value)
    host = parts.hostname.lower().rstrip(".")
    try:
        private = not ipaddress.ip_address(host).is_global
    except ValueError:
        private = host == "localhost" or "." not in host or host.endswith(PRIVATE_SUFFIXES)
    if private:
        raise forms.ValidationError(f"{host} is not a public host: {refusal}.")
    return parts


def header_lines(text: str, hint: str = "") -> dict[str, str]:
    """``Name: value`` per line → a dict; a bad line is named by its number (it may hold a secret: never
    echoed), with ``hint`` after the expected form."""
    headers: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not HEADER_NAME.match(name):
            raise forms.ValidationError(f"Line {number}: write Name: value{hint}.")
        headers[name] = value
    return headers


# Deeper than any policy or payload a person writes; deep enough input used to end in a RecursionError
# (a 500), and anything near Python's limit would fail again when sent on.
MAX_JSON_DEPTH = 64


def parse_json(text: str) -> Any:
    """JSON typed into a form, parsed; bad or too deeply nested JSON is a ValidationError for the field."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise forms.ValidationError(TOO_DEEP) from None
    except ValueError as exc:
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise forms.ValidationError(f"Not valid JSON: {getattr(exc, 'msg', exc)}{where}.") from None
    if _depth(value) > MAX_JSON_DEPTH:
        raise forms.ValidationError(TOO_DEEP)
    return value


TOO_DEEP = f"The JSON is too deeply nested (at most {MAX_JSON_DEPTH} levels)."


def _depth(value: Any) -> int:
    """Nesting depth, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


# What each telemetry category captures (console.service.contract.CAPTURE_CATEGORIES), for the session and
# pool forms.
CATEGORY_HELP = {
    "console": "console.log and errors, with stack traces",
    "network": "requests and responses (bodies truncated)",
    "page": "navigations, load, layout shifts",
    "interaction": "clicks, keys, scrolls",
    "control": "calls to the browser's API",
    "connection": "CDP and live-view attach/detach",
    "system": "out-of-memory kills, crashes",
    "captcha": "CAPTCHA solver results",
    "screenshot": "periodic screenshots (high volume)",
}
# What a new session or pool captures unless changed: the operational categories and what an operator
# debugs with first (both forms start from it, so a session and a pool begin alike).
DEFAULT_TELEMETRY_CATEGORIES = (*OPERATIONAL_CATEGORIES, "console", "network", "page")
# Viewport presets worth a word beside their size.
PRESET_NOTES = {"768x1024@60": "portrait tablet", "390x844@60": "phone"}


def viewport_label(preset: str) -> str:
    """``1920x1080@25`` as people read it (a multiplication sign, Hz), with a note for the odd ones out."""
    size, _, rate = preset.partition("@")
    width, _, height = size.partition("x")
    note = f" ({PRESET_NOTES[preset]})" if preset in PRESET_NOTES else ""
    return f"{width} \u00d7 {height} @ {rate} Hz{note}"
