"""The base URL guard: where the client may send an organization's API key."""

import time

import pytest

from console.service import Service, projects, targets
from tests.listener import listening


@pytest.mark.parametrize(
    "address",
    ["169.254.169.254", "fe80::1", "::ffff:169.254.169.254", "fd00:ec2::254", "100.100.100.200", "0.0.0.0"],  # noqa: S104
)
def test_it_refuses_link_local_metadata_and_unspecified_addresses_always(address):
    assert targets.refusal(address, allow_private=True)
    assert targets.refusal(address, allow_private=False)


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "10.0.0.1", "172.16.5.5", "192.168.1.1", "fd12::1"])
def test_it_allows_loopback_and_private_addresses_only_when_told(address):
    assert targets.refusal(address, allow_private=True) is None
    assert targets.refusal(address, allow_private=False)


def test_it_allows_public_addresses():
    assert targets.refusal("93.184.216.34", allow_private=False) is None
    assert targets.refusal("2606:2800:220:1:248:1893:25c8:1946", allow_private=False) is None
    # DNS64 in an IPv6-only cluster answers a public host's NAT64 address (it was refused as reserved).
    assert targets.refusal("64:ff9b::5db8:d822", allow_private=False) is None


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("2002:a9fe:a9fe::1", "link-local"),  # 6to4 of 169.254.169.254 (it counted as a public address)
        ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1
        ("2002:a00:1::", "private"),  # 6to4 of 10.0.0.1
        ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
        ("64:ff9b::a0a:a0a", "private"),  # NAT64 of 10.10.10.10
    ],
)
def test_it_judges_an_ipv4_address_carried_in_an_ipv6_one_as_itself(address, why):
    assert why in targets.refusal(address, allow_private=False)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "ftp://example.com/",
        "http://u:p@93.184.216.34/",
        "http:///x",
    ],
)
def test_it_refuses_urls_that_are_not_plain_http(url):
    with pytest.raises(targets.ForbiddenTarget):
        targets.check_url(url, allow_private=True)


def test_it_judges_the_addresses_a_name_resolves_to():
    # 2852039166 is 169.254.169.254 written as one number: the resolved address is what counts.
    with pytest.raises(targets.ForbiddenTarget, match="link-local"):
        targets.check_url("http://2852039166/", allow_private=True)
    with pytest.raises(targets.ForbiddenTarget, match="loopback"):
        targets.check_url("http://localhost:8100/", allow_private=False)


async def test_it_sends_nothing_to_a_refused_base_url():
    with listening() as listener:
        svc = Service(base_url=listener.url, api_key="sk-must-stay-home-1234", allow_private=False)
        with pytest.raises(targets.ForbiddenTarget) as caught:
            await projects.get_auth_context(svc)
    assert caught.value.status is None
    assert listener.received == []


async def test_it_checks_the_address_it_connected_to_against_dns_rebinding():
    with listening() as listener:
        port = int(listener.url.rsplit(":", 1)[1])
        # The check saw a public address for the name; the connection then reaches loopback.
        targets._resolved[("localhost", port)] = (time.monotonic() + 60, ("93.184.216.34",))
        try:
            svc = Service(base_url=f"http://localhost:{port}", api_key="sk-must-stay-home-1234")
            with pytest.raises(targets.ForbiddenTarget, match="connected to a loopback address"):
                await projects.get_auth_context(svc)
        finally:
            targets._resolved.pop(("localhost", port), None)
    assert listener.received == []
