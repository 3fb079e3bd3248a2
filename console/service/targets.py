"""Where the service client may send an organization's API key: the base URL guard.

One rule, used by the settings forms (a clear error on save) and by ``http._send`` before every
request (so a row edited in the shell or the database still cannot aim the key elsewhere):

- the URL is ``http`` or ``https``, has a host and no user info;
- every address the host resolves to is public, except that ``allow_private`` (the setting
  ``SERVICE_URL_ALLOW_PRIVATE``, on in development for the loopback sandbox) admits loopback and
  private ranges;
- link-local (169.254.0.0/16, fe80::/10), the known cloud metadata addresses, multicast, unspecified
  and reserved addresses are refused always: no service runs there, and metadata endpoints hand out
  cloud credentials to whoever asks.

DNS rebinding: a name checked here is resolved again by the client when it connects. The resolution
is cached for ``CACHE_SECONDS`` (so a request costs no lookup), and ``http`` checks the address each
new connection actually reached (``refusal``) before anything is written to it. Through an HTTP proxy
from the environment (``HTTPS_PROXY``) only the check of the name applies: the proxy resolves it.

Never imports Django.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
import urllib.parse

from console.service.errors import ServiceError

CACHE_SECONDS = 30.0
# Metadata endpoints outside the link-local range (AWS over IPv6, Alibaba Cloud).
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in ("fd00:ec2::254", "100.100.100.200"))

NAT64 = ipaddress.IPv6Network("64:ff9b::/96")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_resolved: dict[tuple[str, int], tuple[float, tuple[str, ...]]] = {}


# How a refusal names the URL it judged (the alerts' webhooks pass their own words).
BASE_URL = "the service base URL"


class ForbiddenTarget(ServiceError):
    """The base URL is not one the API key may be sent to; nothing was sent."""

    default_message = "the service base URL is not allowed"


def refusal(address: str, *, allow_private: bool) -> str | None:
    """What ``address`` (an IP) is when the key may not go there ("a loopback address"), else None."""
    ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        # An IPv4 address carried in an IPv6 one is judged as itself: mapped (::ffff:a.b.c.d), NAT64
        # (64:ff9b::a.b.c.d, what DNS64 answers in an IPv6-only cluster: the gateway connects to a.b.c.d)
        # and 6to4 (2002:AABB:CCDD::, routed to a.b.c.d), so 2002:a9fe:a9fe:: is the metadata address.
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip in NAT64:
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        elif ip.sixtofour is not None:
            ip = ip.sixtofour
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_loopback:  # before is_reserved, which ::1 is too
        return None if allow_private else "a loopback address"
    if ip.is_multicast or ip.is_unspecified or ip.is_reserved:
        return "not a host address"
    if ip.is_global or allow_private:
        return None
    return "a private address"


def _host_port(url: str, what: str = BASE_URL) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ForbiddenTarget(f"{what} must start with http:// or https://")
    if "@" in parts.netloc:
        raise ForbiddenTarget(f"{what} must not contain a user name or password")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ForbiddenTarget(f"{what} has an invalid port") from None
    if not parts.hostname:
        raise ForbiddenTarget(f"{what} has no host")
    return parts.hostname, port


def _judge(host: str, addresses: tuple[str, ...], allow_private: bool, what: str = BASE_URL) -> None:
    for address in addresses:
        reason = refusal(address, allow_private=allow_private)
        if reason:
            shown = host if host == address else f"{host} ({address})"
            raise ForbiddenTarget(f"{what} points at {shown}, {reason}")


def _cached(key: tuple[str, int]) -> tuple[str, ...] | None:
    hit = _resolved.get(key)
    if hit is not None and hit[0] > time.monotonic():
        return hit[1]
    return None


def _remember(key: tuple[str, int], infos: list) -> tuple[str, ...]:
    addresses = tuple(sorted({info[4][0] for info in infos}))
    _resolved[key] = (time.monotonic() + CACHE_SECONDS, addresses)
    return addresses


def _unresolvable(host: str, what: str = BASE_URL) -> ForbiddenTarget:
    return ForbiddenTarget(f"{what}'s host {host} could not be resolved")


def check_url(url: str, *, allow_private: bool, what: str = BASE_URL) -> None:
    """Raise ForbiddenTarget unless the key may be sent to ``url`` (blocking DNS: for forms)."""
    host, port = _host_port(url, what)
    addresses = _cached((host, port))
    if addresses is None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise _unresolvable(host, what) from None
        addresses = _remember((host, port), infos)
    _judge(host, addresses, allow_private, what)


async def acheck_url(url: str, *, allow_private: bool, what: str = BASE_URL) -> None:
    """``check_url`` without blocking the event loop (for the client, before each request)."""
    host, port = _host_port(url, what)
    addresses = _cached((host, port))
    if addresses is None:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise _unresolvable(host, what) from None
        addresses = _remember((host, port), infos)
    _judge(host, addresses, allow_private, what)
