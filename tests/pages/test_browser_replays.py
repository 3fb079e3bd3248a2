"""The replays pane of a session page against the simulated engine (which cannot record): the pane and
its form, roles, bad input (nothing sent, nothing audited), the service's refusal shown and audited,
another organization's session, and the byte-range arithmetic of the video proxy.

Recording, stopping, downloading and the player run against real browsers in
test_browser_replays_chromium.py."""

import http.server
import threading

import pytest

from console.accounts.models import AuditLog
from console.browsers.panes import replays as pane
from tests.listener import serving

LONG = 259_200


@pytest.fixture
def session(tenant):
    return tenant.call("POST", "/browsers", json={"headless": True, "timeout_seconds": LONG}).json()[
        "session_id"
    ]


def url(session, path=""):
    return f"/o/acme/browsers/{session}/{path}"


def hx(target):
    return {"HX-Request": "true", "HX-Target": target}


def replay_calls(tenant):
    return [r for r in tenant.requests() if "/replays" in r["path"] and r["method"] == "POST"]


async def test_the_session_page_offers_the_replays_pane(viewer_client, session):
    page = (await viewer_client.get(url(session))).content.decode()
    assert f"/browsers/{session}/replays/" in page
    pane_html = (
        await viewer_client.get(url(session, "replays/"), headers=hx("replays-pane"))
    ).content.decode()
    assert pane_html.lstrip().startswith('<section id="replays-pane"')
    assert "No replays of this session yet." in pane_html
    assert "Start recording" not in pane_html and "recording needs the operator role" in pane_html


async def test_it_offers_operators_the_recording_form(operator_client, session):
    response = await operator_client.get(url(session, "replays/"))
    body = response.content.decode()
    assert response.status_code == 200 and "Start recording" in body
    assert f'action="/o/acme/browsers/{session}/replays/start/"' in body


async def test_it_refuses_a_viewer_and_sends_nothing(viewer_client, tenant, session):
    response = await viewer_client.post(url(session, "replays/start/"), {"framerate": 10})
    assert response.status_code == 403
    stop = await viewer_client.post(url(session, "replays/rep_x/stop/"))
    assert stop.status_code == 403
    assert replay_calls(tenant) == []
    assert not await AuditLog.objects.filter(action__startswith="browser.replay").aexists()


@pytest.mark.parametrize(
    ("form", "field", "message"),
    [
        ({"framerate": "30", "max_duration_in_seconds": "60"}, "framerate", "above that needs a GPU session"),
        ({"framerate": "0", "max_duration_in_seconds": "60"}, "framerate", "greater than or equal to 1"),
        ({"framerate": "ten", "max_duration_in_seconds": "60"}, "framerate", "Enter a whole number"),
        (
            {"framerate": "10", "max_duration_in_seconds": "3601"},
            "max_duration_in_seconds",
            "less than or equal",
        ),
        ({"framerate": "10"}, "max_duration_in_seconds", "This field is required"),
    ],
)
async def test_it_refuses_bad_settings_before_sending_anything(
    operator_client, tenant, session, form, field, message
):
    response = await operator_client.post(url(session, "replays/start/"), form, headers=hx("replays-pane"))
    body = response.content.decode()
    assert response.status_code == 200 and message in body
    assert f'id="id_{field}"' in body and "field--error" in body
    assert replay_calls(tenant) == []
    assert not await AuditLog.objects.filter(action="browser.replay.start").aexists()


async def test_it_shows_and_audits_the_services_refusal_to_record(operator_client, tenant, session):
    form = {"framerate": "10", "max_duration_in_seconds": "60"}
    response = await operator_client.post(url(session, "replays/start/"), form, headers=hx("replays-pane"))
    body = response.content.decode()
    assert response.status_code == 200 and "replays need a real browser" in body
    assert len(replay_calls(tenant)) == 1
    entry = await AuditLog.objects.aget(action="browser.replay.start")
    assert entry.outcome == "error" and entry.target_id == session
    assert "10 frames/s, at most 60 s" in entry.detail and "replays_unavailable" in entry.detail


async def test_it_answers_404_for_an_unknown_replay(operator_client, session):
    assert (await operator_client.get(url(session, "replays/rep_nope/"))).status_code == 404
    assert (await operator_client.get(url(session, "replays/rep_nope/video/"))).status_code == 404
    stop = await operator_client.post(url(session, "replays/rep_nope/stop/"))
    assert stop.status_code == 404
    entry = await AuditLog.objects.aget(action="browser.replay.stop")
    assert entry.outcome == "error" and entry.detail.startswith("rep_nope")


async def test_it_answers_404_for_another_organizations_session(outsider_client, operator_client, session):
    # The outsider is a member of Globex only: Acme's pages are not theirs...
    assert (await outsider_client.get(url(session, "replays/"))).status_code == 404
    # ...and through Globex, whose key reaches another tenant, Acme's session does not exist.
    other = f"/o/globex/browsers/{session}/replays/"
    assert (await outsider_client.get(other)).status_code == 404
    assert (await outsider_client.get(other + "rep_x/video/")).status_code == 404


async def test_it_sends_a_replay_id_of_dots_as_one_segment_never_a_step_up(operator_client, tenant, session):
    # httpx removes dot segments: ".." would have stopped /browsers/<id>/stop, "." listed the replays.
    for replay_id in ("..", "."):
        response = await operator_client.post(url(session, f"replays/{replay_id}/stop/"))
        assert response.status_code == 404
        video = await operator_client.get(url(session, f"replays/{replay_id}/video/"))
        assert video.status_code == 404
    paths = [r["path"] for r in tenant.requests() if r["path"].startswith(f"/browsers/{session}/")]
    assert paths and all("/replays/" in p for p in paths), paths


# The video proxy's range arithmetic, against a service that ignores Range --------------------------


@pytest.fixture
def whole_file_service(org):
    """A loopback service that answers a replay download with the whole file whatever the Range."""
    video = bytes(range(256)) * 40  # 10240 bytes

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.endswith("/replays/rep_1"):
                self.send_response(200)
                self.send_header("Content-Type", "video/mp4")
                self.send_header("Content-Length", str(len(video)))
                self.end_headers()
                self.wfile.write(video)
            else:
                self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"code": "not_found", "message": "no"}')

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    org.service_base_url = f"http://127.0.0.1:{server.server_address[1]}"
    org.save()
    yield video
    server.shutdown()
    server.server_close()


async def body_of(response) -> bytes:
    return b"".join([chunk async for chunk in response.streaming_content])


@pytest.mark.parametrize(
    ("asked", "first", "last"),
    [("bytes=100-199", 100, 199), ("bytes=10000-", 10000, 10239), ("bytes=-40", 10200, 10239)],
)
async def test_it_cuts_a_range_the_service_did_not(viewer_client, whole_file_service, asked, first, last):
    response = await viewer_client.get(url("bs_1", "replays/rep_1/video/"), headers={"Range": asked})
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes {first}-{last}/10240"
    assert response["Content-Length"] == str(last - first + 1)
    assert await body_of(response) == whole_file_service[first : last + 1]


async def test_it_serves_the_whole_file_without_a_usable_range(viewer_client, whole_file_service):
    for header in ({}, {"Range": "bytes=0-1,5-9"}, {"Range": "items=1-2"}):
        response = await viewer_client.get(url("bs_1", "replays/rep_1/video/"), headers=header)
        assert response.status_code == 200 and response["Accept-Ranges"] == "bytes"
        assert await body_of(response) == whole_file_service


async def test_it_answers_416_for_a_range_past_the_end(viewer_client, whole_file_service):
    response = await viewer_client.get(url("bs_1", "replays/rep_1/video/"), headers={"Range": "bytes=20000-"})
    assert response.status_code == 416 and response["Content-Range"] == "bytes */10240"


async def test_it_serves_the_whole_file_for_a_range_of_absurd_numbers(viewer_client, whole_file_service):
    # 5000 digits: more than Python reads as a number (it raised, a 500); 16 digits: no video is that long.
    for asked in ("bytes=" + "9" * 5000 + "-", "bytes=0-" + "9" * 5000, "bytes=-" + "1" * 16):
        response = await viewer_client.get(url("bs_1", "replays/rep_1/video/"), headers={"Range": asked})
        assert response.status_code == 200 and not response.has_header("Content-Range")
        assert await body_of(response) == whole_file_service


def test_it_reads_one_range_and_refuses_the_rest():
    class Request:
        def __init__(self, value):
            self.headers = {"Range": value}

    assert pane._asked_range(Request("bytes=5-9")) == (5, 9)
    assert pane._asked_range(Request("bytes=-3")) == (None, 3)
    assert pane._asked_range(Request("bytes=9-5")) is None
    assert pane._asked_range(Request("bytes=-")) is None
    assert pane._resolve((None, 0), 10) is None
    assert pane._resolve((3, 100), 10) == (3, 9)


# A service that lies about the range it sent ---------------------------------------------------------


@pytest.fixture
def lying_service(org):
    """A loopback service whose 206 answers do not match their bodies (``answers`` by replay id)."""
    video = bytes(range(256)) * 40
    answers = {
        # Says bytes 100-199, sends (and declares) the whole file.
        "rep_whole": ("bytes 100-199/10240", video, True),
        # A Content-Range that is no range at all.
        "rep_garbage": ("bytes lol", video[100:200], True),
        # Says 100-199 without a length, then keeps sending.
        "rep_endless": ("bytes 100-199/10240", video, False),
        # Another range than the one asked.
        "rep_elsewhere": ("bytes 0-99/10240", video[:100], True),
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self):
            content_range, body, declared = answers[self.path.rsplit("/", 1)[-1]]
            self.send_response(206)
            self.send_header("Content-Type", "video/mp4")
            self.send_header("Content-Range", content_range)
            if declared:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as org.service_base_url:
        org.save()
        yield video


@pytest.mark.parametrize("replay", ["rep_whole", "rep_garbage", "rep_elsewhere"])
async def test_it_refuses_a_range_answer_that_does_not_add_up(viewer_client, lying_service, replay):
    response = await viewer_client.get(
        url("bs_1", f"replays/{replay}/video/"), headers={"Range": "bytes=100-199"}
    )
    assert response.status_code == 502
    assert "video" not in response["Content-Type"] and not response.has_header("Content-Range")


async def test_it_sends_no_more_than_the_range_the_service_named(viewer_client, lying_service):
    response = await viewer_client.get(
        url("bs_1", "replays/rep_endless/video/"), headers={"Range": "bytes=100-199"}
    )
    assert response.status_code == 206 and response["Content-Range"] == "bytes 100-199/10240"
    assert response["Content-Length"] == "100"
    assert await body_of(response) == lying_service[:100]  # what the service sent, cut to its length


@pytest.fixture
def spoofing_service(org):
    """A loopback service whose "replays" are HTML pages under various content types."""
    page = b"<!doctype html><script>alert(document.cookie)</script>"
    kinds = {
        "rep_html": "text/html; charset=utf-8",
        "rep_svg": "image/svg+xml",
        "rep_octet": "application/octet-stream",
        "rep_none": "",
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            kind = kinds.get(self.path.rsplit("/", 1)[-1])
            self.send_response(200 if kind is not None else 404)
            if kind:
                self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    org.service_base_url = f"http://127.0.0.1:{server.server_address[1]}"
    org.save()
    yield page
    server.shutdown()
    server.server_close()


async def test_it_never_serves_an_upstream_page_as_a_page_of_its_own_origin(viewer_client, spoofing_service):
    for replay in ("rep_html", "rep_svg", "rep_none"):
        response = await viewer_client.get(url("bs_1", f"replays/{replay}/video/"))
        assert response.status_code >= 500, replay
        assert b"alert(document.cookie)" not in response.content
    # octet-stream is what the notes say a replay may be: passed on as a video, never sniffed into a page.
    for query, disposition in (("", "inline"), ("?download=1", "attachment")):
        response = await viewer_client.get(url("bs_1", f"replays/rep_octet/video/{query}"))
        assert response.status_code == 200 and response["Content-Type"] == "video/mp4"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Content-Disposition"] == f'{disposition}; filename="rep_octet.mp4"'
        # A replay's pictures stay off a shared disk cache, and nothing says otherwise beside the no-store.
        assert response["Cache-Control"] == "no-store, private"


@pytest.mark.parametrize("offsets", ["new", "same"])
async def test_it_reads_a_bounded_number_of_event_pages_for_the_player(viewer_client, org, tenant, offsets):
    """The player read the replay's events page after page while the service said there were more: empty
    pages with ``X-Has-More: true`` (a new offset each time, or the same one again) kept the page loading and
    the service answering for as long as it liked. It now stops at a repeated offset and after as many
    pages as its event cap needs."""
    import httpx

    sid = tenant.call("POST", "/browsers", json={"timeout_seconds": 600}).json()["session_id"]
    asked = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.endswith("/replays"):
                body = b'[{"replay_id": "rep_1", "started_at": "2026-01-01T00:00:00Z",'
                body += b' "finished_at": "2026-01-01T00:01:00Z"}]'
                headers = {}
            elif "/telemetry/events" in self.path:
                asked.append(self.path)
                body, headers = b"[]", {"X-Has-More": "true" if len(asked) < 1000 else "false"}
                headers["X-Next-Offset"] = str(len(asked) if offsets == "new" else 7)
            else:  # the session itself, from the sandbox
                auth = {"Authorization": f"Bearer {tenant.api_key}"}
                upstream = httpx.get(tenant.url + self.path, headers=auth)
                body, headers = upstream.content, {}
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as org.service_base_url:
        await org.asave()
        response = await viewer_client.get(f"/o/{org.slug}/browsers/{sid}/replays/rep_1/")
    assert response.status_code == 200
    assert len(asked) <= pane.MAX_EVENTS // pane.EVENTS_PAGE + 1, f"{len(asked)} pages asked for"
