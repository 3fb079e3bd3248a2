"""console.service.extensions against the sandbox (notes §12)."""

import hashlib
import io
import os

import pytest

from console.sandbox.resources.extensions import demo_zip
from console.service import Conflict, Invalid, NotFound, extensions

MANIFEST = {"manifest_version": 3, "name": "Test", "version": "1.0"}


def big_zip() -> bytes:
    return demo_zip(MANIFEST, {"blob.bin": os.urandom(300_000).hex()})


async def test_it_uploads_a_file_object_and_reads_the_metadata(service, tmp_path):
    content = big_zip()
    path = tmp_path / "ext.zip"
    path.write_bytes(content)
    with path.open("rb") as fh:
        uploaded = await extensions.upload_extension(service, fh, name="big")
    assert uploaded.name == "big"
    assert uploaded.size_bytes == len(content)
    assert uploaded.checksum == hashlib.sha256(content).hexdigest()
    assert uploaded.created_at.tzinfo is not None
    assert (await extensions.get_extension(service, "big")).id == uploaded.id


async def test_it_uploads_from_a_path_without_a_name(service, tmp_path):
    path = tmp_path / "plain.zip"
    path.write_bytes(demo_zip(MANIFEST, {}))
    uploaded = await extensions.upload_extension(service, path)
    assert uploaded.name is None
    assert uploaded.label == uploaded.id


async def test_it_maps_a_bad_archive_and_a_taken_name(service):
    with pytest.raises(Invalid) as caught:
        await extensions.upload_extension(service, io.BytesIO(b"not a zip"), filename="x.zip")
    assert "file" in caught.value.field_errors
    await extensions.upload_extension(service, io.BytesIO(demo_zip(MANIFEST, {})), name="taken")
    with pytest.raises(Conflict):
        await extensions.upload_extension(service, io.BytesIO(demo_zip(MANIFEST, {})), name="taken")


async def test_it_streams_the_download(service):
    content = big_zip()
    await extensions.upload_extension(service, io.BytesIO(content), name="dl")
    async with extensions.download_extension(service, "dl") as (reply, chunks):
        assert reply.headers["content-type"] == "application/zip"
        received = b"".join([chunk async for chunk in chunks])
    assert received == content


async def test_it_lists_and_deletes(service):
    for name in ("one", "two", "three"):
        await extensions.upload_extension(service, io.BytesIO(demo_zip(MANIFEST, {})), name=name)
    page = await extensions.list_extensions(service, limit=2)
    assert ([e.name for e in page], page.has_more, page.next_offset) == (["one", "two"], True, 2)
    assert [e.name for e in await extensions.list_extensions(service, query="t")] == ["two", "three"]
    await extensions.delete_extension(service, "two")
    with pytest.raises(NotFound):
        await extensions.get_extension(service, "two")
    with pytest.raises(NotFound):
        async with extensions.download_extension(service, "two"):
            pass
