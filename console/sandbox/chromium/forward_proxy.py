"""The proxies of real sessions: a small HTTP forward proxy on loopback, one listener per running session
that has a proxy record, set as that session's proxy in Chromium (Playwright's per-context ``proxy``).

Nothing leaves the machine: the proxy plays the proxy provider and the internet behind it, and serves the
demo sites (``demo_sites``) only.

- It speaks what Chromium sends a proxy: ``CONNECT host:443`` (answered ``200``, then TLS with a
  certificate for that host from the sandbox's own certificate authority, which Chromium accepts through
  ``--ignore-certificate-errors-spki-list``, then the HTTP/1.1 requests inside) and plain
  ``GET http://host/…``.
- Every request needs ``Proxy-Authorization: Basic``: a custom proxy's ``username`` and ``password``, or
  for the other types (and a custom one without credentials) a random pair of the listener's; Chromium
  gets them from the engine. Anything else gets ``407``.
- A custom proxy stands for the customer's own server: one whose password starts with ``wrong`` refuses
  every credential (so Chromium shows its proxy authentication error); one whose host ends in ``.invalid``
  or whose port is 1 (``proxies``: unavailable) has no listener at all: Chromium's proxy is a closed
  loopback port and the page shows ``ERR_PROXY_CONNECTION_FAILED``.
- A demo host's response comes from the proxy's exit: the site sees the proxy's exit IP as its client
  (``proxies``: stable for ISP, datacenter and custom, new per connection for residential and mobile) and
  its country (the demo world's geolocation), and the response carries ``Via: 1.1 <proxy id>``. Hosts in
  the record's ``bypass_hosts`` are served direct (no ``Via``, the sandbox's own address).
- Any other destination is answered ``502`` with ``X-Kernel-Proxy-Error`` (``upstream_dns_failure`` for a
  name, ``destination_blocked`` for an address), as the service's proxy does; the page's telemetry turns
  that header into a ``proxy_error`` event.
- What passed through is kept with the session (method, URL, status, direct or through the proxy; the
  latest 200), for ``GET /_sandbox/browsers/{id}/egress`` (the tenant's key).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import fnmatch
import hashlib
import ipaddress
import logging
import os
import secrets
import socket
import ssl
import tempfile
from collections import deque
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from console.sandbox.sites import demo_sites

log = logging.getLogger("console.sandbox.engine")
HEAD_LIMIT = 64 * 1024
BODY_LIMIT = 16 * 1024 * 1024
# Time and room a client gets (``Limits``, from the environment). A request head comes in one or two
# packets: 10 s is ample for a head and for a TLS handshake, on loopback. Chromium keeps an idle
# connection to its proxy for minutes and opens a new one, transparently, when the proxy closed it:
# 60 s of silence (as nginx's 75 s keep-alive) costs a page nothing. Chromium opens at most 32 connections
# to one proxy for its pages (its per-proxy socket pool), and WebSockets a few more: 64 per session.
HEAD_TIMEOUT = 10.0
IDLE_TIMEOUT = 60.0
MAX_CONNECTIONS = 64
READ_SIZE = 64 * 1024
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
}
REASONS = {200: "OK", 407: "Proxy Authentication Required", 502: "Bad Gateway"}


@dataclass(frozen=True)
class Limits:
    """What one client connection may take of a session's proxy.

    - ``head``: seconds for a request head, from its first byte to its blank line, and for the TLS
      handshake after ``CONNECT`` (``SANDBOX_PROXY_HEAD_TIMEOUT_SECONDS``, default 10);
    - ``idle``: seconds a connection may stay silent: before its first request and between requests, and
      without a byte of a body it announced or without reading the proxy's answer
      (``SANDBOX_PROXY_IDLE_TIMEOUT_SECONDS``, default 60);
    - ``connections``: connections open at once to one session's proxy; past it a new one is answered
      502 ``proxy_unavailable`` and closed, nothing read (``SANDBOX_PROXY_MAX_CONNECTIONS``, default 64).

    A connection past a time is closed (nothing answered: no request was whole)."""

    head: float = HEAD_TIMEOUT
    idle: float = IDLE_TIMEOUT
    connections: int = MAX_CONNECTIONS

    @classmethod
    def from_environment(cls) -> Limits:
        return cls(
            head=_setting("SANDBOX_PROXY_HEAD_TIMEOUT_SECONDS", HEAD_TIMEOUT, float),
            idle=_setting("SANDBOX_PROXY_IDLE_TIMEOUT_SECONDS", IDLE_TIMEOUT, float),
            connections=int(_setting("SANDBOX_PROXY_MAX_CONNECTIONS", MAX_CONNECTIONS, int)),
        )


def _setting(name: str, default, kind):
    """A positive number from the environment, else ``default`` (a typo never means "no limit")."""
    try:
        value = kind(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if 0 < value < float("inf") else default


# The sandbox's certificate authority ---------------------------------------------------------------


class Authority:
    """A certificate authority of this sandbox process (its key never leaves memory), and one key for
    every host certificate, so Chromium can accept them by that key's hash."""

    def __init__(self):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self._x509, self._hashes, self._oid = x509, hashes, NameOID
        self._serialization = serialization
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        self.host_key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Browser Automation sandbox proxy CA")])
        now = datetime.datetime.now(datetime.UTC)
        self.ca_name = name
        self.ca = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(self.ca_key, hashes.SHA256())
        )
        spki = self.host_key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.spki_hash = base64.b64encode(hashlib.sha256(spki).digest()).decode()
        self._contexts: dict[str, ssl.SSLContext] = {}

    def context(self, host: str) -> ssl.SSLContext:
        """A server TLS context presenting a certificate for ``host``."""
        if host in self._contexts:
            return self._contexts[host]
        x509, serialization = self._x509, self._serialization
        try:
            alternative = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            alternative = x509.DNSName(host)
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(self._oid.COMMON_NAME, host[:64])]))
            .issuer_name(self.ca_name)
            .public_key(self.host_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=7))
            .add_extension(x509.SubjectAlternativeName([alternative]), critical=False)
            .sign(self.ca_key, self._hashes.SHA256())
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        # ssl loads a chain from files only: they live as long as this call, in a folder of the sandbox's.
        with tempfile.TemporaryDirectory(prefix="sandbox-proxy-tls-") as folder:
            chain, key = Path(folder, "chain.pem"), Path(folder, "key.pem")
            key.touch(mode=0o600)
            key.write_bytes(
                self.host_key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )
            chain.write_bytes(
                certificate.public_bytes(serialization.Encoding.PEM)
                + self.ca.public_bytes(serialization.Encoding.PEM)
            )
            context.load_cert_chain(chain, key)
        context.set_alpn_protocols(["http/1.1"])
        if len(self._contexts) > 256:
            self._contexts.clear()
        self._contexts[host] = context
        return context


@cache
def authority() -> Authority:
    return Authority()


def chromium_flags() -> list[str]:
    """Chromium accepts the sandbox proxy's host certificates (their key), nothing else more."""
    return [f"--ignore-certificate-errors-spki-list={authority().spki_hash}"]


# The proxy world -----------------------------------------------------------------------------------
# What a proxy record stands for (``proxies`` reports it in checks; the listeners act it): a custom proxy
# whose host ends in ``.invalid`` or whose port is 1 cannot be reached, and every proxy exits from an
# address derived from its id.

UNREACHABLE_SUFFIX = ".invalid"
# Public first octets per type, so exit IPs look like what each kind of provider hands out.
EXIT_PREFIXES = {
    "datacenter": (45, 104, 138, 167),
    "isp": (69, 98, 173, 204),
    "residential": (24, 73, 86, 92),
    "mobile": (100, 172, 174, 188),
    "custom": (62, 81, 146, 185),
}


def _digest(*parts: object) -> bytes:
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()


def exit_ip(record: dict, attempt: int) -> str:
    kind = record["type"]
    host = record["config"].get("host", "")
    if kind == "custom" and is_ip(host) and ipaddress.ip_address(host).is_global:
        return host
    # Residential and mobile exit nodes rotate: each check sees another one.
    salt = attempt if kind in ("residential", "mobile") else 0
    digest = _digest(record["id"], salt)
    first = EXIT_PREFIXES[kind][digest[0] % len(EXIT_PREFIXES[kind])]
    return f"{first}.{digest[1]}.{digest[2]}.{max(digest[3], 1) % 254 + 1}"


def reachable(record: dict) -> bool:
    config = record["config"]
    if record["type"] != "custom":
        return True
    return not (str(config.get("host", "")).lower().endswith(UNREACHABLE_SUFFIX) or config.get("port") == 1)


# Listeners ---------------------------------------------------------------------------------------


class Listener:
    """One session's proxy: a loopback port Chromium is told to use, and what passed through it."""

    def __init__(self, session: dict, proxy: dict):
        self.session_id = session["session_id"]
        self.proxy = proxy
        config = proxy.get("config") or {}
        custom = proxy["type"] == "custom"
        self.username = config.get("username") if custom and config.get("username") else secrets.token_hex(8)
        secret = (proxy.get("_secrets") or {}).get("password")
        self.password = secret if custom and config.get("username") else secrets.token_urlsafe(18)
        if custom and config.get("username") and not secret:
            self.password = ""
        self.refuses = custom and str(secret or "").startswith("wrong")
        self.reachable = reachable(proxy) and not proxy.get("_deleted")
        self.country = config.get("country")
        self.bypass = [host.lower() for host in proxy.get("bypass_hosts") or []]
        self.log: deque[dict] = session.setdefault("_egress", deque(maxlen=200))
        self.port = 0
        self.limits = Limits.from_environment()
        self._server: asyncio.AbstractServer | None = None
        self._closed_port: socket.socket | None = None
        self._connections: set[asyncio.StreamWriter] = set()

    @property
    def server(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def playwright(self) -> dict:
        """Playwright's ``proxy`` option for the session's context. Loopback goes through the proxy too
        (``<-loopback>``, which Playwright adds by itself unless PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_
        LOOPBACK is set): a page's ``ws://127.0.0.1:<port>``, which no context route sees, meets the proxy,
        which reaches no address, instead of the sandbox's or the console's port."""
        return {
            "server": self.server,
            "username": self.username,
            "password": self.password,
            "bypass": "<-loopback>",
        }

    async def start(self, network=None) -> Listener:
        """Listen on loopback: the host's, or that of the browser's own network namespace (``network``,
        a ``confine.Network``), where only that browser reaches it."""
        bound = network.socket() if network is not None else socket.socket()
        try:
            bound.bind(("127.0.0.1", 0))
        except BaseException:
            bound.close()
            raise
        self.port = bound.getsockname()[1]
        if not self.reachable:
            # The proxy server cannot be reached: a bound port that listens to nobody refuses connections.
            self._closed_port = bound
            return self
        try:
            self._server = await asyncio.start_server(self._serve, sock=bound, limit=HEAD_LIMIT)
        except BaseException:
            bound.close()
            raise
        return self

    async def stop(self) -> None:
        if self._closed_port is not None:
            self._closed_port.close()
        if self._server is not None:
            self._server.close()
            for writer in list(self._connections):
                writer.transport.abort()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await self._server.wait_closed()

    # One client connection --------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._connections) >= self.limits.connections:
            await self._refuse(writer)
            return
        self._connections.add(writer)
        try:
            await self._connection(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        except Exception:
            log.exception("the sandbox proxy failed on a connection")
        finally:
            self._connections.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _refuse(self, writer: asyncio.StreamWriter) -> None:
        """One connection too many: said before anything is read, then closed."""
        limit = self.limits.connections
        with contextlib.suppress(Exception):
            await _respond(
                writer,
                502,
                {
                    "content-type": "text/plain; charset=utf-8",
                    "x-kernel-proxy-error": "proxy_unavailable",
                    "via": f"1.1 {self.proxy['id']}",
                    "connection": "close",
                },
                f"The proxy holds {limit} connections of this session already\n".encode(),
                limits=self.limits,
            )
        writer.close()

    async def _connection(self, reader, writer) -> None:
        exit_ip = self._exit_ip()
        limits = self.limits
        while True:
            head = await _read_head(reader, limits)
            if head is None:
                return
            method, target, headers = head
            if not self._authorised(headers):
                # Before a byte of its body is read (a client without credentials gets no buffer of the
                # proxy's), so the connection closes after the answer: its body, unread, would follow.
                await _respond(
                    writer,
                    407,
                    {
                        "proxy-authenticate": f'Basic realm="{self.proxy["id"]}"',
                        "content-type": "text/plain",
                        "connection": "close",
                    },
                    b"Proxy authentication required\n",
                    limits=limits,
                )
                return
            body = await _read_body(reader, headers, limits)
            if method == "CONNECT":
                host = target.rpartition(":")[0].strip("[]").lower() or target.lower()
                await _respond(writer, 200, {}, None, limits=limits)
                async with asyncio.timeout(limits.head):
                    await writer.start_tls(authority().context(host))
                await self._tunnel(reader, writer, host, exit_ip)
                return
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                answer = b"Absolute http URL expected\n"
                await _respond(writer, 400, {"content-type": "text/plain"}, answer, limits=limits)
                return
            await self._forward(writer, method, target, headers, body, exit_ip)

    async def _tunnel(self, reader, writer, host: str, exit_ip: str) -> None:
        while True:
            head = await _read_head(reader, self.limits)
            if head is None:
                return
            method, path, headers = head
            body = await _read_body(reader, headers, self.limits)
            await self._forward(writer, method, f"https://{host}{path}", headers, body, exit_ip)

    async def _forward(self, writer, method: str, url: str, headers: dict, body: bytes, exit_ip: str):
        host = (urlsplit(url).hostname or "").lower()
        direct = False
        if demo_sites.handler_for(host) is None:
            code = "destination_blocked" if is_ip(host) else "upstream_dns_failure"
            status, out, content = (
                502,
                {"content-type": "text/plain; charset=utf-8", "x-kernel-proxy-error": code},
                f"The proxy could not reach {host}: {code}\n".encode(),
            )
            out["via"] = f"1.1 {self.proxy['id']}"
        else:
            direct = any(fnmatch.fnmatch(host, pattern) for pattern in self.bypass)
            status, out, content = await _demo(
                method, url, headers, body, None if direct else (exit_ip, self.country)
            )
            if not direct:
                out["via"] = f"1.1 {self.proxy['id']}"
        self.log.append(
            {
                "method": method,
                "url": url[:500],
                "status": status,
                "proxy_id": self.proxy["id"],
                "exit": "direct" if direct else exit_ip,
            }
        )
        await _respond(writer, status, out, content, head_only=method == "HEAD", limits=self.limits)

    def _authorised(self, headers: dict) -> bool:
        scheme, _, value = headers.get("proxy-authorization", "").partition(" ")
        if scheme.lower() != "basic" or self.refuses:
            return False
        try:
            given = base64.b64decode(value.strip(), validate=True).decode()
        except (ValueError, UnicodeDecodeError):
            return False
        expected = f"{self.username}:{self.password}"
        return secrets.compare_digest(given.encode(), expected.encode())

    def _exit_ip(self) -> str:
        # Residential and mobile exits rotate per connection; the others keep theirs.
        self.proxy["_connections"] = self.proxy.get("_connections", 0) + 1
        return exit_ip(self.proxy, self.proxy["_connections"])


# HTTP/1.1, as much as a browser speaks to a proxy -------------------------------------------------


async def _read_head(reader: asyncio.StreamReader, limits: Limits):
    """(method, target, headers) of the next request, or None when the client is done. Its first byte
    within ``limits.idle``, the rest within ``limits.head`` (else ``TimeoutError``: the connection
    closes)."""
    try:
        async with asyncio.timeout(limits.idle):
            first = await reader.readexactly(1)
        async with asyncio.timeout(limits.head):
            raw = first + await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
    return parts[0].upper(), parts[1], headers


async def _read_body(reader: asyncio.StreamReader, headers: dict, limits: Limits) -> bytes:
    """The request's body, at most ``BODY_LIMIT`` bytes; every read waits at most ``limits.idle``."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            async with asyncio.timeout(limits.idle):
                line = await reader.readuntil(b"\r\n")
            size = _number(line.split(b";")[0].strip() or b"0", 16)
            if len(body) + size > BODY_LIMIT:  # before reading (and holding) the chunk
                raise ConnectionError("request body too large")
            if size == 0:
                async with asyncio.timeout(limits.idle):
                    await reader.readuntil(b"\r\n")
                return bytes(body)
            await _read_into(reader, body, size + 2, limits)
            del body[-2:]
    length = _number(headers.get("content-length") or "0", 10)
    if length > BODY_LIMIT:
        raise ConnectionError("request body too large")
    body = bytearray()
    await _read_into(reader, body, length, limits)
    return bytes(body)


async def _read_into(reader: asyncio.StreamReader, body: bytearray, size: int, limits: Limits) -> None:
    """Append ``size`` bytes to ``body``: a client that sends nothing for ``limits.idle`` is done."""
    while size > 0:
        async with asyncio.timeout(limits.idle):
            chunk = await reader.read(min(size, READ_SIZE))
        if not chunk:
            raise asyncio.IncompleteReadError(bytes(body), size)
        body += chunk
        size -= len(chunk)


def _number(text: str | bytes, base: int) -> int:
    """A Content-Length or chunk size: digits only (a sign, a space or 20 digits closes the connection)."""
    text = text.decode("latin-1") if isinstance(text, bytes) else text
    digits = "0123456789abcdefABCDEF"[: 22 if base == 16 else 10]
    if not text or len(text) > 16 or any(c not in digits for c in text):
        raise ConnectionError("malformed length")
    return int(text, base)


async def _respond(
    writer, status: int, headers: dict, body: bytes | None, *, limits: Limits, head_only: bool = False
):
    """Write an answer; a client that does not read it within ``limits.idle`` is done."""
    reason = REASONS.get(status) or httpx.codes.get_reason_phrase(status) or "Status"
    lines = [f"HTTP/1.1 {status} {reason}"]
    for key, value in headers.items():
        for item in value.split("\n") if key == "set-cookie" else [value]:
            lines.append(f"{key}: {item}")
    if body is not None:
        lines.append(f"content-length: {len(body)}")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    if body and not head_only:
        writer.write(body)
    async with asyncio.timeout(limits.idle):
        await writer.drain()


async def _demo(method: str, url: str, headers: dict, body: bytes, exit: tuple | None):
    """A demo site's answer, seen from the proxy's exit (its address and country) or direct."""
    sent = {k: v for k, v in headers.items() if k not in HOP_BY_HOP}
    if exit is not None:
        client, country = exit
        demo_sites.GEOLOCATION[client] = country or "ZZ"
        transport = httpx.ASGITransport(app=demo_sites.app, client=(client, 443))
    else:
        transport = demo_sites.direct_transport()
    response = await transport.handle_async_request(httpx.Request(method, url, headers=sent, content=body))
    content = await response.aread()
    out: dict[str, str] = {}
    for key, value in response.headers.multi_items():
        if key.lower() in HOP_BY_HOP:
            continue
        out[key] = f"{out[key]}\n{value}" if key in out and key == "set-cookie" else value
    return response.status_code, out, content


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
