"""The sessions' forward proxy (console/sandbox/forward_proxy.py) as any local process meets it: a raw
TCP client on its loopback port, before any credential."""

from __future__ import annotations

import asyncio

import pytest

from console.sandbox import forward_proxy


@pytest.fixture
async def listener():
    proxy = {"id": "prx_t", "type": "datacenter", "config": {}, "bypass_hosts": []}
    started = await forward_proxy.Listener({"session_id": "bs_t"}, proxy).start()
    yield started
    await started.stop()


async def test_it_closes_a_connection_whose_chunk_is_larger_than_a_body_may_be(listener):
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    size = forward_proxy.BODY_LIMIT + 1
    writer.write(
        b"POST http://example.test/ HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n\r\n"
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
