"""Reading an action's JSON Schema: readable rows for the app page, and a small validator for payloads.

The validator covers what action schemas use in practice (type, required, properties, enum, const,
minimum/maximum and their exclusive forms, minLength/maxLength, pattern, format uri/date/date-time/email,
items, minItems/maxItems, additionalProperties: false, oneOf/anyOf/allOf). Keywords it does not know are
ignored rather than guessed at: the service and the action have the last word.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from typing import Any
from urllib.parse import urlsplit

TYPE_NAMES = {
    "string": "text",
    "integer": "whole number",
    "number": "number",
    "boolean": "yes/no",
    "object": "object",
    "array": "list",
    "null": "null",
}
COMBINATORS = ("oneOf", "anyOf", "allOf")


def type_label(schema: dict) -> str:
    """A short human description of a schema's type: "text (uri)", "list of text", "one of 2 shapes"."""
    if not isinstance(schema, dict):
        return "any"
    for word in COMBINATORS:
        if isinstance(schema.get(word), list):
            kind = {"oneOf": "one of", "anyOf": "any of", "allOf": "all of"}[word]
            return f"{kind} {len(schema[word])} shapes"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(TYPE_NAMES.get(k, str(k)) for k in kind)
    if kind == "array":
        items = schema.get("items")
        return f"list of {type_label(items)}" if isinstance(items, dict) and items else "list"
    label = TYPE_NAMES.get(kind, "any") if kind else ("object" if "properties" in schema else "any")
    if schema.get("format"):
        label += f" ({schema['format']})"
    return label


def constraints(schema: dict) -> list[str]:
    notes = []
    for key, text in (
        ("minimum", "≥ {}"),
        ("exclusiveMinimum", "> {}"),
        ("maximum", "≤ {}"),
        ("exclusiveMaximum", "< {}"),
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
        ("pattern", "matches {}"),
    ):
        if key in schema and not isinstance(schema[key], bool):
            notes.append(text.format(schema[key]))
    return notes


def rows(schema: Any, *, depth: int = 0, prefix: str = "") -> list[dict]:
    """The properties of a schema, flattened with their depth, for a readable table."""
    if not isinstance(schema, dict):
        return []
    found = []
    required = set(schema.get("required") or [])
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        found.append(
            {
                "name": name,
                "path": f"{prefix}{name}",
                "depth": depth,
                "indent": "— " * depth,
                "type": type_label(prop),
                "required": name in required,
                "has_default": "default" in prop,
                "default": json.dumps(prop.get("default"), ensure_ascii=False),
                "enum": [json.dumps(v, ensure_ascii=False) for v in prop.get("enum") or []],
                "constraints": constraints(prop),
                "description": prop.get("description") or prop.get("title") or "",
            }
        )
        found += rows(prop, depth=depth + 1, prefix=f"{prefix}{name}.")
        items = prop.get("items")
        if prop.get("type") == "array" and isinstance(items, dict) and items.get("properties"):
            found += rows(items, depth=depth + 1, prefix=f"{prefix}{name}[].")
    for word in COMBINATORS:
        for n, option in enumerate(schema.get(word) or [], start=1):
            if isinstance(option, dict):
                label = {"oneOf": "Option", "anyOf": "Option", "allOf": "Part"}[word]
                found.append(
                    {
                        "name": f"{label} {n}",
                        "path": f"{prefix}{word}[{n}]",
                        "depth": depth,
                        "indent": "— " * depth,
                        "type": type_label(option),
                        "required": False,
                        "has_default": False,
                        "default": "",
                        "enum": [],
                        "constraints": [],
                        "description": option.get("description") or "",
                        "heading": True,
                    }
                )
                found += rows(option, depth=depth + 1, prefix=prefix)
    return found


def pretty(schema: Any) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=False)


# Validation --------------------------------------------------------------------------------------


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return {
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "null": value is None,
    }.get(kind, True)


def format_error(value: str, fmt: str | None) -> str | None:
    if fmt in ("uri", "url"):
        parts = urlsplit(value)
        if not parts.scheme or not (parts.netloc or parts.path):
            return "must be a full URL, such as https://example.com/page"
    elif fmt == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            return "must be a date, such as 2025-01-31"
    elif fmt == "date-time":
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return "must be a date and time, such as 2025-01-31T12:00:00Z"
    elif fmt == "email" and not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", value):
        return "must be an e-mail address"
    return None


def _sized(schema: dict, size: int, bounds: tuple[str, str], unit: str, where: str) -> list[str]:
    """What breaks the schema's (least, most) ``bounds`` on a ``size`` counted in ``unit``."""
    least, most = (schema.get(key) for key in bounds)
    found = []
    if isinstance(least, int) and size < least:
        found.append(f"{where} needs at least {least} {unit}")
    if isinstance(most, int) and size > most:
        found.append(f"{where} allows at most {most} {unit}")
    return found


def errors(schema: Any, value: Any, path: str = "") -> list[str]:
    """Why ``value`` does not satisfy ``schema`` (empty when it does); each message names its path."""
    if not isinstance(schema, dict) or not schema:
        return []
    where = path or "the payload"
    found: list[str] = []
    if isinstance(schema.get("allOf"), list):
        for part in schema["allOf"]:
            found += errors(part, value, path)
    for word in ("oneOf", "anyOf"):
        options = schema.get(word)
        if isinstance(options, list) and options:
            matching = [o for o in options if not errors(o, value, path)]
            if not matching:
                shapes = "; ".join(
                    "needs " + ", ".join(o.get("required") or []) if isinstance(o, dict) else "?"
                    for o in options
                )
                found.append(f"{where} matches none of the {len(options)} accepted shapes ({shapes})")
            elif word == "oneOf" and len(matching) > 1:
                found.append(f"{where} matches more than one of the accepted shapes")
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    if kinds and not any(_is_type(value, k) for k in kinds):
        return [*found, f"{where} must be {type_label(schema)}"]
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(json.dumps(v) for v in schema["enum"])
        found.append(f"{where} must be one of {choices}")
    if "const" in schema and value != schema["const"]:
        found.append(f"{where} must be {json.dumps(schema['const'])}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        for key, ok, text in (
            ("minimum", lambda lim: value >= lim, "at least"),
            ("maximum", lambda lim: value <= lim, "at most"),
            ("exclusiveMinimum", lambda lim: value > lim, "more than"),
            ("exclusiveMaximum", lambda lim: value < lim, "less than"),
        ):
            limit = schema.get(key)
            if isinstance(limit, int | float) and not isinstance(limit, bool) and not ok(limit):
                found.append(f"{where} must be {text} {limit}")
    if isinstance(value, str):
        found += _sized(schema, len(value), ("minLength", "maxLength"), "characters", where)
        if isinstance(schema.get("pattern"), str):
            try:
                if not re.search(schema["pattern"], value):
                    found.append(f"{where} must match {schema['pattern']}")
            except re.error:
                pass
        problem = format_error(value, schema.get("format"))
        if problem:
            found.append(f"{where} {problem}")
    if isinstance(value, list):
        found += _sized(schema, len(value), ("minItems", "maxItems"), "items", where)
        if isinstance(schema.get("items"), dict):
            for n, item in enumerate(value):
                found += errors(schema["items"], item, f"{path or 'item'}[{n}]")
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        for name in schema.get("required") or []:
            if name not in value:
                found.append(f"{path + '.' if path else ''}{name} is required")
        for name, item in value.items():
            sub = f"{path}.{name}" if path else name
            if name in props:
                found += errors(props[name], item, sub)
            elif schema.get("additionalProperties") is False:
                found.append(f"{sub} is not an accepted field")
    return found
