"""Pages fed records of the wrong shape by a hostile service: each answers with the banner, never a 500.

An outside audit found each of these a 500 (the docs promise never one): a session's ``usage: 5`` (sessions
list and page), ``viewport: "x"`` (screen and computer panes), ``timeout_seconds: 1e300`` (OverflowError on
the session page), a file entry named ``{}`` (files pane), ``created_at`` as a number or an object
(overview: its charts and its sort), a pool named with 100 000 characters (httpx's InvalidURL on the pool's
page), an app whose ``actions`` is ``"y"``, and an app named ``""`` or ``a/b`` (NoReverseMatch on the apps
list). The records refuse them at the client's edge (console/service/records.py); every record kind is
fuzzed in tests/service/test_record_shapes.py, these are the pages the audit named.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import tracemalloc

import pytest

from tests.sandbox_fixtures import create_session as create


def assert_banner(response, field: str) -> None:
    body = response.content.decode()
    assert response.status_code == 503, body[:2000]
    assert "Service unavailable" in body and "Traceback" not in body
    assert "wrong shape" in body and field in body  # the banner says what was wrong, and where


SESSION_SHAPES = [
    ({"usage": 5}, "", "usage"),
    ({"usage": 5}, "{sid}/", "usage"),
    ({"usage": {"uptime_ms": 1e300}}, "{sid}/", "usage.uptime_ms"),
    ({"timeout_seconds": 1e300}, "{sid}/", "timeout_seconds"),
    ({"viewport": "x"}, "{sid}/screen/", "viewport"),
    ({"viewport": "x"}, "{sid}/computer/", "viewport"),
    ({"created_at": 1767225600}, "", "created_at"),
    ({"created_at": {"seconds": 1}}, "", "created_at"),
]


@pytest.mark.parametrize(("planted", "page", "field"), SESSION_SHAPES)
async def test_it_shows_a_session_of_the_wrong_shape_as_a_bad_answer(
    operator_client, quiet, planted, page, field
):
    sid = create(quiet, name="shaped")["session_id"]
    path = "^/browsers$" if page == "" else f"^/browsers/{sid}$"
    quiet.fault(method="GET", path=path, fields=planted, count=None)
    assert_banner(await operator_client.get(f"/o/acme/browsers/{page.format(sid=sid)}"), field)


@pytest.mark.parametrize("created_at", [1767225600, {"seconds": 1}])
async def test_it_shows_an_overview_of_sessions_with_dates_that_are_not_dates_as_a_bad_answer(
    viewer_client, quiet, created_at
):
    # The overview's cards, its 24 h charts and its sort by start all read created_at.
    create(quiet, name="dated")
    quiet.fault(method="GET", path="^/browsers$", fields={"created_at": created_at}, count=None)
    assert_banner(await viewer_client.get("/o/acme/"), "created_at")


async def test_it_shows_a_file_entry_whose_name_is_not_text_as_a_bad_answer(viewer_client, quiet):
    sid = create(quiet, name="files")["session_id"]
    quiet.fault(method="GET", path=f"^/browsers/{sid}/fs/list_files$", fields={"name": {}}, count=None)
    response = await viewer_client.get(f"/o/acme/browsers/{sid}/files/", {"path": "/home/kernel"})
    assert_banner(response, "name")


@pytest.fixture
def scripted(org):
    """The org's service is one the test scripts: ``answers[path]`` is the JSON answered to a GET of that path
    (lists with no next page), anything else 404."""
    from tests.listener import serving

    answers: dict[str, object] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = self.path.partition("?")[0]
            found = answers.get(path)
            status = 200 if found is not None else 404
            body = json.dumps(found if found is not None else {"code": "not_found", "message": path}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Request-Id", "req_scripted")
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as org.service_base_url:
        org.save()
        yield answers


async def test_it_shows_a_pool_named_past_any_url_as_a_bad_answer(viewer_client, scripted):
    # The pool's page looks its leases up by name (GET /browsers?query=<name>): 100 000 characters made httpx
    # refuse the URL (InvalidURL), uncaught.
    pool = {"id": "pool_1", "name": "p" * 100_000, "browser_pool_config": {"size": 1}}
    # The list page reads the org's limits beside the pools (at once): answered, so that the one bad answer
    # is the pool's (a 404 there raced the bad pool to the banner).
    # So are the capacity model's reads (the key's scope, the default project, invocations).
    scripted.update(
        {
            "/browser_pools/pool_1": pool,
            "/browser_pools": [pool],
            "/browsers": [],
            "/org/limits": {},
            "/auth/context": {},
            "/org/projects": [],
            "/invocations": [],
        }
    )
    assert_banner(await viewer_client.get("/o/acme/pools/pool_1/"), "name")
    assert_banner(await viewer_client.get("/o/acme/pools/"), "name")


APP = {"id": "app_1", "app_name": "shop", "version": "1", "deployment": "dep_1", "actions": [{"name": "run"}]}


@pytest.mark.parametrize(
    ("planted", "field"),
    [({"actions": "y"}, "actions"), ({"app_name": ""}, "app_name"), ({"app_name": "a/b"}, "app_name")],
)
async def test_it_shows_an_app_of_the_wrong_shape_as_a_bad_answer(viewer_client, scripted, planted, field):
    scripted["/apps"] = [{**APP, **planted}]
    assert_banner(await viewer_client.get("/o/acme/apps/"), field)


async def test_it_still_lists_apps_of_the_right_shape(viewer_client, scripted):
    scripted["/apps"] = [APP]
    body = (await viewer_client.get("/o/acme/apps/")).content.decode()
    assert re.search(r'href="/o/acme/apps/shop/"', body) and "<code>run</code>" in body


async def test_it_answers_a_list_page_the_service_makes_63_mib_long_with_the_banner(viewer_client, org):
    # The audit's answer: 63 MiB of [{},{},…] (under the 64 MiB any answer may be) took the console from 146
    # to 1,724 MiB for this one page. The page now reads 4 MiB of it at most (SERVICE_LIST_MAX_BYTES).
    from tests.listener import serving

    sent, done = [], threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # the body ends when the connection does: no length to refuse it by

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            chunk, total = b"{}," * 349_525, 0
            try:
                self.wfile.write(b"[")
                while total < 63 * 1024 * 1024:
                    self.wfile.write(chunk)
                    total += len(chunk)
                self.wfile.write(b"{}]")
            except OSError:
                pass  # the console hung up: what it should do
            finally:
                sent.append(total)
                done.set()

    with serving(Handler) as org.service_base_url:
        await org.asave()
        tracemalloc.start()
        try:
            response = await viewer_client.get("/o/acme/browsers/")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 32 * 1024 * 1024, f"the page took {peak >> 20} MiB"
    assert done.wait(30) and sent[0] < 16 * 1024 * 1024, f"the console read {sent[0] >> 20} MiB"
    body = response.content.decode()
    assert response.status_code == 503 and "larger than the console reads for it (4 MiB)" in body
