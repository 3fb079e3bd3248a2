"""console.service.telemetry_destinations against the sandbox."""

import pytest

from console.service import Conflict, Invalid
from console.service import telemetry_destinations as destinations

SECRET = "ingest-key-1234567890"


async def test_it_creates_lists_and_never_reads_a_header_value_back(service):
    made = await destinations.create_destination(
        service, name="hc", endpoint="https://api.honeycomb.io", headers={"x-team": SECRET}
    )
    assert made.header_names == ["x-team"] and made.headers == {"x-team": ""}
    page = await destinations.list_destinations(service, query="hc")
    assert [d.id for d in page.items] == [made.id]
    assert SECRET not in repr(page.items)


async def test_it_updates_with_merged_headers_and_deletes(service):
    made = await destinations.create_destination(
        service, name="hc", endpoint="https://api.honeycomb.io", headers={"a": "1", "b": "2"}
    )
    updated = await destinations.update_destination(
        service, made.id, description="prod", set_headers={"c": "3"}, remove_headers=["a"]
    )
    assert updated.header_names == ["b", "c"] and updated.description == "prod"
    await destinations.delete_destination(service, made.id)
    assert (await destinations.list_destinations(service)).items == []


async def test_it_maps_field_errors_and_conflicts(service):
    with pytest.raises(Invalid) as caught:
        await destinations.create_destination(service, name="x", endpoint="http://10.0.0.1")
    assert "endpoint" in caught.value.field_errors
    await destinations.create_destination(service, name="dup", endpoint="https://a.example.com")
    with pytest.raises(Conflict):
        await destinations.create_destination(service, name="dup", endpoint="https://b.example.com")
