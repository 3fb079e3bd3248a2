"""The sessions' forward proxy (console/sandbox/forward_proxy.py) as any local process meets it: a raw
TCP client on its loopback port, before any credential."""

from __future__ import annotations

import asyncio
import base64

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
