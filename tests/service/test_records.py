"""How a record is made from a body (console/service/records.py): without the dataclass's ``__init__`` for
speed (the relay makes one per telemetry event), the same record all the same."""

from __future__ import annotations

import dataclasses

import pytest

from console.service.records import Record


class Plain(Record):
    id: str
    name: str | None = None


class Checked(Record):
    """A record that checks itself after it is made."""

    id: str

    def __post_init__(self) -> None:
        if self.id == "forbidden":
            raise ValueError("not this id")


def test_a_record_made_from_a_body_equals_the_one_its_init_makes():
    made = Plain.from_json({"id": "a", "name": "n", "more": 1})
    assert made == Plain(id="a", name="n", extra={"more": 1})
    assert made.extra == {"more": 1} and made.name == "n"
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.id = "b"


def test_a_record_with_a_post_init_is_made_by_its_init():
    assert Checked.from_json({"id": "fine"}).id == "fine"
    with pytest.raises(ValueError, match="not this id"):
        Checked.from_json({"id": "forbidden"})
