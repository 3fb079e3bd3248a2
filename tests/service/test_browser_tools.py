"""console.service.browser_tools against the sandbox: curl, extensions loaded live, the logs stream."""

import io
import json
import zipfile

import pytest

from console.service import Invalid, Unavailable, browser_files, browser_tools, browsers, sse

LONG = 259_200


@pytest.fixture
async def sid(service):
    return (await browsers.create_session(service, headless=True, timeout_seconds=LONG)).session_id


def extension_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps({"manifest_version": 3, "name": "x", "version": "1"}))
    return buffer.getvalue()


async def test_it_sends_a_request_through_the_browser(service, sid):
    result = await browser_tools.curl(
        service, sid, url="https://example.com/status/201", method="POST", body="{}"
    )
    assert result.status == 201 and "example.com" in result.body and result.duration_ms >= 0
    with pytest.raises(Invalid) as caught:
        await browser_tools.curl(service, sid, url="gopher://example.com")
    assert "url" in caught.value.field_errors
    with pytest.raises(Unavailable) as unreachable:
        await browser_tools.curl(service, sid, url="https://www.google.com/")
    assert unreachable.value.code == "upstream_unreachable"


async def test_it_loads_extensions_and_streams_the_supervisor_log(service, sid):
    await browser_tools.load_extensions(
        service,
        sid,
        [("one", "one.zip", io.BytesIO(extension_zip())), ("two", "two.zip", io.BytesIO(extension_zip()))],
    )
    info = await browser_files.file_info(service, sid, "/home/kernel/extensions/two/manifest.json")
    assert info.size_bytes > 0
    params = {"source": "supervisor", "supervisor_process": "chromium"}
    messages = [
        event.data["message"]
        async for event in sse.events(service, browser_tools.logs_stream_path(sid), params=params)
    ]
    assert any("one, two" in m for m in messages)


async def test_it_uploads_several_files_in_the_indexed_form(service, sid):
    await browser_files.upload(
        service, sid, [("/tmp/a.txt", "a.txt", io.BytesIO(b"A")), ("/tmp/b.txt", "b.txt", io.BytesIO(b"BB"))]
    )
    assert (await browser_files.file_info(service, sid, "/tmp/b.txt")).size_bytes == 2
