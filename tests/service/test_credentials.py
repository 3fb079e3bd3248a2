"""console.service.credentials against the sandbox (notes §10)."""

import base64
from datetime import UTC, datetime

import pytest

from console.service import Conflict, Invalid, NotFound, credentials

RFC_SECRET = base64.b32encode(b"12345678901234567890").decode()
PASSWORD = "pw-Service-Test-5521"


async def test_it_creates_and_reads_without_values(service):
    created = await credentials.create_credential(
        service, name="github", domain="github.com", values={"username": "bot", "password": PASSWORD}
    )
    assert created.id.startswith("cred_")
    assert created.has_values and not created.has_totp_secret
    assert created.value_keys == ["username", "password"]
    assert created.totp_code is None
    assert created.created_at.tzinfo is not None
    fetched = await credentials.get_credential(service, "github")
    assert fetched.id == created.id
    assert PASSWORD not in repr(fetched) and PASSWORD not in str(fetched.extra)


async def test_it_gets_the_code_when_the_secret_is_set_and_on_request(service, tenant):
    tenant.set_clock("1970-01-01T00:00:59Z")
    created = await credentials.create_credential(
        service, name="gh", domain="github.com", values={}, totp_secret=RFC_SECRET, sso_provider="google"
    )
    assert created.has_totp_secret and created.sso_provider == "google"
    assert created.totp_code == "287082"
    assert created.totp_code_expires_at == datetime(1970, 1, 1, 0, 1, tzinfo=UTC)
    code = await credentials.get_totp_code(service, created.id)
    assert (code.code, code.expires_at) == ("287082", datetime(1970, 1, 1, 0, 1, tzinfo=UTC))


async def test_it_updates_only_what_is_given(service):
    await credentials.create_credential(
        service, name="shop", domain="shop.example.com", values={"username": "a", "password": "b", "pin": "c"}
    )
    merged = await credentials.update_credential(
        service, "shop", values={"password": "new", "email": "e@x.com"}, remove_value_keys=["pin"]
    )
    assert merged.value_keys == ["username", "password", "email"]
    with_totp = await credentials.update_credential(
        service, "shop", totp_secret=RFC_SECRET, sso_provider="okta"
    )
    assert with_totp.has_totp_secret and with_totp.totp_code and with_totp.sso_provider == "okta"
    renamed = await credentials.update_credential(service, "shop", name="shop-eu")
    assert renamed.has_totp_secret and renamed.sso_provider == "okta" and renamed.totp_code is None
    cleared = await credentials.update_credential(service, "shop-eu", totp_secret="", sso_provider="")
    assert not cleared.has_totp_secret and cleared.sso_provider is None
    assert cleared.value_keys == ["username", "password", "email"]


async def test_it_lists_one_page_with_filters(service):
    for i in range(5):
        await credentials.create_credential(service, name=f"c{i}", domain=f"d{i % 2}.com", values={"k": "v"})
    page = await credentials.list_credentials(service, limit=2)
    assert ([c.name for c in page], page.has_more, page.next_offset) == (["c0", "c1"], True, 2)
    assert page.items[0].value_keys is None
    assert [c.name for c in await credentials.list_credentials(service, domain="d1.com")] == ["c1", "c3"]
    assert [c.name for c in await credentials.list_credentials(service, query="c4")] == ["c4"]


async def test_it_maps_errors(service):
    await credentials.create_credential(service, name="dup", domain="x.com", values={})
    with pytest.raises(Conflict):
        await credentials.create_credential(service, name="dup", domain="x.com", values={})
    with pytest.raises(Invalid) as bad:
        await credentials.create_credential(service, name="x", domain="x.com", values={}, totp_secret="nope!")
    assert "totp_secret" in bad.value.field_errors
    with pytest.raises(Invalid) as no_totp:
        await credentials.get_totp_code(service, "dup")
    assert no_totp.value.code == "totp_not_configured"
    with pytest.raises(NotFound):
        await credentials.get_credential(service, "missing")


async def test_it_deletes(service):
    await credentials.create_credential(service, name="gone", domain="x.com", values={})
    await credentials.delete_credential(service, "gone")
    with pytest.raises(NotFound):
        await credentials.delete_credential(service, "gone")


async def test_it_quotes_names_in_paths(service, tenant):
    await credentials.create_credential(service, name="team a", domain="x.com", values={})
    assert (await credentials.get_credential(service, "team a")).name == "team a"
    assert tenant.requests()[-1]["path"] == "/credentials/team a"


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [("jbsw y3dp ehpk 3pxp", "JBSWY3DPEHPK3PXP"), ("JBSW-Y3DP-EHPK-3PXP====", "JBSWY3DPEHPK3PXP")],
)
def test_it_normalizes_totp_secrets(raw, normalized):
    assert credentials.normalize_totp_secret(raw) == normalized


@pytest.mark.parametrize("raw", ["", "JBSWY3DP", "JBSWY3DPEHPK3PX1", "JBSWY3DPEHPK3PXPJ", "ü" * 16])
def test_it_refuses_unusable_totp_secrets_without_quoting_them(raw):
    with pytest.raises(ValueError, match="base32") as error:
        credentials.normalize_totp_secret(raw)
    assert not raw or raw not in str(error.value)
