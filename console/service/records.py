"""Typed, tolerant records built from the service's JSON.

Declare a record by subclassing ``Record`` with annotated fields; it becomes a frozen
dataclass automatically (keyword-only ``__init__``)::

    class Project(Record):
        id: str
        name: str | None = None
        created_at: datetime | None = None

    Project.from_json({"id": "proj_1", "name": "x", "created_at": "2026-01-02T03:04:05Z", "new": 1})
    Project.list_from_json(items)

``from_json`` tolerates what the service adds or leaves out:
- unknown fields are kept in ``.extra`` (a dict, not shown in repr, not compared);
- absent fields take their default, or None when they have none;
- fields typed ``datetime`` are parsed from RFC 3339 into aware datetimes (naive → UTC); a value that
  does not parse is kept as the raw string rather than failing the whole page;
- fields typed as another Record (or ``list[SomeRecord]``) are built recursively.

What the contract does promise is checked: an object where an object is expected, a list where a list
is, every field declared without a default (ids) present, and such an id (``id``, ``…_id``) one that a
link can hold (no "/", not dots only). Otherwise ``errors.BadResponse``, shown like a 5xx, instead of a
TypeError or NoReverseMatch deep in a view.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, Self

from console.service import errors
from console.service.http import last_request_id

_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_datetime(value: Any) -> datetime | Any:
    """RFC 3339 → aware datetime; anything that does not parse is returned unchanged."""
    if not isinstance(value, str) or not value:
        return value
    text = _FRACTION.sub(r"\1", value.strip())
    if text[-1:] in "zZ":
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return value
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _unwrap_optional(hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _is_record(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, Record)


def _converter(hint: Any) -> Callable[[Any], Any] | None:
    """How a field typed ``hint`` turns a non-None JSON value into its Python value (None: kept as is).

    Worked out once per field (``Record._fields``), not per value: a list page builds dozens of records.
    """
    hint = _unwrap_optional(hint)
    if hint is datetime:
        return parse_datetime
    if _is_record(hint):
        return lambda value: hint.from_json(value) if isinstance(value, dict) else value
    if typing.get_origin(hint) is list:
        (item_hint,) = typing.get_args(hint) or (Any,)
        item_hint = _unwrap_optional(item_hint)
        if item_hint is datetime or _is_record(item_hint):
            item = _converter(item_hint)
            return lambda value: (
                [None if v is None else item(v) for v in value] if isinstance(value, list) else value
            )
    return None


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    convert: Callable[[Any], Any] | None
    # Declared without a default: the contract always sends it (an id).
    required: bool
    # A required ``id`` / ``…_id``: it becomes a path segment of console links.
    link: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record:
    """Base of every record; subclasses become frozen dataclasses on definition."""

    extra: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    _fields: ClassVar[tuple[_Field, ...] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._fields = None
        dataclasses.dataclass(frozen=True, kw_only=True)(cls)

    @classmethod
    def _field_specs(cls) -> tuple[_Field, ...]:
        # Resolved on first use, not at class creation: hints may name records defined further down.
        if cls.__dict__.get("_fields") is None:
            hints = typing.get_type_hints(cls)
            specs = []
            for f in dataclasses.fields(cls):
                if f.name == "extra":
                    continue
                required = not _has_default(cls, f.name)
                link = required and (f.name == "id" or f.name.endswith("_id"))
                specs.append(_Field(f.name, _converter(hints.get(f.name, Any)), required, link))
            cls._fields = tuple(specs)
        return cls._fields  # type: ignore[return-value]

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Self:
        if data is not None and not isinstance(data, dict):
            raise _bad_shape(f"expected {_a(cls)} object, got {_kind(data)}")
        data = dict(data or {})
        kwargs: dict[str, Any] = {}
        missing, unlinkable = [], []
        for spec in cls._field_specs():
            if spec.name in data:
                value = data.pop(spec.name)
                if value is not None and spec.convert is not None:
                    value = spec.convert(value)
                kwargs[spec.name] = value
            elif spec.required:
                kwargs[spec.name] = None
            else:
                continue
            if not spec.required:
                continue
            value = kwargs[spec.name]
            # A field declared without a default is one the contract always sends (an id): without it
            # nothing can link to the record, so the answer is unusable rather than merely sparse.
            if value in (None, ""):
                missing.append(spec.name)
            # Ids become path segments of console links: one with "/" matches no route (reverse() raised,
            # a 500) and one of dots only links elsewhere in the console ("/browsers/../").
            elif spec.link and isinstance(value, str) and ("/" in value or not value.strip(".")):
                unlinkable.append(spec.name)
        if missing:
            raise _bad_shape(f"{_a(cls)} object without {', '.join(missing)}")
        if unlinkable:
            raise _bad_shape(f"{_a(cls)} object whose {', '.join(unlinkable)} no link can hold")
        return cls(**kwargs, extra=data)

    @classmethod
    def list_from_json(cls, items: list[dict[str, Any]] | None) -> list[Self]:
        if items is None:
            return []
        if not isinstance(items, list):
            raise _bad_shape(f"expected a list of {cls.__name__} objects, got {_kind(items)}")
        return [cls.from_json(item) for item in items]


def _bad_shape(what: str) -> errors.BadResponse:
    # The request id of the answer being read: records are built right after their request.
    return errors.BadResponse(
        f"the service sent an answer of the wrong shape: {what}", request_id=last_request_id.get() or None
    )


def _a(cls: type) -> str:
    return ("an " if cls.__name__[:1] in "AEIOU" else "a ") + cls.__name__


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def _has_default(cls: type, name: str) -> bool:
    f = cls.__dataclass_fields__[name]  # type: ignore[attr-defined]
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


# --- Records of console.service.projects (notes §1, §15) ---------------------------------------


class Project(Record):
    id: str
    name: str | None = None
    status: str | None = None  # active | archived
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def archived(self) -> bool:
        return self.status == "archived"


class ProjectLimits(Record):
    """Each field: None = no project-level cap (the org limit applies)."""

    max_concurrent_sessions: int | None = None
    max_concurrent_invocations: int | None = None
    max_pooled_sessions: int | None = None  # deprecated, always null; never sent


class OrgLimits(Record):
    auth_connections_used: int | None = None
    max_auth_connections: int | None = None
    min_health_check_interval_seconds: int | None = None
    default_project_max_concurrent_sessions: int | None = None
    max_concurrent_sessions: int | None = None
    # SDK 0.131 (docs/service-changes.md §1); None when the service does not say.
    concurrent_sessions_used: int | None = None
    concurrent_sessions_available: int | None = None
    max_vaults: int | None = None
    vaults_used: int | None = None


class OrgEntitlements(Record):
    """``GET /org/entitlements``: what the plan allows; nested objects kept as dicts (new features appear
    often), with a tolerant check for one feature."""

    features: dict[str, Any] | None = None
    limits: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None

    def enabled(self, feature: str) -> bool | None:
        """True/False as the service says; None when it does not mention the feature."""
        entry = (self.features or {}).get(feature)
        return entry.get("enabled") if isinstance(entry, dict) else None


class AuthContext(Record):
    """``GET /auth/context``; nested objects are kept as dicts, with shortcuts for what the console shows."""

    principal: dict[str, Any] | None = None
    organization: dict[str, Any] | None = None
    authentication: dict[str, Any] | None = None
    authorization: dict[str, Any] | None = None

    @property
    def organization_id(self) -> str | None:
        return (self.organization or {}).get("id")

    @property
    def principal_type(self) -> str | None:
        return (self.principal or {}).get("type")

    @property
    def project_id(self) -> str | None:
        """The effective project scope; None means org-wide."""
        scope = (self.authorization or {}).get("effective_scope") or {}
        return scope.get("project_id")
