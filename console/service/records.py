"""Typed records built from the service's JSON, each checked against its declaration at the client's edge.

Declare a record by subclassing ``Record`` with annotated fields; it becomes a frozen dataclass automatically
(keyword-only ``__init__``). The annotations are the record's field table: one description of the body,
read once per class, that both builds and checks every value::

    class Project(Record):
        id: str                              # no default: the contract always sends it
        name: str | None = None
        created_at: datetime | None = None
        size: Count | None = None            # a bounded int (the named types below)

    Project.from_json({"id": "proj_1", "name": "x", "created_at": "2026-01-02T03:04:05Z", "new": 1})
    Project.list_from_json(items)

What the service may leave out or add is tolerated: unknown fields are kept in ``.extra`` (a dict, not shown
in repr, not compared); absent fields, and null ones, take their default (None when they have none).

What a page relies on is checked, and anything else is an ``errors.BadResponse`` (shown like a 5xx, never a
500 deep in a view or a template) naming the record, the field and what was wrong:
- each value has its declared type: ``str``, ``int`` (not a boolean; an integral float is taken), ``float``
  (finite), ``bool``, ``datetime`` (an RFC 3339 string, made aware, years ``YEARS``), a nested ``Record``,
  ``list[...]``, ``dict[str, ...]``; ``Any`` is kept as sent;
- within its bounds: a string at most ``STR_MAX`` characters unless its type says otherwise, a number within
  ``INT_MAX`` (durations within what ``timedelta`` holds), at most ``ENTRIES_MAX`` entries in a list or dict;
- a field declared without a default is present and not empty;
- ids and names are safe in a URL: a field named ``id`` or ``…_id`` is an ``Id`` (at most ``ID_MAX``
  characters, no "/", not dots only: it becomes a path segment of console links and of service paths; an
  empty optional one counts as absent), a field named ``name`` or ``…_name`` is a ``Name`` (at most
  ``NAME_MAX``: names go back upstream in query strings), and a ``LinkName`` is a name that links carry.

One bad record makes the whole answer a BadResponse, lists included (docs/security.md, section 5: a list
that silently left a record out would mislead: "no session running", a total, a bulk confirmation).
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Self

from console.service import errors
from console.service.http import last_request_id

_FRACTION = re.compile(r"(\.\d{6})\d+")

STR_MAX = 64 * 1024  # messages, URLs with their tokens, statuses; bodies and outputs are ``Text``
NAME_MAX = 1024
ID_MAX = 256
ENTRIES_MAX = 10_000  # a list or a dict inside a record (tags: 50 by the contract)
INT_MAX = 2**53  # JSON's safe integers
YEARS = (1900, 2999)  # a date outside is no date of this service; inside, date arithmetic never overflows


@dataclasses.dataclass(frozen=True)
class Bounds:
    """``Annotated`` metadata of a field's type: what its value may be beyond its type."""

    max_len: int | None = STR_MAX  # characters of a string
    low: float | None = None  # numbers
    high: float | None = None
    link: bool = False  # a path segment of console links: no "/", not dots only, not empty


Id = Annotated[str, Bounds(max_len=ID_MAX, link=True)]
Name = Annotated[str, Bounds(max_len=NAME_MAX)]
LinkName = Annotated[str, Bounds(max_len=NAME_MAX, link=True)]
Text = Annotated[str, Bounds(max_len=None)]  # bounded by the answer's size alone (a body, an output)
Count = Annotated[int, Bounds(low=0, high=INT_MAX)]
# Durations become timedeltas (at most 999 999 999 days): 1e300 seconds raised OverflowError in a page.
Seconds = Annotated[int, Bounds(low=0, high=10**10)]  # 317 years
Millis = Annotated[int, Bounds(low=0, high=10**13)]
Pixels = Annotated[int, Bounds(low=0, high=65_535)]  # a viewport's side (computer actions' coordinates)


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one: for a property reading inside a field the
    record keeps as a free-form object (``dict[str, Any]``), whose insides are the service's to shape."""
    return value if isinstance(value, dict) else {}


def string(value: Any) -> str | None:
    """``value`` when it is a string, else None: likewise, for a string inside a free-form object."""
    return value if isinstance(value, str) else None


class _Wrong(Exception):
    """What is wrong with one value, and where (field names from the record down)."""

    def __init__(self, reason: str, path: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason, self.path = reason, path

    def within(self, name: str) -> _Wrong:
        return _Wrong(self.reason, (name, *self.path))


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


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else "null" if value is None else "a value"
    )


def _not(expected: str, value: Any) -> _Wrong:
    return _Wrong(f"is {_kind(value)}, not {expected}")


def _text(bounds: Bounds) -> Callable[[Any], Any]:
    max_len, link = bounds.max_len, bounds.link

    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise _not("a string", value)
        if max_len is not None and len(value) > max_len:
            raise _Wrong(f"is longer than {max_len} characters")
        if link and ("/" in value or not value.strip(".")):
            raise _Wrong("no link can hold (it has a '/' or is dots only)")
        return value

    return check


def _number(kind: type, bounds: Bounds) -> Callable[[Any], Any]:
    low = -INT_MAX if bounds.low is None else bounds.low
    high = INT_MAX if bounds.high is None else bounds.high

    def check(value: Any) -> int | float:
        if type(value) is int and kind is int:  # the usual case (a seq, a timestamp): one test and the bounds
            if not low <= value <= high:
                raise _Wrong(f"is outside {low:g}..{high:g}")
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _not("a number", value)
        if kind is int and isinstance(value, float):
            if not value.is_integer():
                raise _Wrong("is not a whole number")
        elif not math.isfinite(value):
            raise _Wrong("is not a finite number")
        if not low <= value <= high:
            raise _Wrong(f"is outside {low:g}..{high:g}")
        return int(value) if kind is int else float(value)

    return check


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _not("true or false", value)
    return value


def _moment(value: Any) -> datetime:
    if not isinstance(value, str):
        raise _not("an RFC 3339 date and time", value)
    parsed = parse_datetime(value)
    if not isinstance(parsed, datetime):
        raise _Wrong("is not an RFC 3339 date and time")
    if not YEARS[0] <= parsed.year <= YEARS[1]:
        raise _Wrong(f"is a date outside the years {YEARS[0]}..{YEARS[1]}")
    return parsed


def _anything(value: Any) -> Any:
    return value


def _entries(item: Callable[[Any], Any], *, keyed: bool) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not isinstance(value, dict if keyed else list):
            raise _not("an object" if keyed else "a list", value)
        if len(value) > ENTRIES_MAX:
            raise _Wrong(f"has more than {ENTRIES_MAX} entries")
        if (
            item is _anything
        ):  # kept as sent: a copy, without a call per entry (every telemetry event has two)
            return dict(value) if keyed else list(value)
        if keyed:
            out = {}
            for key, entry in value.items():
                try:
                    out[key] = item(entry)
                except _Wrong as wrong:
                    raise wrong.within(str(key)[:40]) from None
            return out
        out_list = []
        for index, entry in enumerate(value):
            try:
                out_list.append(item(entry))
            except _Wrong as wrong:
                raise wrong.within(f"[{index}]") from None
        return out_list

    return check


def _nullable(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else check(value)


def _split(hint: Any) -> tuple[Any, bool, Bounds | None]:
    """``hint`` without ``None`` and ``Annotated``: (the type, whether None is allowed, its bounds)."""
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        hint = args[0] if len(args) == 1 else typing.Union[tuple(args)]  # noqa: UP007
    bounds = None
    if typing.get_origin(hint) is Annotated:
        hint, *extras = typing.get_args(hint)
        bounds = next((e for e in extras if isinstance(e, Bounds)), None)
    return hint, optional, bounds


def _checker(hint: Any, bounds: Bounds | None = None, *, nullable: bool = True) -> Callable[[Any], Any]:
    """How a value of type ``hint`` is checked and built (``nullable=False``: None never reaches it, as for
    a record's own fields: see ``Record._build``).

    Worked out once per field (``Record._field_specs``), not per value: a list page builds dozens of records.
    """
    hint, optional, own = _split(hint)
    bounds = own or bounds or Bounds()
    if optional and nullable:
        return _nullable(_checker(hint, bounds))
    if hint is Any or hint is object:
        return _anything
    if hint is str:
        return _text(bounds)
    if hint is bool:
        return _boolean
    if hint in (int, float):
        return _number(hint, bounds)
    if hint is datetime:
        return _moment
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint._build
    origin = typing.get_origin(hint) or hint
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        return _entries(_checker(item), keyed=False)
    if origin is dict:
        _, item = typing.get_args(hint) or (str, Any)
        return _entries(_checker(item), keyed=True)
    raise TypeError(f"a record field cannot be typed {hint!r}")


@dataclasses.dataclass(frozen=True)
class _Field:
    """One line of a record's field table."""

    name: str
    check: Callable[[Any], Any]
    # Declared without a default: the contract always sends it (an id).
    required: bool
    default: Callable[[], Any]
    # An optional id or link name: empty counts as absent.
    empty_is_absent: bool


def _conventional(name: str, hint: Any) -> Any:
    """The named type a field's name implies when its declaration says only ``str``."""
    bare, optional, bounds = _split(hint)
    if bare is not str or bounds is not None:
        return hint
    if name == "id" or name.endswith("_id"):
        bare = Id
    elif name == "name" or name.endswith("_name"):
        bare = Name
    else:
        return hint
    return bare | None if optional else bare


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record:
    """Base of every record; subclasses become frozen dataclasses on definition."""

    extra: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    _fields: ClassVar[tuple[_Field, ...] | None] = None
    _plain: ClassVar[bool] = True
    # The same, as plain tuples for ``_build`` to unpack: (name, check, required, empty is absent, default).
    _table: ClassVar[tuple[tuple[str, Callable[[Any], Any], bool, bool, Callable[[], Any]], ...] | None] = (
        None
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._fields = cls._table = None
        dataclasses.dataclass(frozen=True, kw_only=True)(cls)
        # A record with a __post_init__ is made by the dataclass's __init__ (``_build`` would skip it).
        cls._plain = not hasattr(cls, "__post_init__")

    @classmethod
    def _field_specs(cls) -> tuple[_Field, ...]:
        # Resolved on first use, not at class creation: hints may name records defined further down.
        if cls.__dict__.get("_fields") is None:
            hints = typing.get_type_hints(cls, include_extras=True)
            specs = []
            for f in dataclasses.fields(cls):
                if f.name == "extra":
                    continue
                hint = _conventional(f.name, hints.get(f.name, Any))
                _, _, bounds = _split(hint)
                if f.default is not dataclasses.MISSING:
                    default, required = (lambda value=f.default: value), False
                elif f.default_factory is not dataclasses.MISSING:
                    default, required = f.default_factory, False
                else:
                    default, required = (lambda: None), True
                specs.append(
                    _Field(
                        f.name,
                        _checker(hint, nullable=False),
                        required,
                        default,
                        empty_is_absent=not required and bounds is not None and bounds.link,
                    )
                )
            cls._fields = tuple(specs)
            cls._table = tuple(
                (f.name, f.check, f.required, f.required or f.empty_is_absent, f.default) for f in specs
            )
        return cls._fields  # type: ignore[return-value]

    @classmethod
    def _prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """The body before it is checked (a record that redacts what it reads overrides this: it returns a
        dict of its own, which the record then keeps rather than copies, or the body itself when nothing in
        it changed, which the record copies as it copies any body)."""
        return data

    @classmethod
    def _build(cls, data: Any) -> Self:
        if not isinstance(data, dict):
            raise _not("an object", data)
        prepared = cls._prepare(data)
        # What is left of the body once the fields are taken out is ``extra``: a copy of the caller's dict.
        data = dict(data) if prepared is data else prepared
        values: dict[str, Any] = {"extra": data}
        if cls._table is None:
            cls._field_specs()
        for name, check, required, empty_is_absent, default in cls._table:  # type: ignore[union-attr]
            value = data.pop(name, None)
            # Empty counts as absent for an optional id or link name, and is missing for a required field.
            if value is None or (empty_is_absent and value == ""):
                # A field declared without a default is one the contract always sends (an id): without it
                # nothing can link to the record, so the answer is unusable rather than merely sparse.
                if required:
                    raise _Wrong("is missing", (name,))
                values[name] = default()
                continue
            try:
                values[name] = check(value)
            except _Wrong as wrong:
                raise wrong.within(name) from None
        if not cls._plain:
            return cls(**values)
        # The record holding ``values`` (every field, ``extra`` included), as the dataclass's ``__init__``
        # would make it but without its call per field (a frozen dataclass sets each through
        # ``object.__setattr__``: a third of building a telemetry event, which the relay does for every one).
        record = object.__new__(cls)
        object.__setattr__(record, "__dict__", values)
        return record

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Self:
        if data is not None and not isinstance(data, dict):
            raise _bad_shape(f"expected {_a(cls)} object, got {_kind(data)}")
        try:
            return cls._build({} if data is None else data)
        except _Wrong as wrong:
            raise _bad_shape(_describe(cls, wrong)) from None

    @classmethod
    def list_from_json(
        cls, items: list[dict[str, Any]] | None, *, max_items: int = ENTRIES_MAX
    ) -> list[Self]:
        if items is None:
            return []
        if not isinstance(items, list):
            raise _bad_shape(f"expected a list of {cls.__name__} objects, got {_kind(items)}")
        if len(items) > max_items:
            raise _bad_shape(
                f"a list of {len(items)} {cls.__name__} objects, more than the {max_items} asked for"
            )
        built = []
        for index, item in enumerate(items):
            try:
                built.append(cls._build(item))
            except _Wrong as wrong:
                raise _bad_shape(f"item {index} of the list: {_describe(cls, wrong)}") from None
        return built


class Named(Record):
    """A record with an id and, usually, a name it is shown by."""

    id: str
    name: str | None = None

    @property
    def label(self) -> str:
        return self.name or self.id


def _describe(cls: type, wrong: _Wrong) -> str:
    if not wrong.path:
        return f"{_a(cls)} object that {wrong.reason}"
    where = ".".join(wrong.path).replace(".[", "[")
    return f"{_a(cls)} object whose {where} {wrong.reason}"


def _bad_shape(what: str) -> errors.BadResponse:
    # The request id of the answer being read: records are built right after their request.
    return errors.BadResponse(
        f"the service sent an answer of the wrong shape: {what}", request_id=last_request_id.get() or None
    )


def _a(cls: type) -> str:
    return ("an " if cls.__name__[:1] in "AEIOU" else "a ") + cls.__name__


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

    max_concurrent_sessions: Count | None = None
    max_concurrent_invocations: Count | None = None
    max_pooled_sessions: Count | None = None  # deprecated, always null; never sent


class OrgLimits(Record):
    auth_connections_used: Count | None = None
    max_auth_connections: Count | None = None
    min_health_check_interval_seconds: Seconds | None = None
    default_project_max_concurrent_sessions: Count | None = None
    max_concurrent_sessions: Count | None = None
    # SDK 0.131 (docs/service-changes.md §1); None when the service does not say.
    concurrent_sessions_used: Count | None = None
    concurrent_sessions_available: Count | None = None
    max_vaults: Count | None = None
    vaults_used: Count | None = None


class OrgEntitlements(Record):
    """``GET /org/entitlements``: what the plan allows; nested objects kept as dicts (new features appear
    often), with a tolerant check for one feature."""

    features: dict[str, Any] | None = None
    limits: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None

    def enabled(self, feature: str) -> bool | None:
        """True/False as the service says; None when it does not mention the feature."""
        enabled = obj((self.features or {}).get(feature)).get("enabled")
        return enabled if isinstance(enabled, bool) else None


class AuthContext(Record):
    """``GET /auth/context``; nested objects are kept as dicts, with shortcuts for what the console shows."""

    principal: dict[str, Any] | None = None
    organization: dict[str, Any] | None = None
    authentication: dict[str, Any] | None = None
    authorization: dict[str, Any] | None = None

    @property
    def organization_id(self) -> str | None:
        return string(obj(self.organization).get("id"))

    @property
    def principal_type(self) -> str | None:
        return string(obj(self.principal).get("type"))

    @property
    def project_id(self) -> str | None:
        """The effective project scope; None means org-wide."""
        return string(obj(obj(self.authorization).get("effective_scope")).get("project_id"))
