"""console.service.credential_providers against the sandbox."""

import pytest

from console.service import Invalid
from console.service import credential_providers as providers

TOKEN = "ops_" + "z9y8x7w6v5" * 3


async def test_it_creates_tests_and_lists_items(service):
    made = await providers.create_provider(service, name="1p", token=TOKEN)
    assert made.provider_type == "onepassword" and made.enabled
    assert TOKEN not in repr(made) and not made.extra
    result = await providers.test_provider(service, made.id)
    assert result.success and result.vaults
    items = await providers.list_items(service, made.id)
    assert "Shop/Stripe Dashboard" in [i.path for i in items]


async def test_it_updates_and_deletes(service):
    made = await providers.create_provider(service, name="1p", token=TOKEN)
    updated = await providers.update_provider(service, made.id, enabled=False, priority=3)
    assert (updated.enabled, updated.priority) == (False, 3)
    await providers.delete_provider(service, made.id)
    assert (await providers.list_providers(service)).items == []


async def test_it_raises_invalid_for_a_refused_token(service):
    made = await providers.create_provider(service, name="1p", token="ops_revoked_" + "q" * 20)
    with pytest.raises(Invalid) as caught:
        await providers.list_items(service, made.id)
    assert caught.value.code == "provider_auth_failed"
