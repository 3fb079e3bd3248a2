"""console.service.vaults against the sandbox."""

import pytest

from console.service import Conflict, vaults

SECRET = "s3cret-field-value"


async def test_it_creates_a_vault_and_an_item_whose_sensitive_value_never_comes_back(service):
    vault = await vaults.create_vault(service, "checkout")
    assert (await vaults.create_vault(service, "checkout")).id == vault.id
    item = await vaults.put_item(
        service,
        "checkout",
        "login",
        fields=[
            {"name": "username", "type": "email", "value": "a@example.com"},
            {"name": "password", "type": "password", "sensitive": True, "value": SECRET},
        ],
        description="buyer",
    )
    fields = {f.name: f for f in item.fields}
    assert fields["password"].has_value and fields["password"].value is None
    assert fields["username"].value == "a@example.com" and item.status == "ready"
    assert SECRET not in repr(await vaults.list_items(service, "checkout"))


async def test_it_updates_with_the_version_and_reads_the_events(service):
    await vaults.create_vault(service, "v")
    item = await vaults.put_item(
        service, "v", "k", fields=[{"name": "password", "type": "password", "value": "x"}]
    )
    updated = await vaults.update_item(service, "v", "k", version=item.version, values={"password": None})
    assert updated.version == 2 and not updated.fields[0].has_value
    with pytest.raises(Conflict):
        await vaults.update_item(service, "v", "k", version=1, values={"password": "y"})
    events = await vaults.item_events(service, "v", "k")
    assert [e.name for e in events] == ["item.created", "item.fields_cleared"]
    await vaults.delete_item(service, "v", "k")
    await vaults.delete_vault(service, "v")
    assert (await vaults.list_vaults(service)).items == []
