"""Sandbox conformance: a session's filesystem (notes §4): confinement, files, directories, zip upload
safety, directory zips, and watches reporting real create/write/delete/rename events."""

import io
import json
import signal
import threading
import time
import zipfile

import httpx
import pytest

from console.sandbox.resources.browser_files import TEMP_PREFIX
from tests.sandbox_fixtures import new_tenant, start_sandbox, stop_sandbox, temporary_folder, wait_until

LONG = 259_200


@pytest.fixture
def session(tenant):
    response = tenant.call("POST", "/browsers", json={"name": "files", "timeout_seconds": LONG})
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def fs(tenant, session, method, op, **kwargs):
    return tenant.call(method, f"/browsers/{session}/fs/{op}", **kwargs)


def write(tenant, session, path, content: bytes):
    response = fs(tenant, session, "PUT", "write_file", params={"path": path}, content=content)
    assert response.status_code == 204, response.text


def listing(tenant, session, path):
    response = fs(tenant, session, "GET", "list_files", params={"path": path})
    assert response.status_code == 200, response.text
    return {entry["name"]: entry for entry in response.json()}


def details(response):
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    return {d["code"]: d["message"] for d in body["details"]}


def make_zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name, content in entries.items():
            bundle.writestr(name, content)
    return buffer.getvalue()


def upload_zip(tenant, session, content: bytes, dest="/home/kernel/Downloads/unpacked"):
    return fs(
        tenant,
        session,
        "POST",
        "upload_zip",
        data={"dest_path": dest},
        files={"zip_file": ("bundle.zip", content, "application/zip")},
    )


def test_it_starts_a_session_with_the_kernel_home_directories(tenant, session):
    root = listing(tenant, session, "/")
    assert {"home", "tmp"} <= set(root)
    home = listing(tenant, session, "/home/kernel")
    assert home["Downloads"]["is_dir"] is True
    assert home["Downloads"]["path"] == "/home/kernel/Downloads"
    assert home["Downloads"]["mode"].startswith("d") and home["Downloads"]["size_bytes"] == 0


def test_it_writes_reads_and_describes_a_file(tenant, session):
    tenant.set_clock("2026-04-02T09:30:00Z")
    write(tenant, session, "/home/kernel/Downloads/report.csv", b"a,b\n1,2\n")
    info = fs(
        tenant, session, "GET", "file_info", params={"path": "/home/kernel/Downloads/report.csv"}
    ).json()
    assert info.pop("mod_time").startswith("2026-04-02T09:30:0")  # the tenant clock, not the host's
    assert info == {
        "name": "report.csv",
        "path": "/home/kernel/Downloads/report.csv",
        "is_dir": False,
        "size_bytes": 8,
        "mode": "-rw-r--r--",
    }
    read = fs(tenant, session, "GET", "read_file", params={"path": "/home/kernel/Downloads/report.csv"})
    assert read.status_code == 200 and read.content == b"a,b\n1,2\n"
    assert read.headers["content-type"] == "application/octet-stream"


def test_it_applies_the_mode_given_on_write(tenant, session):
    response = fs(
        tenant,
        session,
        "PUT",
        "write_file",
        params={"path": "/tmp/run.sh", "mode": "750"},
        content=b"#!/bin/sh\n",
    )
    assert response.status_code == 204
    assert listing(tenant, session, "/tmp")["run.sh"]["mode"] == "-rwxr-x---"
    bad = fs(tenant, session, "PUT", "write_file", params={"path": "/tmp/x", "mode": "999"}, content=b"")
    assert bad.status_code == 400 and "mode" in details(bad)


@pytest.mark.parametrize(
    "path",
    ["/home/kernel/../../../../etc/passwd", "/tmp/../..", "relative/path.txt", "", "/tmp/a\x00b"],
)
def test_it_refuses_traversal_and_relative_paths_with_400(tenant, session, path):
    response = fs(tenant, session, "GET", "read_file", params={"path": path})
    assert response.status_code == 400, response.text
    assert "path" in details(response)


@pytest.mark.parametrize(
    ("method", "tail"),
    [("GET", "read_file"), ("GET", "list_files"), ("GET", "file_info"), ("PUT", "create_directory")],
)
@pytest.mark.parametrize(
    "path", ["/tmp/" + "a" * 5000, "/tmp/" + "b" * 256, "/tmp/" + "/".join(["c" * 200] * 25)]
)
def test_it_refuses_over_long_paths_and_names_with_400(tenant, session, method, tail, path):
    if method == "PUT":
        response = fs(tenant, session, "PUT", tail, json={"path": path})
    else:
        response = fs(tenant, session, method, tail, params={"path": path})
    assert response.status_code == 400, response.text
    assert response.json()["code"] in ("invalid", "invalid_request") and "path" in details(response)


def test_it_never_serves_the_hosts_own_files(tenant, session):
    response = fs(tenant, session, "GET", "read_file", params={"path": "/etc/passwd"})
    assert response.status_code == 404
    assert response.json()["code"] == "file_not_found"
    assert "root:" not in response.text


def test_it_refuses_a_symlink_that_leads_outside_the_session(tenant, session):
    spawned = tenant.call(
        "POST",
        f"/browsers/{session}/process/exec",
        json={"command": "ln", "args": ["-s", "/etc", "escape"], "cwd": "/tmp"},
    )
    assert spawned.json()["exit_code"] == 0
    response = fs(tenant, session, "GET", "read_file", params={"path": "/tmp/escape/passwd"})
    assert response.status_code == 400
    assert "outside" in details(response)["path"]


def test_it_keeps_each_sessions_files_apart(tenant, session):
    other = tenant.call("POST", "/browsers", json={"timeout_seconds": LONG}).json()["session_id"]
    write(tenant, session, "/tmp/mine.txt", b"x")
    response = fs(tenant, other, "GET", "file_info", params={"path": "/tmp/mine.txt"})
    assert response.status_code == 404


def test_it_creates_moves_and_deletes(tenant, session):
    created = fs(tenant, session, "PUT", "create_directory", json={"path": "/home/kernel/work/a/b"})
    assert created.status_code == 204
    write(tenant, session, "/home/kernel/work/a/b/one.txt", b"1")
    moved = fs(
        tenant,
        session,
        "PUT",
        "move",
        json={"src_path": "/home/kernel/work/a/b/one.txt", "dest_path": "/home/kernel/work/two.txt"},
    )
    assert moved.status_code == 204
    assert set(listing(tenant, session, "/home/kernel/work")) == {"a", "two.txt"}
    not_a_file = fs(tenant, session, "PUT", "delete_file", json={"path": "/home/kernel/work/a"})
    assert not_a_file.status_code == 400 and "delete_directory" in details(not_a_file)["path"]
    assert (
        fs(tenant, session, "PUT", "delete_file", json={"path": "/home/kernel/work/two.txt"}).status_code
        == 204
    )
    assert (
        fs(tenant, session, "PUT", "delete_directory", json={"path": "/home/kernel/work"}).status_code == 204
    )
    assert "work" not in listing(tenant, session, "/home/kernel")


def test_it_answers_404_for_missing_paths_and_400_for_the_wrong_kind(tenant, session):
    missing = fs(tenant, session, "PUT", "delete_file", json={"path": "/tmp/nope"})
    assert missing.status_code == 404 and missing.json()["code"] == "file_not_found"
    write(tenant, session, "/tmp/file.txt", b"x")
    not_dir = fs(tenant, session, "GET", "list_files", params={"path": "/tmp/file.txt"})
    assert not_dir.status_code == 400
    no_parent = fs(
        tenant, session, "PUT", "move", json={"src_path": "/tmp/file.txt", "dest_path": "/no/where.txt"}
    )
    assert no_parent.status_code == 404
    into_itself = fs(tenant, session, "PUT", "move", json={"src_path": "/tmp", "dest_path": "/tmp/inner"})
    assert into_itself.status_code == 400
    root = fs(tenant, session, "PUT", "delete_directory", json={"path": "/"})
    assert root.status_code == 400


def test_it_uploads_files_paired_by_order(tenant, session):
    response = fs(
        tenant,
        session,
        "POST",
        "upload",
        files=[
            ("files[][dest_path]", (None, "/home/kernel/Desktop/a.txt")),
            ("files[][dest_path]", (None, "/home/kernel/Desktop/new/b.txt")),
            ("files[][file]", ("a.txt", b"alpha", "text/plain")),
            ("files[][file]", ("b.txt", b"beta", "text/plain")),
        ],
    )
    assert response.status_code == 204, response.text
    read = fs(tenant, session, "GET", "read_file", params={"path": "/home/kernel/Desktop/new/b.txt"})
    assert read.content == b"beta"
    unpaired = fs(
        tenant,
        session,
        "POST",
        "upload",
        files=[("files[][file]", ("a.txt", b"alpha", "text/plain"))],
    )
    assert unpaired.status_code == 400 and "files" in details(unpaired)


def test_it_uploads_every_file_of_the_indexed_form_the_sdk_sends(tenant, session):
    # SDK 0.131 (lib/multipart.py): files[0][dest_path], files[0][file], files[1][...], ...
    response = fs(
        tenant,
        session,
        "POST",
        "upload",
        files=[
            ("files[0][dest_path]", (None, "/home/kernel/Desktop/one.txt")),
            ("files[1][dest_path]", (None, "/home/kernel/Desktop/two.txt")),
            ("files[2][dest_path]", (None, "/home/kernel/Desktop/sub/three.txt")),
            ("files[0][file]", ("one.txt", b"1", "text/plain")),
            ("files[1][file]", ("two.txt", b"22", "text/plain")),
            ("files[2][file]", ("three.txt", b"333", "text/plain")),
        ],
    )
    assert response.status_code == 204, response.text
    for path, content in (("one.txt", b"1"), ("two.txt", b"22"), ("sub/three.txt", b"333")):
        read = fs(tenant, session, "GET", "read_file", params={"path": f"/home/kernel/Desktop/{path}"})
        assert read.content == content


@pytest.mark.parametrize(
    "parts",
    [
        # index 1 has a file but no destination
        [
            ("files[0][dest_path]", (None, "/home/kernel/Desktop/x.txt")),
            ("files[0][file]", ("x.txt", b"x", "text/plain")),
            ("files[1][file]", ("y.txt", b"y", "text/plain")),
        ],
        # a field the service does not know
        [
            ("files[0][dest_path]", (None, "/home/kernel/Desktop/x.txt")),
            ("files[0][file]", ("x.txt", b"x", "text/plain")),
            ("files[0][mode]", (None, "600")),
        ],
    ],
)
def test_it_refuses_an_upload_it_cannot_write_whole_and_writes_nothing(tenant, session, parts):
    response = fs(tenant, session, "POST", "upload", files=parts)
    assert response.status_code == 400
    assert "files" in details(response) or any(k.startswith("files[") for k in details(response))
    missing = fs(tenant, session, "GET", "file_info", params={"path": "/home/kernel/Desktop/x.txt"})
    assert missing.status_code == 404


def test_it_extracts_a_zip_into_the_destination(tenant, session):
    archive = make_zip(
        {"site/index.html": b"<h1>hi</h1>", "site/css/app.css": b"body{}", "README": b"read me"}
    )
    response = upload_zip(tenant, session, archive)
    assert response.status_code == 204, response.text
    assert set(listing(tenant, session, "/home/kernel/Downloads/unpacked")) == {"site", "README"}
    read = fs(
        tenant,
        session,
        "GET",
        "read_file",
        params={"path": "/home/kernel/Downloads/unpacked/site/css/app.css"},
    )
    assert read.content == b"body{}"


@pytest.mark.parametrize("entry", ["../../escaped.txt", "/etc/cron.d/evil", "a/../../escaped.txt"])
def test_it_refuses_a_zip_slip_entry_and_writes_nothing(tenant, session, entry):
    archive = make_zip({"fine.txt": b"ok", entry: b"pwned"})
    response = upload_zip(tenant, session, archive)
    assert response.status_code == 400, response.text
    assert "zip_file" in details(response) and entry.split("/")[-1] in response.json()["message"]
    assert "unpacked" not in listing(tenant, session, "/home/kernel/Downloads")
    assert "escaped.txt" not in listing(tenant, session, "/home/kernel")


def test_it_refuses_a_zip_with_a_symlink_entry(tenant, session):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        link = zipfile.ZipInfo("link")
        link.external_attr = 0o120777 << 16
        bundle.writestr(link, "/etc/passwd")
    response = upload_zip(tenant, session, buffer.getvalue())
    assert response.status_code == 400 and "symbolic link" in response.json()["message"]


def test_it_bounds_what_a_zip_bomb_may_extract(tenant, session):
    # 101 MiB of zeros compresses to about 100 KiB: the declared size alone refuses it.
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle,
        bundle.open("zeros.bin", "w", force_zip64=True) as entry,
    ):
        for _ in range(101):
            entry.write(b"\0" * (1024 * 1024))
    assert len(buffer.getvalue()) < 1024 * 1024
    response = upload_zip(tenant, session, buffer.getvalue())
    assert response.status_code == 400
    assert "100 MiB" in response.json()["message"]
    assert "unpacked" not in listing(tenant, session, "/home/kernel/Downloads")


def test_it_stops_extracting_when_the_headers_understate_the_size(tenant, session):
    archive = bytearray(make_zip({"zeros.bin": b"\0" * (101 * 1024 * 1024)}))
    # Rewrite the uncompressed size (local header offset 22, central directory offset 24) to 1 KiB.
    archive[22:26] = (1024).to_bytes(4, "little")
    central = archive.rfind(b"PK\x01\x02")
    archive[central + 24 : central + 28] = (1024).to_bytes(4, "little")
    response = upload_zip(tenant, session, bytes(archive))
    assert response.status_code == 400
    if "unpacked" in listing(tenant, session, "/home/kernel/Downloads"):
        assert listing(tenant, session, "/home/kernel/Downloads/unpacked") == {}


def test_it_refuses_an_upload_that_is_not_a_zip(tenant, session):
    response = upload_zip(tenant, session, b"definitely not a zip")
    assert response.status_code == 400 and "zip_file" in details(response)
    missing = fs(tenant, session, "POST", "upload_zip", files={"zip_file": ("a.zip", make_zip({"a": b"a"}))})
    assert missing.status_code == 400 and "dest_path" in details(missing)


def test_it_downloads_a_directory_as_a_zip(tenant, session):
    write(tenant, session, "/home/kernel/Desktop/notes/a.txt", b"A")
    write(tenant, session, "/home/kernel/Desktop/notes/sub/b.txt", b"B")
    response = fs(tenant, session, "GET", "download_dir_zip", params={"path": "/home/kernel/Desktop/notes"})
    assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.content)) as bundle:
        assert bundle.read("a.txt") == b"A" and bundle.read("sub/b.txt") == b"B"


def test_it_sets_permissions(tenant, session):
    write(tenant, session, "/tmp/secret.txt", b"x")
    response = fs(
        tenant, session, "PUT", "set_file_permissions", json={"path": "/tmp/secret.txt", "mode": "600"}
    )
    assert response.status_code == 204
    assert listing(tenant, session, "/tmp")["secret.txt"]["mode"] == "-rw-------"


def test_it_refuses_files_of_an_unknown_or_ended_session(tenant, session):
    assert fs(tenant, "nope", "GET", "list_files", params={"path": "/"}).status_code == 404
    tenant.call("DELETE", f"/browsers/{session}")
    assert fs(tenant, session, "GET", "list_files", params={"path": "/"}).status_code == 404


def test_it_gives_demo_sessions_realistic_files(demo_tenant):
    sessions = demo_tenant.call("GET", "/browsers").json()
    downloads = listing(demo_tenant, sessions[0]["session_id"], "/home/kernel/Downloads")
    assert "orders-export.csv" in downloads and downloads["orders-export.csv"]["size_bytes"] > 1000


# Watches -------------------------------------------------------------------------------------------


class WatchStream:
    """Reads a watch's SSE stream in the background of the test (frames as parsed JSON)."""

    def __init__(self, tenant, session, watch_id):
        self.url = f"{tenant.url}/browsers/{session}/fs/watch/{watch_id}/events"
        self.headers = {"Authorization": f"Bearer {tenant.api_key}"}

    def read(self, until, timeout=10.0):
        events = []
        deadline = time.monotonic() + timeout
        with httpx.stream("GET", self.url, headers=self.headers, timeout=timeout) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
                    if until(events):
                        return events
                if time.monotonic() > deadline:
                    break
        return events


class WatchEvents:
    """A watch's SSE stream read on a thread for the length of a ``with`` block, so that a test can change a
    file, wait for the event that shows a poll saw the change, then make the next one (each change its
    own poll: no fixed pause). Leaving the block deletes the watch, which ends the stream."""

    def __init__(self, tenant, session, watch_id):
        self.tenant, self.session, self.watch_id = tenant, session, watch_id
        self.events: list[dict] = []
        self.status: int | None = None
        self.ended = False
        self.changed = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)

    def _read(self):
        url = f"{self.tenant.url}/browsers/{self.session}/fs/watch/{self.watch_id}/events"
        headers = {"Authorization": f"Bearer {self.tenant.api_key}"}
        try:
            with httpx.stream("GET", url, headers=headers, timeout=60) as response:
                self.status = response.status_code
                for line in response.iter_lines():
                    if line.startswith("data: "):
                        with self.changed:
                            self.events.append(json.loads(line[6:]))
                            self.changed.notify_all()
        finally:
            with self.changed:
                self.ended = True
                self.changed.notify_all()

    def until(self, condition, seconds: float = 30.0) -> list[dict]:
        """The events so far, once they satisfy ``condition``."""
        with self.changed:
            self.changed.wait_for(lambda: self.ended or condition(self.events), seconds)
            assert self.status == 200
            assert condition(self.events), f"the watch reported only {kinds(self.events)}"
            return list(self.events)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        fs(self.tenant, self.session, "DELETE", f"watch/{self.watch_id}")
        self.thread.join(timeout=30)


def start_watch(tenant, session, path="/home/kernel", recursive=True):
    response = fs(tenant, session, "POST", "watch", json={"path": path, "recursive": recursive})
    assert response.status_code in (200, 201), response.text
    return response.json()["watch_id"]


def kinds(events):
    return [(e["type"], e["path"]) for e in events]


def saw(kind, path):
    return lambda events: (kind, path) in kinds(events)


def test_it_reports_create_write_rename_and_delete(tenant, session):
    watch_id = start_watch(tenant, session)
    with WatchEvents(tenant, session, watch_id) as watch:
        write(tenant, session, "/home/kernel/Desktop/a.txt", b"one")
        watch.until(saw("CREATE", "/home/kernel/Desktop/a.txt"))
        write(tenant, session, "/home/kernel/Desktop/a.txt", b"one two")
        watch.until(saw("WRITE", "/home/kernel/Desktop/a.txt"))
        fs(
            tenant,
            session,
            "PUT",
            "move",
            json={"src_path": "/home/kernel/Desktop/a.txt", "dest_path": "/home/kernel/b.txt"},
        )
        watch.until(saw("CREATE", "/home/kernel/b.txt"))
        fs(tenant, session, "PUT", "delete_file", json={"path": "/home/kernel/b.txt"})
        events = watch.until(saw("DELETE", "/home/kernel/b.txt"))
    assert kinds(events) == [
        ("CREATE", "/home/kernel/Desktop/a.txt"),
        ("WRITE", "/home/kernel/Desktop/a.txt"),
        ("RENAME", "/home/kernel/Desktop/a.txt"),
        ("CREATE", "/home/kernel/b.txt"),
        ("DELETE", "/home/kernel/b.txt"),
    ]
    assert events[0] == {
        "type": "CREATE",
        "name": "a.txt",
        "path": "/home/kernel/Desktop/a.txt",
        "is_dir": False,
    }


def test_it_never_reports_the_temporary_file_a_write_goes_through(tenant, session):
    """A write lands in a temporary file renamed into place; a poll that sees it mid-write must not report
    it (nor turn the one write into a CREATE and a RENAME)."""
    watch_id = start_watch(tenant, session)
    ticks = [f"/home/kernel/tick-{n}.txt" for n in range(3)]

    def temporary_file():
        listed = fs(tenant, session, "GET", "list_files", params={"path": "/home/kernel/Desktop"})
        return listed.status_code == 200 and any(e["name"].startswith(TEMP_PREFIX) for e in listed.json())

    def slowly():  # the upload stays open across several polls of the watch
        for tick in ticks:
            yield b"x" * 1024
            wait_until(temporary_file, what="the write's temporary file")
            # The event of a file made now comes from a poll that ran while the temporary file was there.
            write(tenant, session, tick, b"")
            watch.until(saw("CREATE", tick))

    with WatchEvents(tenant, session, watch_id) as watch:
        response = fs(
            tenant,
            session,
            "PUT",
            "write_file",
            params={"path": "/home/kernel/Desktop/slow.txt"},
            content=slowly(),
        )
        assert response.status_code == 204, response.text
        watch.until(saw("CREATE", "/home/kernel/Desktop/slow.txt"))
        fs(tenant, session, "PUT", "delete_file", json={"path": "/home/kernel/Desktop/slow.txt"})
        events = watch.until(saw("DELETE", "/home/kernel/Desktop/slow.txt"))
    assert kinds(events) == [
        *[("CREATE", tick) for tick in ticks],
        ("CREATE", "/home/kernel/Desktop/slow.txt"),
        ("DELETE", "/home/kernel/Desktop/slow.txt"),
    ]


def test_it_reports_directories_and_their_contents(tenant, session):
    watch_id = start_watch(tenant, session)
    upload_zip(tenant, session, make_zip({"x/y.txt": b"y"}), dest="/home/kernel/Downloads/z")
    events = WatchStream(tenant, session, watch_id).read(until=lambda ev: len(ev) >= 3)
    assert kinds(events) == [
        ("CREATE", "/home/kernel/Downloads/z"),
        ("CREATE", "/home/kernel/Downloads/z/x"),
        ("CREATE", "/home/kernel/Downloads/z/x/y.txt"),
    ]
    assert events[0]["is_dir"] is True


def test_it_watches_one_level_unless_recursive(tenant, session):
    watch_id = start_watch(tenant, session, path="/home/kernel", recursive=False)
    write(tenant, session, "/home/kernel/Desktop/deep.txt", b"x")
    write(tenant, session, "/home/kernel/top.txt", b"x")
    events = WatchStream(tenant, session, watch_id).read(until=lambda ev: len(ev) >= 1)
    assert kinds(events) == [("CREATE", "/home/kernel/top.txt")]


def test_it_ends_the_stream_when_the_watch_is_deleted(tenant, session):
    watch_id = start_watch(tenant, session)
    assert fs(tenant, session, "DELETE", f"watch/{watch_id}").status_code == 204
    gone = fs(tenant, session, "GET", f"watch/{watch_id}/events")
    assert gone.status_code == 404 and gone.json()["code"] == "watch_not_found"


def test_it_refuses_to_watch_a_missing_directory(tenant, session):
    response = fs(tenant, session, "POST", "watch", json={"path": "/home/kernel/nope"})
    assert response.status_code == 404
    traversal = fs(tenant, session, "POST", "watch", json={"path": "/home/../.."})
    assert traversal.status_code == 400


# Symlinks a session's commands plant ---------------------------------------------------------------
#
# The files API runs in the sandbox process (as root when the sandbox is), while a session's commands
# may create any symlink text: `ln -s /host/dir d` points nowhere inside the confinement but at the host
# directory in the sandbox's view. No operation may ever follow such a link, even when a command swaps a
# path component between a directory and a link while the API uses it.

MARKER = b"host secret, never to be read or changed"


@pytest.fixture
def outside(tmp_path):
    """A host directory outside every session: a marker file, a file only it has, a subdirectory."""
    host = tmp_path / "host"
    (host / "sub").mkdir(parents=True)
    (host / "secret.txt").write_bytes(MARKER)
    (host / "secret.txt").chmod(0o640)
    (host / "outside-only.txt").write_bytes(MARKER)
    return host


def host_state(host):
    return sorted(
        (p.relative_to(host).as_posix(), p.lstat().st_mode, p.read_bytes() if p.is_file() else None)
        for p in host.rglob("*")
    )


def run(tenant, session, command, *args):
    response = tenant.call(
        "POST", f"/browsers/{session}/process/exec", json={"command": command, "args": list(args)}
    )
    assert response.status_code == 200 and response.json()["exit_code"] == 0, response.text


def zip_names(response):
    with zipfile.ZipFile(io.BytesIO(response.content)) as bundle:
        return bundle.namelist(), b"".join(bundle.read(name) for name in bundle.namelist())


def leaks(tenant, session, name, outside):
    """Every files-API operation through ``/tmp/<name>``; returns what each answered that came from the
    host (expected: nothing)."""
    base = f"/tmp/{name}"
    found = []
    read = fs(tenant, session, "GET", "read_file", params={"path": f"{base}/secret.txt"})
    if MARKER in read.content:
        found.append("read_file")
    info = fs(tenant, session, "GET", "file_info", params={"path": f"{base}/outside-only.txt"})
    if info.status_code == 200:
        found.append("file_info")
    listed = fs(tenant, session, "GET", "list_files", params={"path": base})
    if "outside-only.txt" in listed.text:
        found.append("list_files")
    zipped = fs(tenant, session, "GET", "download_dir_zip", params={"path": base})
    if zipped.status_code == 200 and MARKER in zip_names(zipped)[1]:
        found.append("download_dir_zip")
    whole = fs(tenant, session, "GET", "download_dir_zip", params={"path": "/tmp"})
    if whole.status_code == 200 and MARKER in zip_names(whole)[1]:
        found.append("download_dir_zip of the parent")
    fs(tenant, session, "PUT", "write_file", params={"path": f"{base}/secret.txt"}, content=b"pwned")
    fs(tenant, session, "PUT", "write_file", params={"path": f"{base}/planted.txt"}, content=b"pwned")
    fs(
        tenant,
        session,
        "POST",
        "upload",
        files=[
            ("files[][dest_path]", (None, f"{base}/uploaded.txt")),
            ("files[][file]", ("u.txt", b"pwned", "text/plain")),
        ],
    )
    upload_zip(tenant, session, make_zip({"zipped.txt": b"pwned", "secret.txt": b"pwned"}), dest=base)
    upload_zip(tenant, session, make_zip({"deeper.txt": b"pwned"}), dest=f"{base}/sub/deeper")
    fs(tenant, session, "PUT", "create_directory", json={"path": f"{base}/made"})
    fs(tenant, session, "PUT", "set_file_permissions", json={"path": f"{base}/secret.txt", "mode": "777"})
    moved = fs(
        tenant, session, "PUT", "move", json={"src_path": f"{base}/secret.txt", "dest_path": "/tmp/stolen"}
    )
    if moved.status_code == 204:
        stolen = fs(tenant, session, "GET", "read_file", params={"path": "/tmp/stolen"})
        if MARKER in stolen.content:
            found.append("move (src)")
    write(tenant, session, "/tmp/plant.txt", b"pwned")
    fs(tenant, session, "PUT", "move", json={"src_path": "/tmp/plant.txt", "dest_path": f"{base}/moved.txt"})
    fs(tenant, session, "PUT", "delete_file", json={"path": f"{base}/outside-only.txt"})
    fs(tenant, session, "PUT", "delete_directory", json={"path": f"{base}/sub"})
    watch = fs(tenant, session, "POST", "watch", json={"path": base, "recursive": True})
    if watch.status_code == 201:
        fs(tenant, session, "DELETE", f"watch/{watch.json()['watch_id']}")
    return found


def test_it_never_follows_a_symlink_a_command_planted_towards_the_host(tenant, session, outside):
    before = host_state(outside)
    run(tenant, session, "ln", "-s", str(outside), "/tmp/out")
    run(tenant, session, "ln", "-s", f"{outside}/secret.txt", "/tmp/outfile")
    run(tenant, session, "ln", "-s", "../../../../../../../../../../../.." + str(outside), "/tmp/up")
    assert leaks(tenant, session, "out", outside) == []
    assert leaks(tenant, session, "up", outside) == []
    for path in ("/tmp/outfile", "/tmp/out/secret.txt"):
        read = fs(tenant, session, "GET", "read_file", params={"path": path})
        assert MARKER not in read.content
    fs(tenant, session, "PUT", "write_file", params={"path": "/tmp/outfile"}, content=b"pwned")
    fs(tenant, session, "PUT", "set_file_permissions", json={"path": "/tmp/outfile", "mode": "777"})
    fs(tenant, session, "PUT", "delete_file", json={"path": "/tmp/outfile"})
    assert host_state(outside) == before


def test_it_refuses_a_symlinked_directory_on_the_way_with_the_outside_error(tenant, session, outside):
    run(tenant, session, "ln", "-s", str(outside), "/tmp/out")
    for method, op, kwargs in [
        ("GET", "read_file", {"params": {"path": "/tmp/out/secret.txt"}}),
        ("GET", "list_files", {"params": {"path": "/tmp/out"}}),
        ("PUT", "write_file", {"params": {"path": "/tmp/out/new.txt"}, "content": b"x"}),
        ("PUT", "create_directory", {"json": {"path": "/tmp/out/new"}}),
    ]:
        response = fs(tenant, session, method, op, **kwargs)
        assert response.status_code == 400, (op, response.text)
        assert "outside" in details(response)["path"]


def test_it_follows_a_relative_symlink_that_stays_inside_the_session(tenant, session):
    write(tenant, session, "/home/kernel/Downloads/report.txt", b"inside")
    run(tenant, session, "ln", "-s", "../home/kernel/Downloads", "/tmp/dl")
    read = fs(tenant, session, "GET", "read_file", params={"path": "/tmp/dl/report.txt"})
    assert read.status_code == 200 and read.content == b"inside"
    write(tenant, session, "/tmp/dl/second.txt", b"2")
    assert "second.txt" in listing(tenant, session, "/home/kernel/Downloads")
    assert listing(tenant, session, "/tmp")["dl"]["mode"].startswith("l")


# Renames keep `d` a directory or a link to the host almost all the time, switching every tenth of a
# millisecond or so, so a check of `d` and the use that follows it often see different things.
SWAPPER = """
import os, shutil, sys, time
os.chdir("/tmp")
while True:
    try:
        os.makedirs("real/sub", exist_ok=True)
        if not os.path.exists("real/secret.txt"):
            with open("real/secret.txt", "w") as f:
                f.write("inside")
        if not os.path.islink("link"):
            os.symlink(sys.argv[1], "link")
        for _ in range(1000):
            os.rename("real", "d")
            time.sleep(0.0001)
            os.rename("d", "real")
            os.rename("link", "d")
            time.sleep(0.0001)
            os.rename("d", "link")
    except OSError:
        if os.path.islink("d"):
            os.unlink("d")
        elif os.path.isdir("d"):
            shutil.rmtree("d", ignore_errors=True)
"""


def test_it_never_reaches_the_host_while_a_command_swaps_a_directory_for_a_symlink(tenant, session, outside):
    before = host_state(outside)
    started = tenant.call(
        "POST",
        f"/browsers/{session}/process/spawn",
        json={"command": "python3", "args": ["-c", SWAPPER, str(outside)], "timeout_sec": 120},
    )
    assert started.status_code in (200, 201), started.text
    process_id = started.json()["process_id"]

    def racing():  # the swapper's loop has begun once its link to the host is there (as link or d)
        listed = fs(tenant, session, "GET", "list_files", params={"path": "/tmp"})
        return listed.status_code == 200 and any(e["mode"].startswith("l") for e in listed.json())

    try:
        wait_until(racing, what="the swapper's loop")
        found = set()
        for _ in range(12):  # 12 rounds of every operation: about two hundred requests
            found.update(leaks(tenant, session, "d", outside))
            assert host_state(outside) == before, "the files API changed the host's files"
        assert found == set()
        status = tenant.call("GET", f"/browsers/{session}/process/{process_id}/status").json()
        assert status["state"] == "running"  # the swapper was racing all along
    finally:
        tenant.call("POST", f"/browsers/{session}/process/{process_id}/kill", json={"signal": "KILL"})
    assert host_state(outside) == before


def test_it_deletes_a_directory_holding_links_to_the_host_without_following_them(tenant, session, outside):
    before = host_state(outside)
    run(tenant, session, "mkdir", "-p", "/tmp/box/inner")
    run(tenant, session, "ln", "-s", str(outside), "/tmp/box/out")
    run(tenant, session, "ln", "-s", str(outside), "/tmp/box/inner/out")
    response = fs(tenant, session, "PUT", "delete_directory", json={"path": "/tmp/box"})
    assert response.status_code == 204, response.text
    assert "box" not in listing(tenant, session, "/tmp")
    assert host_state(outside) == before


def test_it_answers_at_once_for_a_fifo_a_command_left(tenant, session):
    run(tenant, session, "mkfifo", "/tmp/pipe")
    response = httpx.get(
        f"{tenant.url}/browsers/{session}/fs/read_file",
        params={"path": "/tmp/pipe"},
        headers={"Authorization": f"Bearer {tenant.api_key}"},
        timeout=5,
    )
    assert response.status_code == 400 and "regular file" in details(response)["path"]


@pytest.mark.parametrize(
    "command, stop",
    [(("manage.py", "sandbox"), signal.SIGINT), (("-m", "console.sandbox"), signal.SIGTERM)],
    ids=["manage-sigint", "module-sigterm"],
)
def test_it_leaves_no_temporary_directory_once_stopped(command, stop):
    with temporary_folder() as tmp:
        url, process = start_sandbox(command=command, SANDBOX_ENGINE="simulated", TMPDIR=str(tmp))
        try:
            tenant = new_tenant(url)
            created = tenant.call("POST", "/browsers", json={"name": "files"}).json()["session_id"]
            write(tenant, created, "/home/kernel/note.txt", b"kept until the sandbox stops")
            run(tenant, created, "true")  # a confined command: the generated /etc of the jail
            made = sorted(path.name.rpartition("-")[0] for path in tmp.iterdir())
            assert made == ["sandbox-etc", "sandbox-fs"]
            process.send_signal(stop)
            process.wait(timeout=15)
        finally:
            stop_sandbox(process)
        assert list(tmp.iterdir()) == []
