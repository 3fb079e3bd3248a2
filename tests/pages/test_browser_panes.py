"""The processes, files and computer panes of a session page: each role, each partial, the service's own
refusals shown in place, confirmations, the audit log, and the live relays (process output, file watch)."""

import io
import json
import re
import shlex
import zipfile
from urllib.parse import urlencode

import pytest

from console.accounts.models import AuditLog
from tests.sandbox_fixtures import process_exited

LONG = 259_200


@pytest.fixture
def session(tenant):
    body = {
        "name": "panes",
        "timeout_seconds": LONG,
        "viewport": {"width": 1280, "height": 800},
        "telemetry": {"enabled": True, "browser": {"interaction": {"enabled": True}}},
    }
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    return tenant.call("POST", "/browsers", json=body).json()["session_id"]


def url(session, path=""):
    return f"/o/acme/browsers/{session}/{path}"


def hx(target):
    return {"HX-Request": "true", "HX-Target": target}


def service_calls(tenant, method, fragment):
    return [r for r in tenant.requests() if r["method"] == method and fragment in r["path"]]


def make_zip(entries):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, content in entries.items():
            bundle.writestr(name, content)
    buffer.seek(0)
    buffer.name = "bundle.zip"
    return buffer


async def read_stream(client, path, until="event: ended") -> str:
    response = await client.get(path)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    chunks = []
    async for chunk in response.streaming_content:
        chunks.append(chunk.decode())
        if until in "".join(chunks):
            break
    return "".join(chunks)


# The session page --------------------------------------------------------------------------------


TABS = ("processes", "files", "computer", "tools", "replays")


def tab_links(page: str, session: str) -> list[str]:
    """The session tabs' hrefs, in order, and which one is current."""
    nav = page[page.index('<nav class="tabs session-tabs"') :]
    nav = nav[: nav.index("</nav>")]
    return re.findall(r'<a href="([^"]+)"[^>]*?(aria-current="page")?>', nav)


async def test_it_puts_the_panes_on_tabs_of_their_own_urls(viewer_client, session):
    page = (await viewer_client.get(url(session))).content.decode()
    links = tab_links(page, session)
    assert [href for href, _ in links] == [url(session)] + [url(session, f"{tab}/") for tab in TABS]
    assert [current for _, current in links] == ['aria-current="page"'] + [""] * len(TABS)
    # The panes load when their tab opens, not on the session page.
    for pane in TABS:
        assert f'id="{pane}-pane"' not in page
    assert 'id="screen-pane"' in page and 'id="telemetry-pane"' in page and "data-inspector" in page
    assert "js/processes.js" in page and "js/files.js" in page and "js/computer.js" in page


async def test_it_serves_each_tab_as_the_whole_session_page(viewer_client, session):
    for tab in TABS:
        page = (await viewer_client.get(url(session, f"{tab}/"))).content.decode()
        assert f'id="{tab}-pane"' in page and 'id="session-tab"' in page
        links = tab_links(page, session)
        assert [current for href, current in links if current] == ['aria-current="page"']
        assert [href for href, current in links if current] == [url(session, f"{tab}/")]
        assert page.count("<h1") == 1 and "js/telemetry.js" in page and "js/screen.js" in page


async def test_it_serves_each_pane_as_a_partial(viewer_client, session):
    for pane in ("processes", "files", "computer"):
        response = await viewer_client.get(url(session, f"{pane}/"), headers=hx(f"{pane}-pane"))
        assert response.status_code == 200
        assert response.content.decode().lstrip().startswith(f'<section id="{pane}-pane"')


async def test_it_hides_every_pane_from_outsiders(outsider_client, session):
    for path in (
        "processes/",
        "files/",
        "computer/",
        "computer/screenshot.png",
        "files/download/?path=/tmp/x",
    ):
        assert (await outsider_client.get(url(session, path))).status_code == 404


# Processes ---------------------------------------------------------------------------------------


async def test_it_shows_viewers_the_processes_read_only(viewer_client, session):
    body = (await viewer_client.get(url(session, "processes/"))).content.decode()
    assert "needs the operator role" in body and 'name="command"' not in body
    response = await viewer_client.post(url(session, "processes/"), {"command": "echo hi"})
    assert response.status_code == 403


async def test_it_spawns_a_command_opens_its_page_and_lists_it(operator_client, tenant, session, operator):
    command = "sh -c 'echo \"hello world\"' --token=s3cret -v"
    response = await operator_client.post(
        url(session, "processes/"), {"command": command, "label": "Greeter & co"}
    )
    assert response.status_code == 302
    process_id = response["Location"].rstrip("/").rsplit("/", 1)[-1]
    (spawned,) = service_calls(tenant, "POST", "/process/spawn")
    assert spawned["status"] == 201
    entry = await AuditLog.objects.aget(action="browser.process.spawn")
    assert entry.target_id == process_id
    assert entry.detail.startswith(f"session={session} program=sh args=4 ")
    # arguments may hold secrets: never audited, only their shape (options kept, values hidden)
    assert "hello" not in entry.detail and "s3cret" not in entry.detail
    page = (await operator_client.get(response["Location"])).content.decode()
    assert 'sse-connect="' in page and f"processes/{process_id}/stream/" in page
    # The page says what runs: the operator's name for it, the program and its arguments' shape.
    assert "<h1>Greeter &amp; co" in page
    assert "<dt>Command</dt><dd><code>sh -c … --token=… -v</code>" in page
    assert "<dt>Started by</dt><dd>oscar" in page
    listing = (await operator_client.get(url(session, "processes/"))).content.decode()
    assert process_id[:10] in listing and "<code>sh -c … --token=… -v</code>" in listing
    assert "Greeter &amp; co" in listing and "oscar" in listing


async def test_it_checks_the_command_before_sending_anything(operator_client, tenant, session):
    response = await operator_client.post(
        url(session, "processes/"), {"command": "echo 'unbalanced", "cwd": "tmp"}
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "cannot be read" in body and "must be absolute" in body
    assert service_calls(tenant, "POST", "/process/") == []


async def test_it_shows_the_services_refusal_next_to_the_command(operator_client, tenant, session):
    response = await operator_client.post(
        url(session, "processes/"), {"command": "no-such-program-xyz"}, headers=hx("processes-pane")
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="processes-pane"')
    assert "no such program" in body
    assert await AuditLog.objects.filter(action="browser.process.spawn", outcome="error").aexists()


async def test_it_explains_that_execution_is_turned_off(operator_client, tenant, session):
    tenant.control("POST", "settings", {"exec_enabled": False})
    body = (await operator_client.post(url(session, "processes/"), {"command": "true"})).content.decode()
    assert "turned off" in body


async def test_it_runs_a_command_once_and_shows_its_output_escaped(operator_client, session):
    command = "sh -c 'printf \"\\033[31m<b>red</b>\\033[0m\\n\"; echo warn >&2; exit 4'"
    response = await operator_client.post(
        url(session, "processes/exec/"), {"exec-command": command}, headers=hx("exec-pane")
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="exec-pane"')
    assert '<span class="ansi-fg-1">&lt;b&gt;red&lt;/b&gt;</span>' in body
    assert "\x1b" not in body and "<b>red</b>" not in body
    assert "warn" in body and "data-exit-code>4<" in body
    entry = await AuditLog.objects.aget(action="browser.process.exec")
    assert entry.detail.endswith("exit=4")


async def test_it_relays_the_output_live_and_ends_with_the_exit_code(viewer_client, tenant, session):
    spawned = tenant.call(
        "POST",
        f"/browsers/{session}/process/spawn",
        json={"command": "sh", "args": ["-c", "echo out; echo '<err>' >&2; exit 3"]},
    ).json()
    stream = await read_stream(viewer_client, url(session, f"processes/{spawned['process_id']}/stream/"))
    assert "event: output" in stream
    assert '<span class="out out--stdout">out' in stream
    assert '<span class="out out--stderr">&lt;err&gt;' in stream
    assert "event: exit" in stream and "Exited with code 3" in stream
    assert "event: ended" in stream


# A colour code whose number has 5000 digits: int() refuses more than 4300 (a ValueError, not a colour).
LONG_CODE = "printf \"\\033[$(head -c 5000 /dev/zero | tr '\\0' 1)mafter\\n\""


async def test_it_shows_output_whose_escape_holds_a_number_too_long_to_read(operator_client, tenant, session):
    """Any output a command prints is the console's to render: a colour code of 5000 digits made the
    exec pane a 500 and broke the live output's stream (``int()`` past 4300 digits)."""
    response = await operator_client.post(
        url(session, "processes/exec/"),
        {"exec-command": shlex.join(["sh", "-c", LONG_CODE])},
        headers=hx("exec-pane"),
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "after" in body and "\x1b" not in body and "1111" not in body
    spawned = tenant.call(
        "POST", f"/browsers/{session}/process/spawn", json={"command": "sh", "args": ["-c", LONG_CODE]}
    ).json()
    stream = await read_stream(operator_client, url(session, f"processes/{spawned['process_id']}/stream/"))
    assert '<span class="out out--stdout">after' in stream
    assert "event: exit" in stream and "Exited with code 0" in stream


async def test_it_replays_the_output_to_a_viewer_who_opens_the_pane_later(viewer_client, tenant, session):
    spawned = tenant.call(
        "POST", f"/browsers/{session}/process/spawn", json={"command": "echo", "args": ["for later viewers"]}
    ).json()
    path = url(session, f"processes/{spawned['process_id']}/stream/")
    first = await read_stream(viewer_client, path)
    second = await read_stream(viewer_client, path)
    assert "for later viewers" in first and "for later viewers" in second


async def test_it_shows_the_status_and_polls_it_while_running(viewer_client, tenant, session):
    spawned = tenant.call(
        "POST", f"/browsers/{session}/process/spawn", json={"command": "sleep", "args": ["30"]}
    ).json()
    pid = spawned["process_id"]
    page = (await viewer_client.get(url(session, f"processes/{pid}/"))).content.decode()
    assert 'data-state="running"' in page and 'hx-trigger="every 2s' in page
    assert "Kill…" not in page and 'name="text"' not in page  # viewers only watch
    partial = await viewer_client.get(url(session, f"processes/{pid}/status/"), headers=hx("process-status"))
    assert partial.content.decode().lstrip().startswith('<section id="process-status"')
    tenant.call("POST", f"/browsers/{session}/process/{pid}/kill", json={"signal": "KILL"})


async def test_it_sends_stdin_and_audits_only_the_byte_count(operator_client, tenant, session):
    pid = tenant.call("POST", f"/browsers/{session}/process/spawn", json={"command": "cat"}).json()[
        "process_id"
    ]
    response = await operator_client.post(
        url(session, f"processes/{pid}/stdin/"),
        {"text": "s3cret-token", "newline": "on"},
        headers=hx("process-stdin"),
    )
    body = response.content.decode()
    assert "Sent 13 bytes" in body and "s3cret-token" not in body
    entry = await AuditLog.objects.aget(action="browser.process.stdin")
    assert entry.detail == "bytes=13"
    tenant.call("POST", f"/browsers/{session}/process/{pid}/kill", json={"signal": "KILL"})


async def test_it_confirms_then_kills_with_the_chosen_signal(operator_client, tenant, session):
    pid = tenant.call(
        "POST", f"/browsers/{session}/process/spawn", json={"command": "sleep", "args": ["30"]}
    ).json()["process_id"]
    confirm = (await operator_client.get(url(session, f"processes/{pid}/kill/"))).content.decode()
    assert 'name="signal"' in confirm and "KILL" in confirm
    assert service_calls(tenant, "POST", "/kill") == []
    response = await operator_client.post(url(session, f"processes/{pid}/kill/"), {"signal": "INT"})
    assert response.status_code == 302
    assert service_calls(tenant, "POST", "/kill")[0]["status"] == 200
    entry = await AuditLog.objects.aget(action="browser.process.kill")
    assert entry.detail == "signal=INT"
    stream = await read_stream(operator_client, url(session, f"processes/{pid}/stream/"))
    assert "Exited with code 130 (SIGINT)" in stream


async def test_it_explains_a_kill_of_an_exited_process(operator_client, tenant, session):
    pid = tenant.call("POST", f"/browsers/{session}/process/spawn", json={"command": "true"}).json()[
        "process_id"
    ]
    assert process_exited(tenant, session, pid)["exit_code"] == 0
    page = (await operator_client.get(url(session, f"processes/{pid}/kill/"))).content.decode()
    assert "already exited" in page


async def test_it_answers_404_for_an_unknown_process(viewer_client, session):
    response = await viewer_client.get(url(session, "processes/00000000-0000-0000-0000-000000000000/"))
    assert response.status_code == 404


# Files -------------------------------------------------------------------------------------------


def write(tenant, session, path, content=b"x"):
    tenant.call("PUT", f"/browsers/{session}/fs/write_file", params={"path": path}, content=content)


async def test_it_lists_a_directory_with_breadcrumbs(viewer_client, tenant, session):
    write(tenant, session, "/home/kernel/Downloads/report.csv", b"a,b\n")
    body = (
        await viewer_client.get(url(session, "files/"), {"path": "/home/kernel/Downloads"})
    ).content.decode()
    assert "report.csv" in body and "-rw-r--r--" in body and "4\xa0bytes" in body
    assert "?path=%2Fhome%2Fkernel" in body  # the crumb to the parent
    trail = re.search(r'<nav class="path-crumbs"[^>]*>(.*?)</nav>', body, re.S).group(1)
    assert re.sub(r"<[^>]+>", "", trail).strip() == "/home/kernel/Downloads"
    assert "Delete…" not in body and "Upload" not in body  # viewers browse only


async def test_it_refuses_a_path_outside_the_session_without_asking(viewer_client, tenant, session):
    response = await viewer_client.get(url(session, "files/"), {"path": "/home/../../etc"})
    assert response.status_code == 404
    assert service_calls(tenant, "GET", "/fs/list_files") == []


async def test_it_says_when_a_directory_does_not_exist(viewer_client, session):
    body = (await viewer_client.get(url(session, "files/"), {"path": "/nope"})).content.decode()
    assert "/nope does not exist" in body


async def test_it_shows_a_file_with_a_text_preview_and_streams_downloads(viewer_client, tenant, session):
    write(tenant, session, "/tmp/notes.txt", b"<script>alert(1)</script> hello")
    page = (await viewer_client.get(url(session, "files/file/"), {"path": "/tmp/notes.txt"})).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; hello" in page and "<script>alert(1)" not in page
    trail = re.search(r'<nav class="path-crumbs"[^>]*>(.*?)</nav>', page, re.S).group(1)
    assert re.sub(r"<[^>]+>", "", trail).strip() == "/tmp/notes.txt"
    response = await viewer_client.get(url(session, "files/download/"), {"path": "/tmp/notes.txt"})
    assert response["Content-Disposition"] == 'attachment; filename="notes.txt"'
    assert b"".join([c async for c in response.streaming_content]) == b"<script>alert(1)</script> hello"
    zipped = await viewer_client.get(url(session, "files/zip/"), {"path": "/tmp"})
    content = b"".join([c async for c in zipped.streaming_content])
    assert zipfile.ZipFile(io.BytesIO(content)).read("notes.txt").startswith(b"<script>")


async def test_it_creates_a_directory_and_audits_it(operator_client, tenant, session):
    response = await operator_client.post(
        url(session, "files/mkdir/"),
        {"path": "/home/kernel/reports", "current": "/home/kernel"},
        headers=hx("files-pane"),
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="files-pane"') and "reports/" in body
    assert await AuditLog.objects.filter(action="browser.fs.mkdir", detail="/home/kernel/reports").aexists()


async def test_it_checks_paths_before_sending(operator_client, tenant, session):
    body = (
        await operator_client.post(url(session, "files/mkdir/"), {"path": "relative/dir"})
    ).content.decode()
    assert "must be absolute" in body
    body = (
        await operator_client.post(url(session, "files/mkdir/"), {"path": "/tmp/../etc"})
    ).content.decode()
    assert "cannot contain" in body
    for path, message in [
        ("/tmp/" + "a" * 256, "at most 255 bytes"),
        ("/tmp/" + "/b" * 2100, "at most 4096"),
    ]:
        response = await operator_client.post(url(session, "files/mkdir/"), {"path": path})
        assert response.status_code == 200 and message in response.content.decode()
    assert service_calls(tenant, "PUT", "/fs/create_directory") == []


async def test_it_answers_an_over_long_path_in_the_url_without_asking_the_service(
    viewer_client, tenant, session
):
    for path in ["/tmp/" + "a" * 5000, "/tmp/" + "x" * 300]:
        for view in ("files/", "files/file/", "files/download/"):
            response = await viewer_client.get(url(session, view), {"path": path})
            assert response.status_code == 404, (view, response.status_code)
    assert [c for c in tenant.requests() if "/fs/" in c["path"] and "a" * 300 in str(c)] == []


async def test_it_uploads_files_into_a_directory(operator_client, tenant, session):
    one, two = io.BytesIO(b"1"), io.BytesIO(b"22")
    one.name, two.name = "one.txt", "two.txt"
    response = await operator_client.post(
        url(session, "files/upload/"), {"files": [one, two], "directory": "/home/kernel/Desktop"}
    )
    assert response.status_code == 302
    listed = tenant.call(
        "GET", f"/browsers/{session}/fs/list_files", params={"path": "/home/kernel/Desktop"}
    ).json()
    assert {"one.txt", "two.txt"} <= {f["name"] for f in listed}


async def test_it_uploads_a_zip_and_extracts_it(operator_client, tenant, session, operator):
    response = await operator_client.post(
        url(session, "files/upload-zip/"),
        {"zip_file": make_zip({"site/index.html": b"<h1>"}), "dest_path": "/home/kernel/site"},
        headers=hx("files-pane"),
    )
    body = response.content.decode()
    assert response.status_code == 200 and "site/" in body and "files-changed" in response["HX-Trigger"]
    read = tenant.call(
        "GET", f"/browsers/{session}/fs/read_file", params={"path": "/home/kernel/site/site/index.html"}
    )
    assert read.content == b"<h1>"
    entry = await AuditLog.objects.aget(action="browser.fs.upload_zip")
    assert entry.detail.startswith("bundle.zip -> /home/kernel/site (") and entry.detail.endswith(" bytes)")


async def test_it_refuses_a_zip_slip_archive_before_sending(operator_client, tenant, session):
    response = await operator_client.post(
        url(session, "files/upload-zip/"),
        {"zip_file": make_zip({"../../evil.sh": b"x"}), "dest_path": "/tmp"},
    )
    assert "would land outside" in response.content.decode()
    assert service_calls(tenant, "POST", "/fs/upload_zip") == []


async def test_it_shows_the_services_zip_refusal_next_to_the_file(operator_client, tenant, session):
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("zeros.bin", b"\0" * (101 * 1024 * 1024))
    bomb.seek(0)
    bomb.name = "bomb.zip"
    response = await operator_client.post(
        url(session, "files/upload-zip/"), {"zip_file": bomb, "dest_path": "/tmp/x"}
    )
    body = response.content.decode()
    assert "100 MiB" in body
    assert service_calls(tenant, "POST", "/fs/upload_zip")[0]["status"] == 400


async def test_it_moves_a_file_with_a_form_and_explains_a_missing_destination(
    operator_client, tenant, session
):
    write(tenant, session, "/tmp/a.txt")
    form = (await operator_client.get(url(session, "files/move/"), {"path": "/tmp/a.txt"})).content.decode()
    assert 'name="dest_path"' in form and 'value="/tmp/a.txt"' in form
    missing = await operator_client.post(
        url(session, "files/move/"),
        {"src_path": "/tmp/a.txt", "dest_path": "/no/where/b.txt"},
        headers=hx("file-move"),
    )
    assert missing.status_code == 200
    assert missing.content.decode().lstrip().startswith('<section id="file-move"')
    assert "Not found: no such file or directory: /no/where" in missing.content.decode()
    moved = await operator_client.post(
        url(session, "files/move/"), {"src_path": "/tmp/a.txt", "dest_path": "/tmp/b.txt"}
    )
    assert moved.status_code == 302
    assert await AuditLog.objects.filter(
        action="browser.fs.move", detail="/tmp/a.txt -> /tmp/b.txt"
    ).aexists()


async def test_it_confirms_before_deleting_a_file_or_a_directory(operator_client, tenant, session):
    write(tenant, session, "/tmp/old/data.bin", b"12345")
    confirm = (
        await operator_client.get(url(session, "files/delete/"), {"path": "/tmp/old"})
    ).content.decode()
    assert "Delete directory?" in confirm and "Everything inside it" in confirm
    assert service_calls(tenant, "PUT", "/fs/delete") == []
    response = await operator_client.post(f"{url(session, 'files/delete/')}?path=/tmp/old")
    assert response.status_code == 302
    assert service_calls(tenant, "PUT", "/fs/delete_directory")[0]["status"] == 204
    assert await AuditLog.objects.filter(action="browser.fs.rmdir", detail="/tmp/old").aexists()


async def test_it_forbids_viewers_to_change_files(viewer_client, session):
    for path, data in (
        ("files/mkdir/", {"path": "/tmp/x"}),
        ("files/move/", {}),
        ("files/delete/?path=/tmp", {}),
    ):
        assert (await viewer_client.post(url(session, path), data)).status_code == 403


async def test_it_watches_a_directory_live_and_stops_the_watch(operator_client, tenant, session):
    response = await operator_client.post(
        url(session, "files/watch/"), {"path": "/home/kernel", "recursive": "on"}
    )
    assert response.status_code == 302
    watch_page = response["Location"]
    watch_id = watch_page.split("/files/watch/")[1].split("/")[0]
    page = (await operator_client.get(watch_page)).content.decode()
    assert f"files/watch/{watch_id}/stream/" in page and "Stop watching" in page
    write(tenant, session, "/home/kernel/fresh.txt")
    stream = await read_stream(
        operator_client, url(session, f"files/watch/{watch_id}/stream/"), until="fresh.txt"
    )
    assert "event: fs" in stream and "watch-type--CREATE" in stream and "/home/kernel/fresh.txt" in stream
    stopped = await operator_client.post(
        url(session, f"files/watch/{watch_id}/stop/"), {"path": "/home/kernel"}
    )
    assert stopped.status_code == 302
    assert service_calls(tenant, "DELETE", f"/fs/watch/{watch_id}")[0]["status"] == 204


# Computer ----------------------------------------------------------------------------------------


async def test_it_shows_the_screen_and_pointer_to_viewers_read_only(viewer_client, session):
    body = (await viewer_client.get(url(session, "computer/"))).content.decode()
    assert (
        "computer/screenshot.png?t=" in body and "Pointer at (640, 400)" in body and "1280\u00d7800" in body
    )
    assert "need the operator role" in body and "Run the batch" not in body
    assert (
        await viewer_client.post(url(session, "computer/click/"), {"click-x": 1, "click-y": 1})
    ).status_code == 403


async def test_it_proxies_the_screenshot_png(viewer_client, session):
    response = await viewer_client.get(url(session, "computer/screenshot.png"))
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert set(response["Cache-Control"].split(", ")) == {"no-store", "private"}
    assert response.content.startswith(b"\x89PNG\r\n\x1a\n")


async def test_it_clicks_and_types_and_audits_without_the_text(operator_client, tenant, session):
    response = await operator_client.post(
        url(session, "computer/click/"),
        {"click-x": 750, "click-y": 350, "click-button": "left", "click-num_clicks": 1},
        headers=hx("computer-pane"),
    )
    body = response.content.decode()
    assert "Left click at (750, 350)." in body and "Pointer at (750, 350)" in body
    assert "screen-changed" in response["HX-Trigger"]
    typed = await operator_client.post(
        url(session, "computer/type/"), {"type-text": "hunter2-password"}, headers=hx("computer-pane")
    )
    assert (
        "Typed 16 characters." in typed.content.decode() and "hunter2-password" not in typed.content.decode()
    )
    details = [e.detail async for e in AuditLog.objects.filter(action__startswith="browser.computer.")]
    assert "left click at (750, 350)" in details and "typed 16 characters" in details
    assert not any("hunter2" in d for d in details)
    kinds = [
        e["event"]["type"]
        for e in tenant.call(
            "GET",
            f"/browsers/{session}/telemetry/events",
            params={"since": "1h", "category": "interaction", "limit": 100},
        ).json()
    ]
    assert kinds[0] == "interaction_click" and kinds.count("interaction_key") == 16


async def test_it_checks_coordinates_against_the_viewport_before_sending(operator_client, tenant, session):
    body = (
        await operator_client.post(url(session, "computer/move/"), {"move-x": 1280, "move-y": 10})
    ).content.decode()
    assert "less than or equal to 1279" in body
    assert service_calls(tenant, "POST", "/computer/move_mouse") == []


async def test_it_runs_a_batch_in_order(operator_client, tenant, session):
    data = {
        "action-0-type": "move_mouse",
        "action-0-x": "10",
        "action-0-y": "20",
        "action-1-type": "click_mouse",
        "action-1-x": "30",
        "action-1-y": "40",
        "action-1-button": "right",
        "action-2-type": "press_key",
        "action-2-keys": "Ctrl+l Return",
        "action-3-type": "",
    }
    response = await operator_client.post(url(session, "computer/batch/"), data, headers=hx("computer-pane"))
    assert "Ran 3 actions in order." in response.content.decode()
    assert tenant.call("POST", f"/browsers/{session}/computer/get_mouse_position").json() == {
        "x": 30,
        "y": 40,
    }
    entry = await AuditLog.objects.aget(action="browser.computer.batch")
    assert entry.detail == "move_mouse, click_mouse, press_key"


@pytest.mark.parametrize("index", ["²", "1" * 5000])
async def test_it_ignores_batch_fields_whose_row_number_is_not_one(operator_client, tenant, session, index):
    """``str.isdigit`` says yes to ``²`` and to 5000 digits, which ``int()`` refuses: a 500, not a form."""
    data = {"action-0-type": "move_mouse", "action-0-x": "1", "action-0-y": "2", f"action-{index}-type": "x"}
    response = await operator_client.post(
        url(session, "computer/batch/"),
        urlencode(data),  # as a form posts it: multipart would refuse a 5000-character field name itself
        content_type="application/x-www-form-urlencoded",
        headers=hx("computer-pane"),
    )
    assert response.status_code == 200
    assert "Ran 1 action in order." in response.content.decode()


async def test_it_refuses_a_batch_over_the_limit_and_sends_nothing(operator_client, tenant, session):
    data = {}
    for i in range(25):
        data.update({f"action-{i}-type": "move_mouse", f"action-{i}-x": "1", f"action-{i}-y": str(i)})
    response = await operator_client.post(url(session, "computer/batch/"), data, headers=hx("computer-pane"))
    body = response.content.decode()
    assert response.status_code == 200
    assert "at most 20 actions" in body and "this one has 25" in body
    assert service_calls(tenant, "POST", "/computer/batch") == []
    assert not await AuditLog.objects.filter(action="browser.computer.batch").aexists()


async def test_it_marks_the_batch_row_that_the_service_stopped_at(operator_client, tenant, session):
    # The console checks what it can; a refusal it cannot foresee comes back from the service.
    tenant.fault(
        method="POST",
        path="/computer/batch$",
        status=400,
        body=json.dumps(
            {
                "code": "batch_action_failed",
                "message": "action 1 failed",
                "details": [{"code": "actions[1]", "message": "type_text.text: the field lost focus"}],
            }
        ),
    )
    data = {
        "action-0-type": "click_mouse",
        "action-0-x": "10",
        "action-0-y": "20",
        "action-0-button": "left",
        "action-1-type": "type_text",
        "action-1-text": "hello",
        "action-2-type": "press_key",
        "action-2-keys": "Return",
    }
    body = (
        await operator_client.post(url(session, "computer/batch/"), data, headers=hx("computer-pane"))
    ).content.decode()
    assert "Action 2 of 3 failed; the 1 before it ran and the rest did not." in body
    assert "The service stopped here: type_text.text: the field lost focus" in body
    assert body.count("batch-row--error") == 1
    assert await AuditLog.objects.filter(action="browser.computer.batch", outcome="error").aexists()


async def test_it_checks_batch_rows_before_sending(operator_client, tenant, session):
    data = {
        "action-0-type": "click_mouse",
        "action-0-x": "9999",
        "action-0-y": "",
        "action-1-type": "type_text",
    }
    body = (await operator_client.post(url(session, "computer/batch/"), data)).content.decode()
    assert (
        "x must be between 0 and 1279" in body and "y is required" in body and "Give the text to type" in body
    )
    assert service_calls(tenant, "POST", "/computer/batch") == []


async def test_it_adds_a_batch_row_without_javascript(operator_client, session):
    data = {"action-0-type": "move_mouse", "action-0-x": "1", "action-0-y": "2", "add_row": "1"}
    body = (await operator_client.post(url(session, "computer/batch/"), data)).content.decode()
    assert 'name="action-1-type"' in body and 'name="action-2-type"' not in body
    assert "dict_keys" not in body


async def test_it_explains_that_an_ended_session_cannot_be_driven(operator_client, tenant, session):
    tenant.call("DELETE", f"/browsers/{session}")
    body = (await operator_client.get(url(session, "computer/"))).content.decode()
    assert "no screen any more" in body and "Run the batch" not in body
    processes = (await operator_client.get(url(session, "processes/"))).content.decode()
    assert "nothing can run" in processes
