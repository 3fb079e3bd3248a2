"""Request bodies as tables (console/sandbox/core/fields.py): what a declaration says a body may do, and
the one 400 the validator answers. The resources' own tables are tested through their endpoints."""

from __future__ import annotations

import pytest

from console.sandbox.core.errors import ApiError
from console.sandbox.core.fields import Bad, Body, Field, boolean, integer, one_of


def refusal(body: Body, data: dict, **options) -> tuple[str, list[tuple[str, str]]]:
    with pytest.raises(ApiError) as caught:
        body.validate(data, **options)
    error = caught.value
    assert (error.status, error.code) == (400, "invalid_request")
    return error.message, [(d["code"], d["message"]) for d in error.details]


POOL_LIKE = Body(
    message="the pool is not valid",
    refused={"gpu": "pools have no gpu setting"},
    fields=(
        Field("size", integer(1, 10), required="required: how many"),
        Field("name", lambda value, context: value.strip(), skip=(None, "")),
        Field("region", one_of(("us", "eu"), "us or eu"), fixed="set at creation"),
        Field("proxy_id", lambda value, context: value, clear=(None, "")),
        Field("viewport", lambda value, context: _viewport(value), clear=(None, {})),
        Field("stealth", boolean, default=False),
    ),
)


def _viewport(value):
    errors = {f"viewport.{k}": "an integer" for k in ("width", "height") if not isinstance(value.get(k), int)}
    if errors:
        raise Bad(errors)
    return value


def test_it_keeps_what_a_create_gives_and_the_defaults_of_what_it_does_not():
    kept = POOL_LIKE.validate({"size": 3, "name": " warm ", "region": "eu", "proxy_id": "", "unknown": 1})
    assert kept == {"size": 3, "name": "warm", "region": "eu", "proxy_id": None, "stealth": False}


def test_it_changes_only_what_an_update_names():
    assert POOL_LIKE.validate({"viewport": {}, "name": ""}, creating=False) == {"viewport": None}
    assert POOL_LIKE.validate({"size": 4}, creating=False) == {"size": 4}


def test_it_names_every_offending_field_in_the_tables_order():
    message, details = refusal(
        POOL_LIKE, {"gpu": True, "viewport": {"width": "x"}, "size": 0, "stealth": "no", "region": "mars"}
    )
    assert message == "the pool is not valid"
    assert details == [
        ("gpu", "pools have no gpu setting"),
        ("size", "must be between 1 and 10"),
        ("region", "us or eu"),
        ("viewport.width", "an integer"),
        ("viewport.height", "an integer"),
        ("stealth", "must be true or false"),
    ]


def test_it_requires_on_create_and_refuses_a_fixed_field_on_update():
    assert refusal(POOL_LIKE, {"size": None})[1] == [("size", "required: how many")]
    assert refusal(POOL_LIKE, {"region": "us"}, creating=False)[1] == [("region", "set at creation")]
    assert refusal(POOL_LIKE, {"size": None}, creating=False)[1] == [("size", "must be an integer")]


def _first(value, context):
    if not value:
        raise Bad("give a name", alone="name is required")
    return value


STRICT = Body(
    message="not used: every refusal answers alone",
    unknown="not a field",
    unknown_alone="unknown fields",
    prefix="config.",
    clip=5,
    complete=True,
    fields=(Field("name", _first), Field("port", integer(1, 9))),
)


def test_it_answers_a_first_problem_alone_with_its_own_message():
    assert refusal(STRICT, {"port": 0}) == ("name is required", [("config.name", "give a name")])
    assert refusal(STRICT, {"name": "x", "port": 0}) == (
        "not used: every refusal answers alone",
        [("config.port", "must be between 1 and 9")],
    )
    assert refusal(STRICT, {"zzzzzzzzz": 1, "b": 2, "name": ""}) == (
        "unknown fields",
        [("config.b", "not a field"), ("config.zzzzz", "not a field")],
    )


def _never(value, context):
    raise Bad("no")


def test_it_gives_a_field_called_message_its_detail():
    body = Body(message="m", fields=(Field("message", _never),))
    assert refusal(body, {"message": "x"}) == ("m", [("message", "no")])
