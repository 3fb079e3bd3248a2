"""Every record of the service client, fed generated JSON (Hypothesis): whatever the service sends, a record
is either built and keeps what pages rely on, or the answer is a BadResponse; never any other exception.

The generated values are the record's own fields with values of their declared type, of the wrong type,
at and past their bounds, and keys the record's properties read (string literals of its module), nested
as the contract nests them; and any JSON value at all. What a built record promises is checked here from
its declaration, independently of how ``console/service/records.py`` checks it:
- every field holds its declared type (None only where the field is optional), a required field is not
  empty, strings and collections within their bounds, numbers finite and within their bounds;
- ids and link names are path segments Django's ``<str:…>`` matches and that lead nowhere else (no ``/``,
  not dots only);
- dates are aware, and a duration added to one never overflows;
- every property of the record evaluates (pages call them), and so do ``str`` and ``repr``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import json
import math
import pkgutil
import re
import types
import typing
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import pytest
from django.urls.converters import StringConverter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import console.service
from console.service import errors, records
from console.service.records import Bounds, Record

for module in pkgutil.iter_modules(console.service.__path__):
    importlib.import_module(f"console.service.{module.name}")


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


RECORDS = sorted(set(_subclasses(Record)), key=lambda c: (c.__module__, c.__qualname__))
EXAMPLES = settings(
    max_examples=100,
    deadline=None,
    database=None,
    derandomize=True,  # the same examples on every run and every machine: a failure is reproducible
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _name(cls: type) -> str:
    return f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__qualname__}"


# --- what the service might send -----------------------------------------------------------------------

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
EDGE_STRINGS = st.sampled_from(
    ["", " ", "/", "a/b", ".", "..", "x" * (records.ID_MAX + 1), "x" * (records.NAME_MAX + 1), "\u202e\x1b"]
)
EDGE_NUMBERS = st.sampled_from([0, -1, 1.5, 2.0, 2**53, 2**53 + 1, -(2**63), 10**30, 1e300, -1e300])
EDGE_FLOATS = st.sampled_from([math.inf, -math.inf, math.nan, 1e300])
EDGE_DATES = st.sampled_from(
    [
        "",
        "yesterday",
        "2026-13-01T00:00:00Z",
        "0001-01-01T00:00:00Z",
        "1899-12-31T23:59:59Z",
        "2999-12-31T23:59:59-23:59",
        "9999-12-31T23:59:59Z",
        "2026-01-02T03:04:05.123456789Z",
        "2026-01-02T03:04:05",
    ]
)


@functools.cache
def _vocabulary(cls: type) -> list[str]:
    """Keys worth trying: the record's fields and every key-like string literal of its module (what its
    properties read inside free-form objects: ``uptime_ms``, ``browser``, ``enabled``…)."""
    source = inspect.getsource(inspect.getmodule(cls))
    literals = set(re.findall(r"""["']([a-z][a-z0-9_]{1,40})["']""", source))
    return sorted(literals | {f.name for f in dataclasses.fields(cls)})


def _json(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        SCALARS | EDGE_STRINGS | EDGE_NUMBERS,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=10,
    )


ANY_JSON = _json(st.text(max_size=8))


def _split(hint: Any) -> tuple[Any, bool, Bounds | None]:
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional, hint = len(args) < len(typing.get_args(hint)), args[0]
    bounds = None
    if typing.get_origin(hint) is Annotated:
        hint, *extras = typing.get_args(hint)
        bounds = next((e for e in extras if isinstance(e, Bounds)), None)
    return hint, optional, bounds


def _plausible(hint: Any, keys: st.SearchStrategy[str], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of ``hint``'s type, at and past its bounds, or of another type altogether."""
    hint, _, _ = _split(hint)
    other = _json(keys)
    if hint is str:
        mine = st.text(max_size=20) | EDGE_STRINGS
    elif hint is bool:
        mine = st.booleans()
    elif hint in (int, float):
        mine = st.integers(-(10**6), 10**6) | EDGE_NUMBERS | EDGE_FLOATS
    elif hint is datetime:
        moments = st.datetimes(timezones=st.none() | st.just(UTC))
        mine = moments.map(lambda d: d.isoformat()) | EDGE_DATES
    elif isinstance(hint, type) and issubclass(hint, Record):
        mine = _shaped(hint, depth + 1) if depth < 3 else st.just({})
    elif typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint) or (Any,)
        mine = st.lists(_plausible(item, keys, depth + 1), max_size=3)
    elif typing.get_origin(hint) is dict or hint is dict:
        _, item = typing.get_args(hint) or (str, Any)
        mine = st.dictionaries(keys, _plausible(item, keys, depth + 1), max_size=4)
    else:
        return other
    return st.one_of(mine, mine, mine, other)  # mostly plausible, so that records get built


@functools.cache
def _shaped(cls: type, depth: int = 0) -> st.SearchStrategy[dict]:
    """An object with any of ``cls``'s fields and keys its properties read."""
    vocabulary = _vocabulary(cls)
    keys = st.sampled_from(vocabulary) | st.text(max_size=6)
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {
        f.name: _plausible(hints[f.name], keys, depth) for f in dataclasses.fields(cls) if f.name != "extra"
    }
    extra = st.dictionaries(st.sampled_from(vocabulary), _json(keys), max_size=3)
    return st.tuples(st.fixed_dictionaries({}, optional=fields), extra).map(
        lambda pair: {**pair[1], **pair[0]}
    )


# --- what a built record promises ------------------------------------------------------------------------


def _conventional_bounds(name: str) -> Bounds:
    if name == "id" or name.endswith("_id"):
        return Bounds(max_len=records.ID_MAX, link=True)
    if name == "name" or name.endswith("_name"):
        return Bounds(max_len=records.NAME_MAX)
    return Bounds()


def _assert_linkable(where: str, value: str) -> None:
    assert re.fullmatch(StringConverter.regex, value), f"{where}: {value!r} matches no <str:> segment"
    assert value.strip("."), f"{where}: {value!r} is dots only (a link elsewhere)"


def _assert_value(where: str, hint: Any, value: Any, bounds: Bounds) -> None:
    hint, optional, own = _split(hint)
    bounds = own or bounds
    if hint is Any or hint is object:
        json.dumps(value)
        return
    if value is None:
        assert optional, f"{where} is None but not optional"
        return
    if hint is str:
        assert isinstance(value, str), f"{where}: {value!r} is not a string"
        assert bounds.max_len is None or len(value) <= bounds.max_len, (
            f"{where}: longer than {bounds.max_len}"
        )
        if bounds.link:
            _assert_linkable(where, value)
    elif hint is bool:
        assert isinstance(value, bool), f"{where}: {value!r} is not a boolean"
    elif hint in (int, float):
        assert isinstance(value, hint) and not isinstance(value, bool), f"{where}: {value!r} is not {hint}"
        assert math.isfinite(value), f"{where}: {value!r} is not finite"
        low = -records.INT_MAX if bounds.low is None else bounds.low
        high = records.INT_MAX if bounds.high is None else bounds.high
        assert low <= value <= high, f"{where}: {value!r} outside {low}..{high}"
        if hint is int and bounds.high is not None and bounds.high <= 10**13:
            # A duration (Seconds, Millis) as pages use them: added to a date of the service.
            (
                datetime(records.YEARS[1], 12, 31, tzinfo=UTC)
                + timedelta(milliseconds=value)
                + timedelta(seconds=value)
            )
    elif hint is datetime:
        assert isinstance(value, datetime) and value.tzinfo is not None, f"{where}: {value!r} is not aware"
        assert records.YEARS[0] <= value.year <= records.YEARS[1], f"{where}: {value!r} out of range"
        value - datetime.now(UTC)
    elif isinstance(hint, type) and issubclass(hint, Record):
        assert isinstance(value, hint), f"{where}: {value!r} is not a {hint.__name__}"
        _assert_promises(value, where)
    elif typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint) or (Any,)
        assert isinstance(value, list) and len(value) <= records.ENTRIES_MAX, f"{where}: not a short list"
        for index, entry in enumerate(value):
            _assert_value(f"{where}[{index}]", item, entry, Bounds())
    elif typing.get_origin(hint) is dict or hint is dict:
        _, item = typing.get_args(hint) or (str, Any)
        assert isinstance(value, dict) and len(value) <= records.ENTRIES_MAX, f"{where}: not a small object"
        for key, entry in value.items():
            assert isinstance(key, str)
            _assert_value(f"{where}.{key}", item, entry, Bounds())
    else:
        pytest.fail(f"{where}: a field of a type this test does not know ({hint!r})")


def _assert_promises(record: Record, where: str = "") -> None:
    cls = type(record)
    hints = typing.get_type_hints(cls, include_extras=True)
    for f in dataclasses.fields(record):
        if f.name == "extra":
            continue
        value = getattr(record, f.name)
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if required:
            assert value not in (None, ""), f"{where}{f.name}: required but empty"
        _assert_value(f"{where}{f.name}", hints[f.name], value, _conventional_bounds(f.name))
    for name, member in inspect.getmembers(cls):
        if isinstance(member, property):
            getattr(record, name)  # pages call them: none may raise
    str(record), repr(record)


# --- the properties ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", RECORDS, ids=_name)
@EXAMPLES
@given(data=st.data())
def test_it_builds_a_record_that_keeps_its_promises_or_refuses_the_answer(cls, data):
    value = data.draw(st.one_of(_shaped(cls), _shaped(cls), ANY_JSON), label="answer")
    try:
        record = cls.from_json(value)
    except errors.BadResponse:
        return
    _assert_promises(record)


@pytest.mark.parametrize("cls", RECORDS, ids=_name)
@settings(EXAMPLES, max_examples=25)
@given(data=st.data())
def test_it_builds_a_list_of_records_or_refuses_the_answer(cls, data):
    value = data.draw(st.lists(_shaped(cls), max_size=3) | ANY_JSON, label="answer")
    try:
        built = cls.list_from_json(value)
    except errors.BadResponse:
        return
    assert isinstance(built, list)
    for record in built:
        _assert_promises(record)


def test_it_finds_every_record_of_the_client():
    assert len(RECORDS) >= 45 and {"Session", "BrowserPool", "AppSummary", "FileInfo"} <= {
        c.__name__ for c in RECORDS
    }
