"""Pictures from the service reach browsers only when their own header says they are PNGs of a screen's
size (console/web/images.py): a PNG may declare 100 000 x 100 000 pixels in a few hundred bytes, and every
browser shown it tries to decode it (the screen relay checks its JPEG frames the same way)."""

import base64
import http.server
import struct
import zlib

import pytest

from tests.listener import serving

LONG = 259_200


def png(width: int, height: int) -> bytes:
    """A PNG whose IHDR says ``width`` x ``height`` (its image data is a few bytes of zlib)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


BOMB = png(100_000, 100_000)
SMALL = png(64, 48)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("body", "status"), [(BOMB, 502), (b"<svg onload=alert(1)>", 502), (SMALL, 200)])
async def test_it_serves_a_screenshot_only_when_it_is_a_png_of_a_screens_size(
    viewer_client, org, body, status
):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as org.service_base_url:
        await org.asave()
        response = await viewer_client.get(f"/o/{org.slug}/browsers/sess_1/computer/screenshot.png")
    assert response.status_code == status
    if status == 200:
        assert response.content == SMALL and response["Content-Type"] == "image/png"


async def test_it_shows_a_telemetry_screenshot_only_when_it_is_a_png_of_a_screens_size(viewer_client, tenant):
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    telemetry = {"enabled": True, "browser": {"page": {"enabled": True}}}
    sid = tenant.call("POST", "/browsers", json={"timeout_seconds": LONG, "telemetry": telemetry}).json()[
        "session_id"
    ]
    bomb, small = base64.b64encode(BOMB).decode(), base64.b64encode(SMALL).decode()
    events = [
        {"type": "monitor_screenshot", "data": {"png": bomb}},
        {"type": "monitor_screenshot", "data": {"png": small}},
    ]
    tenant.control("POST", "telemetry/emit", {"session_id": sid, "events": events})
    body = (
        await viewer_client.get(f"/o/acme/browsers/{sid}/telemetry/", headers={"HX-Request": "true"})
    ).content.decode()
    assert f"data:image/png;base64,{small}" in body
    assert f"data:image/png;base64,{bomb}" not in body
