"""console.service.browser_files against the sandbox (notes §4)."""

import asyncio
import io
import zipfile

import pytest

from console.service import Invalid, NotFound, browser_files, browsers


@pytest.fixture
async def session(service):
    return (await browsers.create_session(service, timeout_seconds=3600)).session_id


def make_zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, content in entries.items():
            bundle.writestr(name, content)
    return buffer.getvalue()


async def read_all(chunks) -> bytes:
    return b"".join([chunk async for chunk in chunks])


async def test_it_writes_lists_describes_and_reads(service, session):
    await browser_files.write_file(service, session, "/home/kernel/Downloads/a.txt", b"alpha", mode="600")
    listed = await browser_files.list_files(service, session, "/home/kernel/Downloads")
    (entry,) = [f for f in listed if f.name == "a.txt"]
    assert (
        entry.path == "/home/kernel/Downloads/a.txt" and entry.size_bytes == 5 and entry.mode == "-rw-------"
    )
    assert entry.mod_time.tzinfo is not None and not entry.is_dir
    info = await browser_files.file_info(service, session, "/home/kernel/Downloads")
    assert info.is_dir
    async with browser_files.read_file(service, session, "/home/kernel/Downloads/a.txt") as (reply, chunks):
        assert reply.status == 200
        assert await read_all(chunks) == b"alpha"


async def test_it_manages_directories_moves_and_deletes(service, session):
    await browser_files.create_directory(service, session, "/tmp/work/inner")
    await browser_files.write_file(service, session, "/tmp/work/inner/x.txt", b"x")
    await browser_files.move(service, session, "/tmp/work/inner/x.txt", "/tmp/work/y.txt")
    await browser_files.set_permissions(service, session, "/tmp/work/y.txt", "640")
    names = {f.name: f for f in await browser_files.list_files(service, session, "/tmp/work")}
    assert set(names) == {"inner", "y.txt"} and names["y.txt"].mode == "-rw-r-----"
    await browser_files.delete_file(service, session, "/tmp/work/y.txt")
    await browser_files.delete_directory(service, session, "/tmp/work")
    with pytest.raises(NotFound):
        await browser_files.file_info(service, session, "/tmp/work")


async def test_it_uploads_files_and_a_zip_and_downloads_a_directory(service, session):
    await browser_files.upload(
        service,
        session,
        [
            ("/home/kernel/Desktop/one.txt", "one.txt", io.BytesIO(b"1")),
            ("/home/kernel/Desktop/two.txt", "two.txt", io.BytesIO(b"22")),
        ],
    )
    await browser_files.upload_zip(
        service,
        session,
        io.BytesIO(make_zip({"site/index.html": b"<p>"})),
        dest_path="/home/kernel/Desktop/site",
    )
    async with browser_files.download_dir_zip(service, session, "/home/kernel/Desktop") as (_, chunks):
        content = await read_all(chunks)
    with zipfile.ZipFile(io.BytesIO(content)) as bundle:
        assert {"one.txt", "two.txt", "site/site/index.html"} <= set(bundle.namelist())


async def test_it_maps_traversal_and_a_bad_zip_to_field_errors(service, session):
    with pytest.raises(Invalid) as traversal:
        await browser_files.list_files(service, session, "/home/../../etc")
    assert "path" in traversal.value.field_errors
    with pytest.raises(Invalid) as slip:
        await browser_files.upload_zip(
            service, session, io.BytesIO(make_zip({"../evil": b"x"})), dest_path="/tmp"
        )
    assert "zip_file" in slip.value.field_errors


async def test_it_watches_and_stops_watching(service, session):
    watch_id = await browser_files.watch(service, session, "/home/kernel", recursive=True)
    assert watch_id
    await browser_files.write_file(service, session, "/home/kernel/new.txt", b"n")
    stream = browser_files.watch_events(service, session, watch_id)
    event = await asyncio.wait_for(anext(stream), timeout=10)
    assert (event.type, event.path, event.name, event.is_dir) == (
        "CREATE",
        "/home/kernel/new.txt",
        "new.txt",
        False,
    )
    await stream.aclose()
    await browser_files.stop_watch(service, session, watch_id)
    with pytest.raises(NotFound):
        await browser_files.stop_watch(service, session, watch_id)
