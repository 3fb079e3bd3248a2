"""The console reads request bodies up to a bound (console/asgi.py).

Django's ASGI handler reads a request's whole body (to memory, then a temporary file) before any
middleware, login or CSRF check runs: anyone could POST any size to any URL and have it written to the
console's disk for as long as the request lasted. Over real HTTP (uvicorn in a thread,
``console_on_thread``): a declared length past the bound is a 413 before a byte of the body is read,
a chunked body is cut off with a 413 once it passes the bound, and bodies within it reach Django.
"""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.listener import console_on_thread

WAIT = 30  # seconds: a bound against hanging, never a measurement
LIMIT = 2 * 1024 * 1024


@pytest.fixture
def console_port(transactional_db, settings):
    settings.MAX_REQUEST_BYTES = LIMIT
    with console_on_thread() as url:
        yield int(url.rsplit(":", 1)[1])


def test_it_refuses_a_declared_length_past_the_bound_before_reading_the_body(console_port):
    with socket.create_connection(("127.0.0.1", console_port), timeout=WAIT) as connection:
        head = (
            "POST /login/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {50 * LIMIT}\r\n\r\n"
        )
        connection.sendall(head.encode() + b"a=" + b"x" * 1000)  # then nothing: the rest never comes
        answer = b""
        while chunk := connection.recv(4096):  # until the console closes the connection
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413"), answer[:100]
    assert b"larger than the console accepts" in answer


def test_it_cuts_off_a_chunked_body_once_it_passes_the_bound(console_port):
    def body():  # 4 MiB in chunks, with no declared length
        for _ in range(64):
            yield b"x" * (64 * 1024)

    try:
        response = httpx.post(
            f"http://127.0.0.1:{console_port}/login/",
            content=body(),
            headers={"Content-Type": "application/octet-stream"},
            timeout=WAIT,
        )
    except httpx.TransportError:  # closed while the rest was being sent: nothing past the bound was read
        response = None
    if response is not None:
        assert response.status_code == 413, response.status_code


def test_it_reads_a_body_within_the_bound(console_port):
    response = httpx.post(
        f"http://127.0.0.1:{console_port}/login/",
        content=b"a=" + b"x" * (LIMIT // 2),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        timeout=WAIT,
    )
    assert response.status_code == 403  # Django's own answer: no CSRF cookie
