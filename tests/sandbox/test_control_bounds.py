"""The control interface cannot stall or grow the sandbox (docs/security.md, "The sandbox").

Developers share one sandbox: one tenant freezing its event loop stops every tenant. A tenant key (or no
key, for tenant creation) must not buy a pattern that backtracks for minutes, a fault or setting without
bound, a clock past what ``datetime`` holds, or tenants without end.
"""

import json

import httpx
import pytest

from console.sandbox.control import MAX_CONTROL_BODY, MAX_FAULTS
from console.sandbox.core.http import REQUEST_TEXT
from console.sandbox.core.state import MATCH_BUDGET, MATCH_TIMEOUT
from console.sandbox.resources.cdp_proxy import MAX_EVENT_BYTES, MAX_WAITING, Waiting, _refusal
from console.sandbox.resources.telemetry import MAX_BURST, MAX_EMIT_DATA, MAX_GENERATE
from tests.sandbox_fixtures import new_tenant, running_sandbox

# 2**n ways to split n a's for Python's re, which tries them all before "!" fails the match: about a
# minute for 30 on this machine (0.24 s for 22), with no way to stop it.
SLOW_PATTERN = r"^/browsers/(?:a|a)*$"
SLOW_PATH = "/browsers/" + "a" * 30 + "!"


def post_raw(tenant, path: str, text: str) -> httpx.Response:
    """A body httpx's json= would not send (NaN, Infinity: Python's json reads them)."""
    return httpx.post(
        f"{tenant.url}/_sandbox/{path}",
        content=text,
        headers={"Authorization": f"Bearer {tenant.api_key}", "Content-Type": "application/json"},
        timeout=10,
    )


def post(tenant, path: str, body) -> httpx.Response:
    return post_raw(tenant, path, json.dumps(body))


def refused_field(response: httpx.Response) -> set[str]:
    """The fields a 400 names (the service's error body, one detail per field)."""
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "invalid_request" and body["message"]
    return {detail["code"] for detail in body["details"]}


# Fault paths ---------------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_it_bounds_a_fault_path_that_backtracks_without_end():
    # Its own sandbox: before the bound, this froze the sandbox for a minute (every tenant of it).
    with running_sandbox(SANDBOX_ENGINE="simulated") as url:
        attacker, bystander = new_tenant(url), new_tenant(url)
        attacker.fault(method="GET", path=SLOW_PATTERN, status=500, count=None)
        response = attacker.call("GET", SLOW_PATH, timeout=10)
        # Too slow to decide: the fault did not match (the session is simply not found)...
        assert response.status_code == 404, response.text
        assert response.json()["code"] == "not_found"
        assert bystander.call("GET", "/browsers", timeout=10).status_code == 200
        # ...and it was dropped: the next fault is the tenant's only one.
        assert post(attacker, "faults", {"path": "^/never$"}).json() == {"faults": 1}
        # A pattern fast on a path still works as before.
        attacker.control("DELETE", "faults")
        attacker.fault(method="GET", path=r"^/browsers/a+!$", status=503, count=1)
        assert attacker.call("GET", SLOW_PATH, timeout=10).status_code == 503


@pytest.mark.timeout(120)
def test_it_bounds_the_time_all_of_a_tenants_fault_paths_take_on_one_request():
    # A hundred slow patterns cost one request MATCH_BUDGET, not a hundred times MATCH_TIMEOUT: the
    # request drops the few it had time to try in full and leaves the rest for later.
    with running_sandbox(SANDBOX_ENGINE="simulated") as url:
        attacker = new_tenant(url)
        for number in range(MAX_FAULTS):
            attacker.fault(method="GET", path=SLOW_PATTERN + "|^/" + str(number), status=500, count=None)
        assert attacker.call("GET", SLOW_PATH, timeout=10).status_code == 404
        response = post(attacker, "faults", {"path": "^/never$"})  # room again: some were dropped
        assert response.status_code == 201, response.text
        kept = response.json()["faults"] - 1
        at_most_dropped = int(MATCH_BUDGET / MATCH_TIMEOUT) + 1
        assert MAX_FAULTS - at_most_dropped <= kept < MAX_FAULTS


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(?:(?:a{1000}){1000}){1000}", "expand"),  # compiled unrolled: gigabytes
        ("(?:a{200}){100}", "expand"),
        ("/x" * 501, "characters"),
        ("(" * 500 + ")" * 500, ""),
        ("[unclosed", ""),
        (5, "string"),
    ],
)
def test_it_refuses_a_fault_path_it_cannot_bound(tenant, pattern, why):
    response = post(tenant, "faults", {"path": pattern, "status": 500})
    assert refused_field(response) == {"path"}
    assert why in response.json()["details"][0]["message"]


def test_it_still_takes_the_patterns_tests_use(tenant):
    for pattern in (
        "^/browser_pools/abc$",
        "/telemetry/stream",
        ".*",
        "^/proxies/",
        r"(?P<n>x)(?P=n)",
        "a{500}",
    ):
        # PUT: a fault applies to the control interface's own routes too, and the next call is a POST.
        fault = {"method": "PUT", "path": pattern, "status": 500}
        assert post(tenant, "faults", fault).status_code == 201, pattern
    tenant.control("DELETE", "faults")
    tenant.fault(method="get", path="^/org/projects$", status=418, count=1)
    assert tenant.call("GET", "/org/projects").status_code == 418
    assert tenant.call("GET", "/org/projects").status_code == 200


# Other fault fields --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "raw"),
    [
        ("latency_ms", "1e12"),
        ("latency_ms", "-1"),
        ("latency_ms", '"soon"'),
        ("delay_response_ms", "100000000"),
        ("stall_seconds", "1e308"),
        ("stall_seconds", "NaN"),
        ("stall_seconds", "Infinity"),
        ("stall_seconds", "1" + "0" * 400),  # no float holds it
        ("stall_after_chunks", "0"),
        ("stall_after_chunks", "1e9"),
        ("drop_after_events", "-1"),
        ("drop_after_events", '"3"'),
        ("count", "0"),
        ("count", "true"),
        ("count", "10000000000"),
        ("status", "99"),
        ("status", "600"),
        ("status", '"500"'),
        ("retry_after", "-1"),
        ("retry_after", "1e300"),
        ("retry_after", "NaN"),
        ("retry_after", "1" + "0" * 400),
        ("method", '"GE T"'),
        ("method", "5"),
        ("code", json.dumps("x" * 101)),
        ("message", json.dumps("x" * 5000)),
        ("body", json.dumps("x" * (64 * 1024 + 1))),
        ("body", '{"a": 1}'),
        ("fields", "[1]"),
        ("fields", json.dumps({"x": "y" * 20_000})),
        ("drop_response", '"yes"'),
        ("latncy_ms", "10"),  # a misspelt field is not silently a fault without latency
    ],
)
def test_it_refuses_a_fault_field_out_of_bounds(tenant, field, raw):
    response = post_raw(tenant, "faults", f'{{"path": "^/org/projects$", "{field}": {raw}}}')
    assert refused_field(response) == {field}
    # Nothing was kept: the projects answer as usual.
    assert tenant.call("GET", "/org/projects").status_code == 200


def test_it_names_every_bad_field_at_once(tenant):
    response = post(tenant, "faults", {"path": "(", "status": 1, "latency_ms": -5, "count": 0})
    assert refused_field(response) == {"path", "status", "latency_ms", "count"}


def test_it_takes_the_fields_at_their_bounds(tenant):
    body = {
        "method": "*",
        "path": "^/never$",
        "status": 599,
        "retry_after": 86_400,
        "latency_ms": 120_000,
        "delay_response_ms": 120_000,
        "stall_seconds": 120,
        "stall_after_chunks": 1,
        "drop_after_events": 0,
        "count": None,
        "code": "c" * 100,
        "message": "m" * 2000,
        "body": "b" * 64 * 1024,
        "fields": {"x": 1},
        "drop_response": False,
    }
    assert post(tenant, "faults", body).status_code == 201


def test_it_holds_a_bounded_number_of_faults(tenant):
    for number in range(1, MAX_FAULTS + 1):
        assert post(tenant, "faults", {"path": f"^/never/{number}$"}).json() == {"faults": number}
    response = post(tenant, "faults", {"path": "^/one/more$"})
    assert response.status_code == 429, response.text
    assert response.json()["code"] == "fault_limit_reached"
    tenant.control("DELETE", "faults")
    assert post(tenant, "faults", {"path": "^/one/more$"}).json() == {"faults": 1}


# The clock -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw", ["1e308", "-1e308", "NaN", "Infinity", "-Infinity", "true", '"60"', "4e9", "1" + "0" * 400]
)
def test_it_refuses_a_clock_step_it_cannot_take(tenant, raw):
    before = tenant.control("GET", "clock").json()["now"]
    response = post_raw(tenant, "clock", f'{{"advance_seconds": {raw}}}')
    assert refused_field(response) == {"advance_seconds"}
    assert tenant.control("GET", "clock").json()["now"][:10] == before[:10]


@pytest.mark.parametrize("moment", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2300-01-01T00:00:00Z"])
def test_it_refuses_a_clock_set_too_far(tenant, moment):
    assert refused_field(post(tenant, "clock", {"set": moment})) == {"set"}


def test_it_bounds_the_clock_over_many_steps_and_every_read_still_answers(tenant):
    year = 365 * 86_400
    tenant.advance(60 * year)
    response = post(tenant, "clock", {"advance_seconds": 60 * year})  # 120 years from now in all
    assert refused_field(response) == {"advance_seconds"}
    tenant.advance(39 * year)  # 99 years: the edge still works
    pool = tenant.call("POST", "/browser_pools", json={"name": "far", "size": 2})
    assert pool.status_code == 201, pool.text
    tenant.advance(3600)
    for path in (
        "/browser_pools",
        "/browsers",
        "/org/api_keys",
        "/invocations",
        f"/browser_pools/{pool.json()['id']}",
    ):
        assert tenant.call("GET", path).status_code == 200, path
    tenant.set_clock("1950-06-01T00:00:00Z")
    for path in ("/browser_pools", "/browsers", "/org/api_keys"):
        assert tenant.call("GET", path).status_code == 200, path


# Tenants ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_it_creates_a_bounded_number_of_tenants():
    limits = {"SANDBOX_MAX_TENANTS": "4", "SANDBOX_MAX_DEMO_TENANTS": "2"}
    with running_sandbox(SANDBOX_ENGINE="simulated", **limits) as url:
        new_tenant(url)  # with the demo key's tenant: 2
        as_json = {"Content-Type": "application/json"}
        assert httpx.post(f"{url}/_sandbox/tenants", content="[]", headers=as_json).status_code == 400
        demo = httpx.post(f"{url}/_sandbox/tenants", json={"demo": "yes"})
        assert demo.status_code == 400 and demo.json()["details"][0]["code"] == "demo"
        new_tenant(url, demo=True)  # 3, the second with demo data
        refused = httpx.post(f"{url}/_sandbox/tenants", json={"demo": True})
        assert refused.status_code == 429, refused.text
        assert refused.json()["code"] == "demo_tenant_limit_reached"
        new_tenant(url)  # 4: without demo data there was room
        refused = httpx.post(f"{url}/_sandbox/tenants", json={})
        assert refused.status_code == 429, refused.text
        assert refused.json()["code"] == "tenant_limit_reached"
        assert "api_key" not in refused.json()
        assert httpx.get(f"{url}/_sandbox/health").json()["tenants"] == 4


def test_it_keeps_a_bounded_record_of_each_request(tenant):
    tenant.call("GET", "/org/projects", params={"q": "x" * 10_000})
    tenant.call("GET", "/browsers/" + "b" * 10_000)
    seen = tenant.requests()[-2:]
    assert len(seen[0]["query"]) == REQUEST_TEXT and seen[0]["query"].startswith("q=xxx")
    assert len(seen[1]["path"]) == REQUEST_TEXT and seen[1]["path"].startswith("/browsers/bbb")


@pytest.mark.parametrize("path", ["tenants", "faults", "clock", "settings"])
def test_it_refuses_a_control_body_past_its_bound(tenant, path):
    # Tenant creation needs no key: its body was read and parsed whatever its size.
    body = json.dumps({"x": "y" * MAX_CONTROL_BODY})
    response = post_raw(tenant, path, body)
    assert response.status_code == 413, response.text
    assert response.json()["code"] == "request_too_large"

    def chunks():  # no Content-Length: counted as it comes
        yield body[: len(body) // 2].encode()
        yield body[len(body) // 2 :].encode()

    response = httpx.post(
        f"{tenant.url}/_sandbox/{path}",
        content=chunks(),
        headers={"Authorization": f"Bearer {tenant.api_key}", "Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 413, response.text


# Settings, streams, bursts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "raw"),
    [
        ("telemetry_retention", "1000000000000"),
        ("telemetry_retention", "0"),
        ("telemetry_rate_per_second", "1e9"),
        ("telemetry_rate_per_second", "NaN"),
        ("telemetry_rate_per_second", "-" + "9" * 400),
        ("keepalive_seconds", "NaN"),
        ("keepalive_seconds", "0"),
        ("keepalive_seconds", "1e12"),
        ("keepalive_seconds", "9" * 400),
        ("exec_enabled", '"no"'),
        ("_audit_log", "[]"),  # the audit log lives among the settings: a list would grow without end
        ("org_limits", '"none"'),
        ("anything", '"x"'),
    ],
)
def test_it_refuses_a_setting_it_does_not_know_or_cannot_bound(tenant, field, raw):
    response = post_raw(tenant, "settings", f'{{"{field}": {raw}}}')
    assert refused_field(response) == {field}
    assert tenant.call("GET", "/org/projects").status_code == 200


def test_it_takes_the_known_settings(tenant):
    body = {
        "keepalive_seconds": 0.5,
        "telemetry_rate_per_second": 0,
        "telemetry_retention": 1_000_000,
        "exec_enabled": False,
    }
    assert post(tenant, "settings", body).json() == {"keepalive_seconds": 0.5}


@pytest.mark.parametrize(
    "query", ["count=many", "count=1000000001", "count=-1", "interval=nan", "interval=-1"]
)
def test_it_refuses_a_test_stream_out_of_bounds(tenant, query):
    response = tenant.call("GET", f"/_sandbox/test_stream?{query}", timeout=10)
    assert refused_field(response) <= {"count", "interval"}


def telemetry_session(tenant) -> str:
    body = {
        "timeout_seconds": 259_200,
        "telemetry": {"enabled": True, "browser": {"console": {"enabled": True}}},
    }
    response = tenant.call("POST", "/browsers", json=body)
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


def test_it_bounds_a_telemetry_burst(tenant):
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0, "telemetry_retention": 100})
    sid = telemetry_session(tenant)
    response = post(tenant, "telemetry/burst", {"session_id": sid, "count": MAX_BURST + 1})
    assert refused_field(response) == {"count"}
    burst = post(tenant, "telemetry/burst", {"session_id": sid, "count": MAX_BURST}).json()
    events = tenant.call("GET", f"/browsers/{sid}/telemetry/events", params={"limit": 100}).json()
    # Only what the archive keeps was built: the newest 100, their seqs where the burst put them.
    assert [e["seq"] for e in events] == list(range(burst["last_seq"] - 99, burst["last_seq"] + 1))
    assert events[-1]["event"]["data"]["text"] == f"burst event {burst['last_seq']}"


def test_it_bounds_an_emitted_events_data(tenant):
    sid = telemetry_session(tenant)
    big = {
        "session_id": sid,
        "events": [{"type": "console_log", "data": {"text": "x" * (MAX_EMIT_DATA + 1)}}],
    }
    assert refused_field(post(tenant, "telemetry/emit", big)) == {"events[0].data"}
    long_type = {"session_id": sid, "events": [{"type": "t" * 101, "category": "console"}]}
    assert refused_field(post(tenant, "telemetry/emit", long_type)) == {"events[0].type"}
    fits = {"session_id": sid, "events": [{"type": "console_log", "data": {"text": "x" * 30_000}}]}
    assert post(tenant, "telemetry/emit", fits).status_code == 201


@pytest.mark.timeout(60)
def test_it_bounds_what_one_read_generates_after_a_long_clock_move(tenant):
    # A day at 1,000 events a second is 86 million events: one read generates the newest MAX_GENERATE.
    settings = {"telemetry_rate_per_second": 1000, "telemetry_retention": 1_000_000}
    tenant.control("POST", "settings", settings)
    sid = telemetry_session(tenant)
    tenant.advance(86_400)
    response = tenant.call("GET", f"/browsers/{sid}/telemetry/events", params={"limit": 1}, timeout=20)
    assert response.status_code == 200, response.text
    stream = tenant.call("GET", f"/browsers/{sid}/telemetry/events", params={"limit": 100, "since": "48h"})
    seqs = [e["seq"] for e in stream.json()]
    assert seqs and min(seqs) > 86_400_000 - MAX_GENERATE - 1000


# The CDP guard ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"id": 1, "method": "Browser.close", "method": "Runtime.evaluate"}',
        '{"id": 1, "method": "Runtime.evaluate", "method": "Browser.close"}',
        '{"id": 1, "id": 2, "method": "Target.getTargets"}',
        '{"id": 1, "method": "Browser.close"',
        "[{}]",
        '"Browser.close"',
        "[" * 100_000,
    ],
)
def test_it_refuses_a_cdp_message_the_guard_cannot_judge_as_chromium_would(text):
    reply = _refusal(text)
    assert reply is not None
    assert json.loads(reply)["error"]["code"] < 0


def test_it_passes_an_ordinary_cdp_message():
    assert _refusal('{"id": 3, "method": "Page.navigate", "params": {"url": "a"}}') is None
    # A key twice inside params is the command's own business (Chromium judges it): only the top level
    # routes and names the command.
    assert _refusal('{"id": 4, "method": "Runtime.evaluate", "params": {"a": 1, "a": 2}}') is None
    assert json.loads(_refusal('{"id": 5, "method": "Browser.close"}'))["id"] == 5
    # A message refused for a repeated key is answered with its first id, as Chromium answers it.
    assert json.loads(_refusal('{"id": 6, "id": 7, "method": "Browser.getVersion"}'))["id"] == 6


def attached(
    session: str, context: str = "ctx-own", kind: str = "page", waiting: bool = True, opener: str | None = "T"
) -> str:
    info = {"targetId": "T" + session, "type": kind, "browserContextId": context, "url": ""}
    if opener is not None:
        info["openerId"] = opener
    params = {"sessionId": session, "targetInfo": info, "waitingForDebugger": waiting}
    return json.dumps({"method": "Target.attachedToTarget", "params": params})


def resume(number: int, session: str) -> str:
    return json.dumps({"id": number, "method": "Runtime.runIfWaitingForDebugger", "sessionId": session})


def test_it_answers_a_clients_resume_of_a_waiting_tab_of_the_sessions_context_only():
    """The CDP proxy's ``Waiting`` (a tab a page of the session's own context opened waits for the
    sandbox's Playwright to set its routes): a client's resume of it is answered, once; anything else
    passes on."""
    waiting = Waiting("ctx-own")
    for message in (
        attached("own"),
        attached("other-context", context="ctx-client"),
        attached("worker", kind="service_worker"),
        attached("running", waiting=False),
        attached("created", opener=None),  # a client's Target.createTarget: Chromium waits for its resume
        "[1, 2]",
        '{"method": "Target.attachedToTarget", "params": []}',
        '{"method": "Runtime.consoleAPICalled", "params": {"note": "Target.attachedToTarget"}}',
    ):
        waiting.seen(message)
    assert list(waiting.sessions) == ["own"]
    assert json.loads(waiting.answer(resume(7, "own"))) == {"id": 7, "result": {}, "sessionId": "own"}
    assert waiting.answer(resume(8, "own")) is None  # answered once; a second passes on (Chromium's no-op)
    for session in ("other-context", "worker", "running", "created", "unknown"):
        assert waiting.answer(resume(9, session)) is None
    # A message past the bound is not parsed on the shared loop (a page's text naming the event): its tab,
    # if it was one, is not held.
    huge = json.loads(attached("huge"))
    huge["params"]["targetInfo"]["url"] = "https://lab.example.com/?" + "a" * MAX_EVENT_BYTES
    waiting.seen(json.dumps(huge))
    assert waiting.answer(resume(13, "huge")) is None
    # Without the session's context id (its page could not say), nothing is held back.
    unknown = Waiting(None)
    unknown.seen(attached("own"))
    assert unknown.answer(resume(10, "own")) is None
    # A page opening tabs in a loop: the oldest are forgotten (their resume passes on), the bound holds.
    for number in range(MAX_WAITING + 5):
        waiting.seen(attached(f"s{number}"))
    assert len(waiting.sessions) == MAX_WAITING
    assert waiting.answer(resume(11, "s0")) is None
    assert waiting.answer(resume(12, f"s{MAX_WAITING + 4}")) is not None


@pytest.mark.chromium
@pytest.mark.timeout(180)
def test_it_keeps_a_repeated_method_from_a_real_browser(chromium_sandbox):
    from websockets.sync.client import connect

    url, _ = chromium_sandbox
    tenant = new_tenant(url)
    body = {"headless": True, "viewport": {"width": 640, "height": 480}}
    session = tenant.call("POST", "/browsers", json=body, timeout=60).json()
    try:
        with connect(session["cdp_ws_url"], open_timeout=60, max_size=None) as socket:
            # Python's json keeps the last "method"; whichever Chromium keeps, the message never reaches it.
            socket.send('{"id": 1, "method": "Browser.close", "method": "Browser.getVersion"}')
            reply = json.loads(socket.recv(timeout=30))
            assert reply["id"] == 1
            assert reply["error"]["code"] == -32600 and "twice" in reply["error"]["message"]
            socket.send("{not json")
            assert json.loads(socket.recv(timeout=30))["error"]["code"] == -32700
            socket.send(json.dumps({"id": 2, "method": "Browser.getVersion"}))
            version = json.loads(socket.recv(timeout=30))
            assert version["id"] == 2 and "Chrome" in version["result"]["product"]
    finally:
        tenant.call("DELETE", f"/browsers/{session['session_id']}", timeout=60)
