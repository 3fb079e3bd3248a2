"""console.service.proxies against the sandbox (notes §11)."""

import pytest

from console.service import Invalid, NotFound, proxies

SECRET = "s3cret-proxy-pass"


async def test_it_creates_each_type_with_its_config(service):
    dc = await proxies.create_proxy(service, type="isp", name="dc", config={"country": ""})
    assert (dc.type, dc.name, dc.protocol, dc.config) == ("isp", "dc", "https", {"country": "US"})
    assert dc.status is None and dc.last_checked is None
    resi = await proxies.create_proxy(
        service, type="residential", config={"country": "US", "city": "austin", "os": "android"}
    )
    assert resi.config["city"] == "austin"
    assert not resi.stable_exit


async def test_it_creates_a_custom_proxy_without_ever_reading_the_password_back(service):
    proxy = await proxies.create_proxy(
        service,
        type="custom",
        name="corp",
        protocol="http",
        bypass_hosts=["intranet.example.com"],
        config={"host": "10.0.0.5", "port": 3128, "username": "svc", "password": SECRET},
    )
    assert proxy.endpoint == "10.0.0.5:3128"
    assert proxy.config["has_password"] is True
    assert proxy.bypass_hosts == ["intranet.example.com"]
    assert SECRET not in repr(proxy.config) + repr(proxy.extra)
    fetched = await proxies.get_proxy(service, proxy.id)
    assert "password" not in fetched.config


async def test_it_maps_field_errors(service):
    with pytest.raises(Invalid) as caught:
        await proxies.create_proxy(service, type="custom", config={"host": "p.example.com"})
    assert "config.port" in caught.value.field_errors


async def test_it_lists_renames_and_soft_deletes(service):
    first = await proxies.create_proxy(service, type="isp", name="same")
    second = await proxies.create_proxy(service, type="isp", name="same")
    page = await proxies.list_proxies(service, name="same")
    assert [p.id for p in page] == [first.id, second.id]
    renamed = await proxies.rename_proxy(service, first.id, "renamed")
    assert renamed.name == "renamed"
    assert [p.id for p in await proxies.list_proxies(service, query="renam")] == [first.id]
    await proxies.delete_proxy(service, first.id)
    with pytest.raises(NotFound):
        await proxies.get_proxy(service, first.id)
    paged = await proxies.list_proxies(service, limit=1)
    assert (len(paged.items), paged.has_more) == (1, False)


async def test_it_checks_health_with_and_without_a_target(service):
    proxy = await proxies.create_proxy(service, type="isp")
    checked = await proxies.check_proxy(service, proxy.id)
    assert checked.available
    assert checked.ip_address
    assert checked.last_checked is not None
    targeted = await proxies.check_proxy(service, proxy.id, url="https://gone.invalid/")
    assert targeted.status == "unavailable"
    assert (await proxies.get_proxy(service, proxy.id)).available
    with pytest.raises(Invalid) as caught:
        await proxies.check_proxy(service, proxy.id, url="http://localhost/")
    assert "url" in caught.value.field_errors


async def test_it_reads_a_proxy_by_name_and_a_legacy_datacenter_record(service, tenant):
    named = await proxies.create_proxy(service, type="isp", name="east-isp")
    assert (await proxies.get_proxy(service, "east-isp")).id == named.id
    tenant.call("POST", "/_sandbox/proxies/legacy", json={"name": "old-dc"})
    old = (await proxies.list_proxies(service, name="old-dc")).items[0]
    assert (old.type, old.legacy, named.legacy) == ("datacenter", True, False)
    await proxies.delete_proxy(service, old.id)
