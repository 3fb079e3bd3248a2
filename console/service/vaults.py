"""Vaults, their items and item events (``/vaults``; SDK 0.131, docs/service-changes.md §11).

A sensitive field's value is write-only: it goes out in a PUT or PATCH and comes back as ``has_value``.
Items of types the console does not manage (cards, wallets, 1Password accounts) are still listed, with
their raw type and state.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console.service.collection import Collection, fetch_list, fetch_one
from console.service.http import Service, path_segment, request
from console.service.records import LinkName, Named, Record, obj, string

__all__ = [
    "Field",
    "Item",
    "ItemEvent",
    "Vault",
    "create_vault",
    "delete_item",
    "delete_vault",
    "get_item",
    "get_vault",
    "item_events",
    "list_items",
    "list_vaults",
    "put_item",
    "update_item",
]


class Vault(Named):
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    label: str | None
    required: bool
    sensitive: bool
    has_value: bool
    value: str | None  # only for non-sensitive fields


class Item(Record):
    id: str
    key: LinkName | None = None  # a path segment of the item's page
    type: str | None = None
    version: int | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    spec: dict[str, Any] | None = None
    state: dict[str, Any] | None = None

    @property
    def status(self) -> str | None:
        return string(obj(self.state).get("status"))

    @property
    def description(self) -> str | None:
        return string(obj(self.spec).get("description"))

    @property
    def fields(self) -> list[Field]:
        """The credential fields with their state (empty for item types without fields)."""
        states = obj(obj(self.state).get("fields"))
        specs = obj(self.spec).get("fields")
        found = []
        for spec in specs if isinstance(specs, list) else []:
            name = string(obj(spec).get("name"))
            if not name:
                continue
            state = obj(states.get(name))
            sensitive = spec.get("sensitive", False) is not False  # anything but a plain "no" hides it
            found.append(
                Field(
                    name=name,
                    type=string(spec.get("type")) or "",
                    label=string(spec.get("label")),
                    required=spec.get("required", False) is True,
                    sensitive=sensitive,
                    has_value=state.get("has_value") is True,
                    value=None if sensitive else string(state.get("value")),
                )
            )
        return found


class ItemEvent(Record):
    id: str
    name: str | None = None
    created_at: datetime | None = None
    browser_id: str | None = None
    data: dict[str, Any] | None = None


VAULTS = Collection("/vaults", Vault)
list_vaults = VAULTS.list
get_vault = VAULTS.get
delete_vault = VAULTS.delete


def _item(vault: str, key: str) -> str:
    return VAULTS.at(vault, f"/items/{path_segment(key)}")


async def create_vault(svc: Service, name: str) -> Vault:
    """Creates the vault, or returns the one of that name (the service upserts by name)."""
    return await VAULTS.create(svc, {"name": name})


async def list_items(svc: Service, vault: str) -> list[Item]:
    return await fetch_list(svc, Item, VAULTS.at(vault, "/items"))


async def get_item(svc: Service, vault: str, key: str) -> Item:
    return await fetch_one(svc, Item, "GET", _item(vault, key))


async def put_item(
    svc: Service, vault: str, key: str, *, fields: list[dict[str, Any]], description: str | None = None
) -> Item:
    """Create a credential item (provider ``kernel``); each field: name, type, sensitive, required, value."""
    spec: dict[str, Any] = {"provider": "kernel", "fields": fields}
    if description:
        spec["description"] = description
    return await fetch_one(svc, Item, "PUT", _item(vault, key), json={"type": "credential", "spec": spec})


async def update_item(
    svc: Service,
    vault: str,
    key: str,
    *,
    version: int,
    values: dict[str, str | None] | None = None,
    remove_fields: list[str] | None = None,
    description: str | None = None,
) -> Item:
    """Set (or, with None, clear) field values and remove fields; 409 when ``version`` is stale."""
    spec: dict[str, Any] = {}
    if values:
        spec["fields"] = {name: {"value": value} for name, value in values.items()}
    if remove_fields:
        spec["remove_fields"] = list(remove_fields)
    if description is not None:
        spec["description"] = description
    body = {"type": "credential", "version": version, "spec": spec}
    return await fetch_one(svc, Item, "PATCH", _item(vault, key), json=body)


async def delete_item(svc: Service, vault: str, key: str) -> None:
    await request(svc, "DELETE", _item(vault, key), expect="none")


async def item_events(svc: Service, vault: str, key: str, *, after: str | None = None) -> list[ItemEvent]:
    return await fetch_list(svc, ItemEvent, _item(vault, key) + "/events", params={"after": after or None})
