"""console.service.api_keys against the sandbox."""

import pytest

from console.service import Conflict, Invalid, NotFound, Service, api_keys


async def test_it_creates_a_key_whose_secret_stays_out_of_repr(service):
    created = await api_keys.create_api_key(service, name="ci", days_to_expire=30)
    assert created.key.startswith("sk_") and created.key not in repr(created)
    assert created.masked_key and created.key not in created.masked_key
    assert created.expires_at is not None and created.project_id is None
    listed = await api_keys.list_api_keys(service)
    assert [k.id for k in listed.items] == [created.id]
    assert not hasattr(listed.items[0], "key")


async def test_it_renames_rotates_and_deletes(service, tenant):
    created = await api_keys.create_api_key(service, name="ci")
    assert (await api_keys.rename_api_key(service, created.id, "ci-2")).name == "ci-2"
    rotated = await api_keys.rotate_api_key(service, created.id, expire_in_days=0)
    assert rotated.key and rotated.key != created.key and rotated.name == "ci-2"
    await api_keys.delete_api_key(service, rotated.id)
    with pytest.raises(NotFound):
        await api_keys.get_api_key(service, rotated.id)
    assert (await api_keys.get_api_key(service, rotated.id, include_deleted=True)).deleted_at is not None
    deleted = await api_keys.list_api_keys(service, status="deleted")
    assert [k.id for k in deleted.items] == [rotated.id]


async def test_it_maps_field_errors_and_the_self_delete_conflict(service, tenant):
    with pytest.raises(Invalid) as caught:
        await api_keys.create_api_key(service, name="x", days_to_expire=0)
    assert "days_to_expire" in caught.value.field_errors
    created = await api_keys.create_api_key(service, name="self")
    own = Service(base_url=service.base_url, api_key=created.key)
    with pytest.raises(Conflict):
        await api_keys.delete_api_key(own, created.id)
