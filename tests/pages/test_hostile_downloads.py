"""Downloads the console streams from the service (an extension's zip, a profile's archive) go out under
the console's own content type and file name: a hostile service cannot make one a page of the console's
origin (``text/html``, ``inline``) nor choose the name it is saved under."""

import http.server

import pytest

from tests.listener import serving

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = b"<!doctype html><script>alert(document.cookie)</script>"


@pytest.fixture
def html_service(org):
    """A loopback service answering every GET with an HTML page it says to show inline."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Disposition", 'inline; filename="../../evil.html"')
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

    with serving(Handler) as org.service_base_url:
        org.save()
        yield


@pytest.mark.parametrize(
    ("path", "kind", "filename"),
    [
        ("extensions/ext_1/download/", "application/zip", "ext_1.zip"),
        ("profiles/prof_1/download/", "application/x-tar", "prof_1.tar"),
    ],
)
async def test_it_serves_an_upstream_download_under_its_own_type_and_name(
    operator_client, org, html_service, path, kind, filename
):
    response = await operator_client.get(f"/o/{org.slug}/{path}")
    assert response.status_code == 200
    assert response["Content-Type"] == kind
    assert response["Content-Disposition"] == f'attachment; filename="{filename}"'
    assert response["X-Content-Type-Options"] == "nosniff"


ZEROS = 4 * 1024 * 1024


@pytest.fixture
def gzip_service(org):
    """A loopback service that compresses every download whatever it was asked (as a proxy in front of a
    service may), declaring the compressed length, and records the Accept-Encoding it was sent."""
    import gzip

    body = gzip.compress(b"\0" * ZEROS)
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.headers.get("Accept-Encoding", ""))
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as org.service_base_url:
        org.save()
        yield asked


@pytest.mark.parametrize(
    "path",
    [
        "extensions/ext_1/download/",
        "profiles/prof_1/download/",
        "browsers/sess_1/files/download/?path=/home/kernel/a.bin",
        "browsers/sess_1/files/zip/?path=/home/kernel",
    ],
)
async def test_it_never_declares_a_length_other_than_what_it_sends(operator_client, org, gzip_service, path):
    """The relays copied the service's Content-Length while httpx decompressed the body: a compressed answer
    went out declaring its compressed length (a few KiB) ahead of 4 MiB, which a server cuts short (h11:
    "Too much data for declared Content-Length") and a browser keeps as a broken file. Downloads are now
    asked for uncompressed, and a length that does not describe what is sent is not passed on."""
    response = await operator_client.get(f"/o/{org.slug}/{path}")
    assert response.status_code == 200
    received = b"".join([chunk async for chunk in response.streaming_content])
    assert len(received) == ZEROS
    if response.has_header("Content-Length"):
        assert int(response["Content-Length"]) == len(received)
    assert gzip_service == ["identity"]


@pytest.fixture
def long_service(org):
    """A loopback service that sends more than the length it declares."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/zip")
            self.send_header("Content-Length", "10")
            self.end_headers()
            self.wfile.write(b"x" * 100_000)

    with serving(Handler) as org.service_base_url:
        org.save()
        yield


async def test_it_sends_no_more_than_the_length_it_declares(operator_client, org, long_service):
    response = await operator_client.get(f"/o/{org.slug}/extensions/ext_1/download/")
    received = b"".join([chunk async for chunk in response.streaming_content])
    assert response["Content-Length"] == "10" and received == b"x" * 10
