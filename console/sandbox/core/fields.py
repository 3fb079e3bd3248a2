"""Request bodies described once, as tables of fields, and checked by one small validator.

A resource declares each body it takes as a ``Body`` of ``Field``s, in the order its errors are told;
``Body.validate`` walks the table and answers the values to keep, or one 400 ``invalid_request`` with a
detail per offending field (``{"code": <field>, "message": <why>}``, the form the console's client puts
next to its form fields). A field says, declaratively, what a body may do with it:

- ``check(value, context)`` returns the value to keep or raises ``Bad`` with why (a ``{code: why}`` dict
  when parts of the value are checked one by one: ``viewport.width``);
- ``required``: a create body must give it (absent or null is that message); ``fixed``: an update body
  may not give it at all (it is set at creation);
- ``clear``: values that clear the setting (the answer holds None); ``skip``: values taken as absent;
- ``default``: what a create answer holds for an absent field (unchecked; otherwise absent stays absent:
  an update changes only what it names); ``always``: the check runs even when the field is absent (with
  None: it gives its own default, or reads other fields of the body through ``context.body``);
- ``key`` names the answer's entry (the field's name by default), and ``apply`` turns a kept value into
  several entries.

``Body(refused={name: why})`` lists fields the body must not carry, and ``unknown`` the message (or a
function of the field's name giving it) for fields the table does not have, ``also`` excepted (fields
another's check reads, or that are accepted and ignored); without ``unknown`` they are ignored, as the
service ignores them. A ``complete`` body runs every check, absent fields included (each gives its
default), so the answer holds every field. ``prefix`` is put before every detail code (the fields of a
nested object: ``config.host``), and ``clip`` cuts an unknown field's name in its detail code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from console.sandbox.core.errors import ApiError

ABSENT = object()  # a field the body does not carry (``Field.default`` unset)


class Bad(Exception):
    """Why a value is refused: a message for the field, or ``{detail code: message}`` for its parts.

    ``alone``: this refusal answers at once, by itself, with that message as the 400's (a body whose first
    problem is the only one told, as some of the service's are)."""

    def __init__(self, why: str | dict[str, str], *, alone: str | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.alone = alone


@dataclass
class Context:
    """What a check may consult besides its value: the whole body, what was kept so far, whether the body
    creates or updates, and the caller's own (``extra``: the tenant and project, a record...)."""

    body: dict
    kept: dict
    creating: bool
    extra: dict = field(default_factory=dict)

    def __getattr__(self, name: str):
        try:
            return self.__dict__["extra"][name]
        except KeyError:
            raise AttributeError(name) from None


def as_given(value, context: Context):
    return value


@dataclass(frozen=True)
class Field:
    name: str
    check: Callable[[Any, Context], Any] = as_given
    key: str | None = None
    required: str | None = None
    fixed: str | None = None
    clear: tuple = ()
    skip: tuple = ()
    default: Any = ABSENT
    always: bool = False
    apply: Callable[[Any], dict] | None = None

    def keep(self, value, kept: dict) -> None:
        if self.apply is not None:
            kept.update(self.apply(value))
        else:
            kept[self.key or self.name] = value


@dataclass(frozen=True)
class Body:
    """One body a resource takes: its fields in the order their errors are told."""

    message: str  # the 400's message when anything is refused
    fields: tuple[Field, ...]
    refused: dict[str, str | Bad] = field(default_factory=dict)  # fields it must not carry, and why
    unknown: str | Callable[[str], str] | None = None  # why a field not in the table is refused
    unknown_alone: str | None = None  # unknown fields answer at once, together, with this message
    also: frozenset[str] = frozenset()  # fields it may carry that no field of its own checks
    complete: bool = False  # every check runs, absent fields included
    clip: int | None = None  # an unknown field's detail code is cut to this (a client's name, any size)
    prefix: str = ""  # before every field's detail code (a nested object's: ``config.``)

    def names(self) -> frozenset[str]:
        """Every field the body may carry."""
        return frozenset(f.name for f in self.fields) | self.also

    def validate(self, body: dict, *, creating: bool = True, **extra) -> dict:
        """The values to keep (``Field.key`` → value); ``invalid`` (400) naming every offending field."""
        errors: dict[str, str] = {}
        for name, why in self.refused.items():
            if name in body:
                if isinstance(why, Bad):
                    self._refuse(name, why, errors)
                else:
                    errors[self.prefix + name] = why
        if self.unknown is not None:
            for name in sorted(set(body) - self.names() - set(self.refused)):
                why = self.unknown(name) if callable(self.unknown) else self.unknown
                errors[self.prefix + name[: self.clip]] = why
            if errors and self.unknown_alone is not None:
                raise _invalid(self.unknown_alone, errors)
        context = Context(body=body, kept={}, creating=creating, extra=extra)
        for spec in self.fields:
            value = body.get(spec.name, ABSENT)
            if value is not ABSENT and value in spec.skip:
                value = ABSENT
            if not creating and spec.fixed is not None:
                if value is not ABSENT:
                    errors[self.prefix + spec.name] = spec.fixed
                continue
            if creating and spec.required is not None and (value is ABSENT or value is None):
                errors[self.prefix + spec.name] = spec.required
                continue
            if value is ABSENT and creating and spec.default is not ABSENT:
                spec.keep(spec.default, context.kept)
                continue
            if value is ABSENT and not (spec.always or self.complete):
                continue
            if value is not ABSENT and value in spec.clear:
                spec.keep(None, context.kept)
                continue
            try:
                kept = spec.check(None if value is ABSENT else value, context)
            except Bad as bad:
                self._refuse(spec.name, bad, errors)
                continue
            spec.keep(kept, context.kept)
        if errors:
            raise _invalid(self.message, errors)
        return context.kept

    def _refuse(self, name: str, bad: Bad, errors: dict[str, str]) -> None:
        found = bad.why if isinstance(bad.why, dict) else {self.prefix + name: bad.why}
        if bad.alone is not None:
            raise _invalid(bad.alone, found)
        errors.update(found)


def _invalid(message: str, errors: dict[str, str]) -> ApiError:
    """400 ``invalid_request`` as ``errors.invalid`` builds it (a field may be called anything here,
    ``message`` too)."""
    return ApiError(
        400,
        "invalid_request",
        message,
        details=[{"code": name, "message": why} for name, why in errors.items()],
    )


# Checks that several bodies share ------------------------------------------------------------------


def is_int(value) -> bool:
    """A JSON integer (``true`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def boolean(value, context: Context) -> bool:
    if not isinstance(value, bool):
        raise Bad("must be true or false")
    return value


def optional_boolean(value, context: Context) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise Bad("must be true or false")
    return value


def optional_string(message: str = "must be a string") -> Callable[[Any, Context], str | None]:
    """A string or null (``message`` when it is something else)."""

    def check(value, context: Context) -> str | None:
        if value is not None and not isinstance(value, str):
            raise Bad(message)
        return value

    return check


def integer(low: int, high: int, *, message: str | None = None) -> Callable[[Any, Context], int]:
    """An integer from ``low`` to ``high``: "must be an integer", else ``message`` (by default "must be
    between <low> and <high>")."""

    def check(value, context: Context) -> int:
        if not is_int(value):
            raise Bad("must be an integer")
        if not low <= value <= high:
            raise Bad(message or f"must be between {low} and {high}")
        return value

    return check


def one_of(choices: tuple, message: str) -> Callable[[Any, Context], Any]:
    def check(value, context: Context):
        if value not in choices:
            raise Bad(message)
        return value

    return check


def required_name(missing: str, most: int = 255) -> Callable[[Any, Context], str]:
    """A name of 1 to ``most`` characters, trimmed; ``missing`` says so when it is absent or blank."""

    def check(value, context: Context) -> str:
        if not isinstance(value, str) or not value.strip():
            raise Bad(missing, alone="name is required")
        value = value.strip()
        if len(value) > most:
            raise Bad(f"at most {most} characters", alone="name is too long")
        return value

    return check
