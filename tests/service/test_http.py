"""The one request function: headers, errors by status, safe retries, timeouts (real sandbox)."""

import asyncio
import io
import json
import ssl

import httpx
import pytest

from console.service import (
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    RateLimited,
    Service,
    ServiceError,
    Unauthorized,
    Unavailable,
    errors,
    projects,
    uploads,
)
from console.service import http as service_http
from console.service.records import Project
from tests.listener import serving
from tests.sandbox_fixtures import free_port


def assert_key_hidden(error: ServiceError, key: str) -> None:
    assert key not in str(error)
    assert key not in repr(error)
    assert key not in error.message


def seen(tenant, method: str, path: str) -> int:
    return sum(1 for r in tenant.requests() if r["method"] == method and r["path"] == path)


async def test_it_returns_parsed_json_and_the_request_id(service):
    reply = await service_http.request(service, "GET", "/org/projects", params={"limit": 5, "query": None})
    assert isinstance(reply.data, list)
    assert reply.status == 200
    assert reply.request_id and reply.request_id.startswith("req_")
    assert reply.headers["x-has-more"] in ("true", "false")


async def test_it_hides_the_key_in_the_service_repr(service):
    assert service.api_key not in repr(service)
    assert service.with_project("proj_1").project == "proj_1"
    assert service.with_project("proj_1").api_key == service.api_key


async def test_it_maps_400_with_field_details_to_invalid(service):
    with pytest.raises(Invalid) as caught:
        await projects.create_project(service, "a/b")
    error = caught.value
    assert error.status == 400
    assert error.code == "invalid_request"
    assert "name" in error.field_errors
    assert "/" in error.field_errors["name"][0]
    assert error.request_id.startswith("req_")
    assert_key_hidden(error, service.api_key)


async def test_it_maps_422_to_invalid_and_generic_details_to_all(service):
    error = Invalid("bad", status=422, details=[{"code": "invalid", "message": "broken"}, {"code": "size"}])
    assert error.field_errors == {"__all__": ["broken"], "size": ["size"]}


async def test_it_maps_401_for_a_missing_or_unknown_key(tenant):
    with pytest.raises(Unauthorized) as missing:
        await projects.list_projects(Service(base_url=tenant.url, api_key="", allow_private=True))
    assert missing.value.status == 401
    assert "missing" in missing.value.message
    secret = "sk-not-a-real-key-0123456789"
    with pytest.raises(Unauthorized) as unknown:
        await projects.get_auth_context(Service(base_url=tenant.url, api_key=secret, allow_private=True))
    assert unknown.value.code == "unauthorized"
    assert_key_hidden(unknown.value, secret)


async def test_it_maps_403_404_409_410(service, tenant):
    tenant.fault(method="GET", path="^/org/limits$", status=403, code="insufficient_plan")
    with pytest.raises(Forbidden) as forbidden:
        await projects.get_org_limits(service)
    assert forbidden.value.code == "insufficient_plan"

    with pytest.raises(NotFound) as missing:
        await projects.get_project(service, "no-such-project")
    assert missing.value.code == "not_found"
    assert missing.value.status == 404

    await projects.create_project(service, "twin")
    with pytest.raises(Conflict) as conflict:
        await projects.create_project(service, "twin")
    assert conflict.value.code == "project_name_taken"
    assert seen(tenant, "POST", "/org/projects") == 2  # a 409 is final: never retried

    project = await projects.create_project(service, "old-route")
    tenant.set_clock("2026-12-01T00:00:00Z")
    with pytest.raises(Gone) as gone:
        await service_http.request(service, "GET", f"/projects/{project.id}/limits")
    assert gone.value.status == 410
    assert gone.value.code == "route_removed"


async def test_it_retries_a_get_once_after_a_503(service, tenant):
    tenant.fault(method="GET", path="^/org/projects$", status=503, count=1)
    page = await projects.list_projects(service)
    assert page.items
    assert seen(tenant, "GET", "/org/projects") == 2


async def test_it_gives_up_after_two_retries(service, tenant):
    tenant.fault(method="GET", path="^/org/projects$", status=503, count=None)
    with pytest.raises(Unavailable) as caught:
        await projects.list_projects(service)
    assert caught.value.status == 503
    assert seen(tenant, "GET", "/org/projects") == 3


async def test_it_never_retries_a_post_unless_told(service, tenant):
    tenant.fault(method="POST", path="^/org/projects$", status=503, count=1)
    with pytest.raises(Unavailable):
        await projects.create_project(service, "once")
    assert seen(tenant, "POST", "/org/projects") == 1

    tenant.fault(method="POST", path="^/org/projects$", status=503, count=1)
    reply = await service_http.request(service, "POST", "/org/projects", json={"name": "twice"}, retry=True)
    assert reply.data["name"] == "twice"
    assert seen(tenant, "POST", "/org/projects") == 3


async def test_it_does_not_retry_a_500(service, tenant):
    tenant.fault(method="GET", path="^/org/limits$", status=500, code="internal_error", count=1)
    with pytest.raises(Unavailable) as caught:
        await projects.get_org_limits(service)
    assert caught.value.status == 500
    assert caught.value.code == "internal_error"
    assert seen(tenant, "GET", "/org/limits") == 1


async def test_it_honours_a_short_retry_after(service, tenant):
    tenant.fault(method="GET", path="^/auth/context$", status=429, retry_after=1, count=1)
    context = await projects.get_auth_context(service)
    assert context.organization_id
    assert seen(tenant, "GET", "/auth/context") == 2


async def test_it_gives_up_at_once_on_a_long_retry_after(service, tenant):
    tenant.fault(method="GET", path="^/auth/context$", status=429, retry_after=30, count=1)
    with pytest.raises(RateLimited) as caught:
        await projects.get_auth_context(service)
    assert caught.value.retry_after == 30
    assert caught.value.status == 429
    assert seen(tenant, "GET", "/auth/context") == 1


async def test_it_reads_a_non_json_error_body(service, tenant):
    tenant.fault(
        method="GET", path="^/org/limits$", status=502, body="upstream exploded " + "x" * 500, count=3
    )
    with pytest.raises(Unavailable) as caught:
        await projects.get_org_limits(service)
    message = caught.value.message
    assert message.startswith("HTTP 502 from the service: upstream exploded")
    assert len(message) < 260
    assert caught.value.request_id


async def test_it_turns_a_slow_answer_into_unavailable(service, tenant):
    tenant.fault(method="GET", path="^/org/limits$", latency_ms=1000, count=1)
    with pytest.raises(Unavailable) as caught:
        await service_http.request(service, "GET", "/org/limits", timeout=0.2)
    assert caught.value.status is None
    assert "did not answer within 0.2 s" in caught.value.message
    assert_key_hidden(caught.value, service.api_key)


async def test_it_explains_a_refused_connection():
    url = f"http://127.0.0.1:{free_port()}"
    secret = "sk-refused-0123456789"
    with pytest.raises(Unavailable) as caught:
        await projects.get_auth_context(Service(base_url=url, api_key=secret, allow_private=True))
    assert caught.value.status is None
    assert f"could not connect to {url}: connection refused" == caught.value.message
    assert_key_hidden(caught.value, secret)


async def test_it_shares_one_client_per_event_loop(service):
    first = service_http._client()
    await projects.get_org_limits(service)
    assert service_http._client() is first
    assert "Authorization" not in first.headers
    assert first.headers["User-Agent"] == "operator-console/0.1"


async def test_it_gives_each_event_loop_its_own_client(service):
    ours = service_http._client()

    def other_loop():
        async def run():
            await projects.get_org_limits(service)
            client = service_http._client()
            await service_http.aclose_clients()
            return client

        return asyncio.run(run())

    theirs = await asyncio.to_thread(other_loop)
    assert theirs is not ours
    assert not ours.is_closed


async def test_it_loads_the_ca_bundle_once_for_every_event_loop(service):
    """Every event loop's client (each alert round, usage sample and webhook delivery of the worker runs in a
    loop of its own) verifies with the one TLS context of the process: making one loads the whole CA bundle,
    about 25 ms of a core. It is httpx's default: the same certificates, the certificate and the host
    name checked."""
    ours = service_http._client()

    def other_loop():
        async def run():
            client = service_http._client()
            await service_http.aclose_clients()
            return client

        return asyncio.run(run())

    theirs = await asyncio.to_thread(other_loop)
    context = ours._transport._pool._ssl_context
    assert theirs._transport._pool._ssl_context is context
    assert service_http._transport()._pool._ssl_context is context  # post_outside's (a webhook's)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats() == httpx.create_ssl_context().cert_store_stats()
    assert context.cert_store_stats()["x509_ca"] > 100


def test_records_tolerate_unknown_and_absent_fields():
    project = Project.from_json({"id": "proj_1", "created_at": "2026-01-02T03:04:05.123456789Z", "new": 1})
    assert project.name is None
    assert project.extra == {"new": 1}
    assert project.created_at.tzinfo is not None
    assert project.created_at.microsecond == 123456
    assert Project.list_from_json([{"id": "a"}]) == [Project(id="a")]
    assert Project.list_from_json(None) == []


@pytest.mark.parametrize(
    "data", [[{"id": "a"}, "junk"], {"id": "a"}, "text", 3, [{"name": "no id"}], [{"id": None}]]
)
def test_records_refuse_a_list_of_the_wrong_shape(data):
    with pytest.raises(errors.BadResponse, match="wrong shape"):
        Project.list_from_json(data)


@pytest.mark.parametrize("data", [[], "text", 3, {}, {"name": "no id"}, {"id": ""}])
def test_records_refuse_an_object_of_the_wrong_shape(data):
    with pytest.raises(errors.BadResponse, match="wrong shape"):
        Project.from_json(data)


def test_it_reads_retry_hints_in_every_form():
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    assert service_http._retry_after({"retry-after-ms": "1500"}) == 1.5
    assert service_http._retry_after({"retry-after": "3"}) == 3.0
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    assert 100 < service_http._retry_after({"retry-after": later}) <= 120
    assert service_http._retry_after({"retry-after": "soon"}) is None
    assert service_http._retry_after({}) is None


async def test_it_logs_calls_without_the_key(service, tenant, caplog):
    caplog.set_level("DEBUG", logger="console.service")
    tenant.fault(method="GET", path="^/org/limits$", status=503, count=1)
    await projects.get_org_limits(service)
    lines = [r.getMessage() for r in caplog.records if r.name == "console.service"]
    assert any("GET /org/limits -> 503" in line for line in lines)
    assert any("GET /org/limits -> 200" in line for line in lines)
    assert all(service.api_key not in line for line in lines)


class CountingFile(io.BytesIO):
    """A file that records the size of every read, to show the upload is streamed in chunks."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self.reads: list[int] = []
        self.name = "big.zip"

    def read(self, size=-1):
        chunk = super().read(size)
        self.reads.append(len(chunk))
        return chunk


async def test_it_streams_a_file_upload_in_chunks(service):
    # No upload route is needed to see how the body is produced: the sandbox rejects it as not JSON.
    source = CountingFile(b"z" * (1024 * 1024))
    with pytest.raises(Invalid) as caught:
        await uploads.upload_file(service, "/org/projects", field="file", source=source, data={"name": "x"})
    assert caught.value.code == "invalid_json"
    assert sum(source.reads) == 1024 * 1024
    assert max(source.reads) <= 64 * 1024


async def test_it_streams_an_async_source_as_multipart(service):
    async def chunks():
        for _ in range(4):
            yield b"y" * 1000

    with pytest.raises(Invalid) as caught:
        await uploads.upload_file(service, "/org/projects", field="file", source=chunks(), filename="a.zip")
    assert caught.value.code == "invalid_json"


async def test_it_gives_up_on_a_read_after_the_service_read_timeout(service, tenant, settings):
    settings.SERVICE_READ_TIMEOUT = 0.3
    tenant.fault(method="GET", path="^/org/limits$", latency_ms=1500, count=1)
    with pytest.raises(Unavailable) as caught:
        await service_http.request(service, "GET", "/org/limits")
    assert "did not answer within 0.3 s" in caught.value.message


async def test_it_gives_a_change_longer_than_the_read_timeout(service, tenant, settings):
    settings.SERVICE_READ_TIMEOUT = 0.3
    tenant.fault(method="POST", path="^/org/projects$", latency_ms=800, count=1)
    reply = await service_http.request(service, "POST", "/org/projects", json={"name": "slow-but-fine"})
    assert reply.data["name"] == "slow-but-fine"


async def test_it_refuses_an_answer_larger_than_it_reads(service, tenant, settings):
    settings.SERVICE_LIST_MAX_BYTES = 4096  # a list's bound (another JSON answer: SERVICE_JSON_MAX_BYTES)
    big = '["' + "x" * 8000 + '"]'
    tenant.control("POST", "faults", {"method": "GET", "path": "^/org/projects$", "status": 200, "body": big})
    with pytest.raises(errors.BadResponse) as caught:
        await projects.list_projects(service)
    assert "larger than" in caught.value.message and "x" * 100 not in caught.value.message
    small = await projects.list_projects(service)  # the fault was used once: a normal answer fits
    assert isinstance(small.items, list)


@pytest.fixture
def endless_event():
    """A loopback service whose event stream sends one event that never ends (no blank line)."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b"event: message\ndata: {}\n\n")  # one normal event first
            try:
                for _ in range(2000):
                    self.wfile.write(b"data: " + b"x" * 1000 + b"\n")
            except OSError:
                pass  # the client gave up: what it should do

    with serving(Handler) as url:
        yield Service(base_url=url, api_key="k", allow_private=True)


async def test_it_drops_a_stream_whose_event_grows_past_the_bound(endless_event, monkeypatch):
    monkeypatch.setattr(service_http, "MAX_EVENT", 64 * 1024)
    got = []
    with pytest.raises(errors.StreamDropped) as caught:
        async with service_http.sse(endless_event, "/stream") as frames:
            async for frame in frames:
                got.append(frame.data)
    assert got == ["{}"] and "larger than" in caught.value.message


@pytest.fixture
def hangs_up_once():
    """A loopback service that closes the first connection without answering (a kept-alive connection
    closed as a request goes out), then answers every request."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    seen = []

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                seen.append(1)
                if len(seen) > 1:
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]"
                    )

    threading.Thread(target=serve, daemon=True).start()
    svc = Service(base_url=f"http://127.0.0.1:{listener.getsockname()[1]}", api_key="k", allow_private=True)
    yield svc, seen
    listener.close()


async def test_it_sends_a_read_again_when_the_server_hung_up_without_answering(hangs_up_once):
    svc, seen = hangs_up_once
    reply = await service_http.request(svc, "GET", "/projects")
    assert reply.status == 200 and reply.content == b"[]"
    assert len(seen) == 2


async def test_it_never_sends_a_change_again_when_the_server_hung_up(hangs_up_once):
    svc, seen = hangs_up_once
    with pytest.raises(errors.NoAnswer):
        await service_http.request(svc, "POST", "/projects", json={"name": "x"})
    assert len(seen) == 1


def test_it_refuses_a_record_whose_id_no_link_can_hold():
    from console.service.browsers import Session
    from console.service.errors import BadResponse

    for planted in ("a/b", "..", "."):
        with pytest.raises(BadResponse, match="no link can hold"):
            Session.from_json({"session_id": planted})
    assert Session.from_json({"session_id": "bs_1.v2:x-y"}).session_id == "bs_1.v2:x-y"


def test_json_decodes_by_the_c_parser_alone_within_the_bounds_and_is_refused_past_them():
    """A small body with no more brackets than the depth bound cannot pass either bound: it is parsed by
    json.loads alone (every event of a live stream); any other is counted and measured as before."""
    for body in ('{"seq": 1, "event": {"data": {"text": "[[[["}}}', "[" * 64 + "]" * 64, '"x"', "[]"):
        assert service_http.decode_json(body) == json.loads(body)
        assert service_http.decode_json(body.encode()) == json.loads(body)
    with pytest.raises(service_http.TooMuchJSON, match="deeper than 64"):
        service_http.decode_json("[" * 65 + "]" * 65)
    with pytest.raises(service_http.TooMuchJSON, match="deeper than 64"):
        service_http.decode_json('{"a": ' * 65 + "1" + "}" * 65)
    with pytest.raises(ValueError):
        service_http.decode_json('{"a": 1')
    many = "[" + ",".join(["{}"] * 300) + "]"  # past the fast path's brackets, within the bounds
    assert service_http.decode_json(many) == json.loads(many)
