"""The sessions' forward proxy (console/sandbox/chromium/forward_proxy.py) as any local process meets it: a
raw TCP client on its loopback port, before any credential."""

from __future__ import annotations

import asyncio
import base64

import pytest

from console.sandbox.chromium import forward_proxy


@pytest.fixture
async def listener():
    proxy = {"id": "prx_t", "type": "datacenter", "config": {}, "bypass_hosts": []}
    started = await forward_proxy.Listener({"session_id": "bs_t"}, proxy).start()
    yield started
    await started.stop()


async def test_it_closes_a_connection_whose_chunk_is_larger_than_a_body_may_be(listener):
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    size = forward_proxy.BODY_LIMIT + 1
    credentials = base64.b64encode(f"{listener.username}:{listener.password}".encode())
    writer.write(
        b"POST http://example.test/ HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n"
        + b"Proxy-Authorization: Basic "
        + credentials
        + b"\r\n\r\n"
        + f"{size:x}\r\n".encode()
    )
    await writer.drain()
    # Nothing more is sent: a proxy that waits for those bytes holds them (and the connection) for anyone.
    async with asyncio.timeout(10):
        assert await reader.read() == b""
    writer.close()


async def test_it_asks_an_unauthenticated_client_for_credentials(listener):
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    writer.write(b"GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
    await writer.drain()
    async with asyncio.timeout(10):
        head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 407")
    writer.close()


async def test_it_asks_for_credentials_before_reading_a_body(listener):
    """A client without credentials announces a large body and sends none: the proxy answers 407 at once
    (it used to wait for, and then hold, up to BODY_LIMIT bytes of anyone's) and closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    writer.write(
        b"POST http://example.test/ HTTP/1.1\r\nHost: example.test\r\n"
        + f"Content-Length: {forward_proxy.BODY_LIMIT}\r\n\r\n".encode()
    )
    await writer.drain()
    async with asyncio.timeout(10):
        answer = await reader.read()  # the whole answer, then the close
    assert answer.startswith(b"HTTP/1.1 407") and b"connection: close" in answer
    writer.close()


@pytest.mark.parametrize(
    "framing",
    [
        b"Content-Length: -1\r\n",
        b"Content-Length: 1e3\r\n",
        b"Content-Length: " + b"9" * 40 + b"\r\n",
        b"Transfer-Encoding: chunked\r\n\r\n-5",
        b"Transfer-Encoding: chunked\r\n\r\n" + b"f" * 5000,
    ],
    ids=["negative", "exponent", "40-digits", "negative-chunk", "huge-chunk"],
)
async def test_it_closes_a_connection_whose_length_is_no_number(listener, framing, caplog):
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    credentials = base64.b64encode(f"{listener.username}:{listener.password}".encode())
    head = b"POST http://example.test/ HTTP/1.1\r\nHost: example.test\r\nProxy-Authorization: Basic "
    writer.write(head + credentials + b"\r\n" + framing + b"\r\n")
    await writer.drain()
    async with asyncio.timeout(10):
        assert await reader.read() == b""
    writer.close()
    assert "failed on a connection" not in caplog.text  # refused, not a crash with a traceback


def test_it_keeps_loopback_behind_the_proxy_whatever_playwrights_environment():
    proxy = {"id": "prx_t", "type": "datacenter", "config": {}, "bypass_hosts": []}
    option = forward_proxy.Listener({"session_id": "bs_t"}, proxy).playwright()
    assert option["bypass"] == "<-loopback>"  # Chromium's implicit loopback bypass subtracted


# Time and room: a client that never finishes, or many, hold nothing for long ----------------------


def limited(monkeypatch, **settings: str) -> None:
    """Listeners created after this read these settings (``forward_proxy.Limits``)."""
    for name, value in settings.items():
        monkeypatch.setenv(f"SANDBOX_PROXY_{name}", value)


async def start_listener() -> forward_proxy.Listener:
    proxy = {"id": "prx_t", "type": "datacenter", "config": {}, "bypass_hosts": []}
    return await forward_proxy.Listener({"session_id": "bs_t"}, proxy).start()


def request(listener, target: str = "http://nowhere.test/", extra: bytes = b"") -> bytes:
    """An authenticated request head for ``target`` (not a demo site: the proxy answers 502 itself)."""
    credentials = base64.b64encode(f"{listener.username}:{listener.password}".encode())
    host = target.split("/")[2].encode()
    return (
        f"GET {target} HTTP/1.1\r\n".encode()
        + b"Host: "
        + host
        + b"\r\nProxy-Authorization: Basic "
        + credentials
        + b"\r\n"
        + extra
        + b"\r\n"
    )


async def closed(reader: asyncio.StreamReader, seconds: float = 10) -> bytes:
    """What the proxy still sends until it closes the connection (waited for ``seconds`` at most)."""
    async with asyncio.timeout(seconds):
        try:
            return await reader.read()
        except ConnectionResetError:
            return b""


async def answered(reader: asyncio.StreamReader) -> bytes:
    """One whole answer (head and body) of the proxy."""
    async with asyncio.timeout(10):
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        return head + await reader.readexactly(length)


async def test_it_closes_a_connection_whose_request_head_never_ends(monkeypatch):
    # The audit's 300 connections that never finished their head stayed open 90 s and more.
    limited(monkeypatch, HEAD_TIMEOUT_SECONDS="0.5")
    listener = await start_listener()
    try:
        clients = [await asyncio.open_connection("127.0.0.1", listener.port) for _ in range(20)]
        for _, writer in clients:
            writer.write(b"GET http://nowhere.test/ HTTP/1.1\r\nHost: nowh")  # and nothing more
            await writer.drain()
        for reader, writer in clients:
            assert await closed(reader) == b""  # closed, nothing answered (no request was whole)
            writer.close()
        assert not listener._connections
    finally:
        await listener.stop()


async def test_it_closes_a_connection_silent_before_its_request_between_requests_or_in_its_body(monkeypatch):
    limited(monkeypatch, IDLE_TIMEOUT_SECONDS="0.5")
    listener = await start_listener()
    try:
        # Silent from the start.
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        assert await closed(reader) == b""
        writer.close()
        # Answered, kept alive, then silent.
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        writer.write(request(listener))
        await writer.drain()
        assert (await answered(reader)).startswith(b"HTTP/1.1 502")
        writer.write(request(listener))  # the connection is kept for a next request
        await writer.drain()
        assert (await answered(reader)).startswith(b"HTTP/1.1 502")
        assert await closed(reader) == b""
        writer.close()
        # A body announced and never sent whole.
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        writer.write(request(listener, extra=b"Content-Length: 10\r\n") + b"12345")
        await writer.drain()
        assert await closed(reader) == b""
        writer.close()
    finally:
        await listener.stop()


async def test_it_bounds_the_connections_of_a_session_and_takes_new_ones_once_others_went(monkeypatch):
    limited(monkeypatch, MAX_CONNECTIONS="3")
    listener = await start_listener()
    try:
        held = []
        for _ in range(3):
            reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
            writer.write(request(listener))
            await writer.drain()
            assert (await answered(reader)).startswith(b"HTTP/1.1 502")  # served, and kept alive
            held.append((reader, writer))
        # One more: told why, before anything of it is read, and closed.
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        refusal = await closed(reader)
        assert refusal.startswith(b"HTTP/1.1 502") and b"x-kernel-proxy-error: proxy_unavailable" in refusal
        assert b"3 connections" in refusal
        writer.close()
        # One of the three leaves: a new connection is served once the proxy has seen it go.
        held[0][1].close()
        assert await closed(held[0][0]) == b""
        deadline = asyncio.get_running_loop().time() + 10
        while True:
            reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
            writer.write(request(listener))
            try:
                await writer.drain()
                answer = await answered(reader)
            except (ConnectionError, asyncio.IncompleteReadError):  # refused before its request was read
                answer = b"proxy_unavailable"
            writer.close()
            if b"proxy_unavailable" not in answer or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.05)
        assert answer.startswith(b"HTTP/1.1 502") and b"upstream_dns_failure" in answer
        for _, writer in held[1:]:
            writer.close()
    finally:
        await listener.stop()


def test_it_reads_its_limits_from_the_environment_and_ignores_nonsense(monkeypatch):
    limited(monkeypatch, HEAD_TIMEOUT_SECONDS="3", IDLE_TIMEOUT_SECONDS="nan", MAX_CONNECTIONS="-1")
    assert forward_proxy.Limits.from_environment() == forward_proxy.Limits(
        head=3.0, idle=forward_proxy.IDLE_TIMEOUT, connections=forward_proxy.MAX_CONNECTIONS
    )
