"""Sandbox conformance: invocations (notes §13): create, lifecycle, cancel, list, events, browsers."""

import json

import httpx
import pytest

from tests.sandbox.test_deployments import app_zip, created, error


@pytest.fixture
def deployed(tenant):
    """A fresh tenant serving hello-app 1.0.0 (actions greet and add, which echo their payload)."""
    created(tenant)
    tenant.advance(10)
    return tenant


def invoke(tenant, data=None, **body):
    """POST /invocations; ``data`` is JSON-encoded into ``payload`` (a raw ``payload=`` is sent as is)."""
    body = {"app_name": "hello-app", "action_name": "greet", "version": "1.0.0", "async": True, **body}
    if data is not None:
        body["payload"] = json.dumps(data)
    return tenant.call("POST", "/invocations", json=body)


def started(tenant, data=None, **body) -> dict:
    response = invoke(tenant, data, **body)
    assert response.status_code == 202, response.text
    return response.json()


def get(tenant, invocation_id) -> dict:
    response = tenant.call("GET", f"/invocations/{invocation_id}")
    assert response.status_code == 200, response.text
    return response.json()


def test_it_starts_an_async_invocation_queued_with_202(deployed):
    body = started(deployed, {"name": "Ada"})
    assert body["id"].startswith("inv_")
    assert (body["action_name"], body["status"]) == ("greet", "queued")


def test_it_moves_queued_running_succeeded_with_an_output(deployed):
    invocation = started(deployed, {"name": "Ada"})
    full = get(deployed, invocation["id"])
    assert (full["app_name"], full["version"], full["status"]) == ("hello-app", "1.0.0", "queued")
    assert json.loads(full["payload"]) == {"name": "Ada"}
    assert full["started_at"].endswith("Z")
    assert full["finished_at"] is None and full["output"] is None
    deployed.advance(1)
    assert get(deployed, invocation["id"])["status"] == "running"
    deployed.advance(5)
    done = get(deployed, invocation["id"])
    assert done["status"] == "succeeded"
    assert json.loads(done["output"])["echo"] == {"name": "Ada"}
    assert done["finished_at"] > done["started_at"]


def test_it_fails_an_invocation_whose_payload_asks_for_it(deployed):
    invocation = started(deployed, {"fail": True})
    deployed.advance(5)
    failed = get(deployed, invocation["id"])
    assert failed["status"] == "failed"
    assert '"fail": true' in failed["status_reason"]
    assert failed["output"] is None


def test_it_fails_a_run_longer_than_its_async_timeout(deployed):
    invocation = started(deployed, {"duration_seconds": 60}, async_timeout_seconds=10)
    deployed.advance(30)
    failed = get(deployed, invocation["id"])
    assert failed["status"] == "failed"
    assert "timed out after 10 s" in failed["status_reason"]


def test_it_waits_for_a_sync_invocation(deployed):
    response = invoke(deployed, {"duration_seconds": 0}, **{"async": False})
    assert response.status_code == 200
    assert response.json()["status"] == "succeeded"
    assert json.loads(response.json()["output"])["ok"] is True


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"app_name": ""}, "app_name"),
        ({"action_name": None}, "action_name"),
        ({"version": 3}, "version"),
        ({"payload": {"not": "a string"}}, "payload"),
        ({"payload": "{not json"}, "payload"),
        ({"async_timeout_seconds": 5}, "async_timeout_seconds"),
        ({"async": "yes"}, "async"),
        ({"action_name": "nope"}, "action_name"),
    ],
)
def test_it_refuses_a_bad_request_with_field_details(deployed, body, field):
    response = invoke(deployed, **body)
    assert response.status_code == 400
    assert field in [d["code"] for d in error(response)["details"]]


@pytest.mark.parametrize("body", [{"app_name": "missing-app"}, {"version": "9.9.9"}])
def test_it_answers_404_for_an_app_or_version_that_is_not_deployed(deployed, body):
    response = invoke(deployed, **body)
    assert response.status_code == 404
    assert error(response)["code"] == "not_found"


def test_it_cancels_with_patch_failed_and_refuses_to_change_a_finished_one(deployed):
    invocation = started(deployed, {"duration_seconds": 600})
    deployed.advance(1)
    response = deployed.call("PATCH", f"/invocations/{invocation['id']}", json={"status": "failed"})
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["status_reason"]) == ("failed", "cancelled")
    deployed.advance(700)
    assert get(deployed, invocation["id"])["status"] == "failed"
    again = deployed.call("PATCH", f"/invocations/{invocation['id']}", json={"status": "succeeded"})
    assert again.status_code == 409
    assert error(again)["code"] == "invocation_finished"


def test_it_completes_with_patch_succeeded_and_an_output(deployed):
    invocation = started(deployed, {"duration_seconds": 600})
    body = {"status": "succeeded", "output": json.dumps({"done": 1})}
    done = deployed.call("PATCH", f"/invocations/{invocation['id']}", json=body).json()
    assert (done["status"], json.loads(done["output"])) == ("succeeded", {"done": 1})
    bad = deployed.call("PATCH", f"/invocations/{invocation['id']}", json={"status": "running"})
    assert bad.status_code == 400


def test_it_lists_newest_first_with_filters(deployed):
    first = started(deployed, {"n": 1})
    second = started(deployed, {"n": 2}, action_name="add")
    third = started(deployed, {"fail": True})
    deployed.advance(5)

    def ids(**params):
        response = deployed.call("GET", "/invocations", params=params)
        assert response.status_code == 200, response.text
        return [i["id"] for i in response.json()]

    assert ids() == [third["id"], second["id"], first["id"]]
    assert ids(action_name="add") == [second["id"]]
    assert ids(status="failed") == [third["id"]]
    assert ids(status="succeeded", app_name="hello-app", version="1.0.0") == [second["id"], first["id"]]
    assert ids(since="1m") == [third["id"], second["id"], first["id"]]
    assert ids(since="2100-01-01T00:00:00Z") == []
    assert ids(query="ADD") == [second["id"]]
    page = deployed.call("GET", "/invocations", params={"limit": 1, "offset": 1})
    assert [i["id"] for i in page.json()] == [second["id"]]
    assert page.headers["X-Next-Offset"] == "2"


@pytest.mark.parametrize(
    "params", [{"status": "done"}, {"since": "last week"}, {"limit": 0}, {"limit": 101}, {"offset": -1}]
)
def test_it_refuses_bad_list_parameters(deployed, params):
    response = deployed.call("GET", "/invocations", params=params)
    assert response.status_code == 400
    assert error(response)["details"][0]["code"] in params


def events_of(tenant, invocation_id, *, on_event=None, **params) -> list[dict]:
    headers = {"Authorization": f"Bearer {tenant.api_key}", "Accept": "text/event-stream"}
    url = f"{tenant.url}/invocations/{invocation_id}/events"
    events = []
    with httpx.stream("GET", url, headers=headers, params=params, timeout=10) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            assert not line.startswith("id:"), "the invocation stream is not resumable"
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if on_event:
                    on_event(events[-1])
    return events


def test_it_streams_the_whole_run_and_ends_at_the_terminal_state(deployed):
    invocation = started(deployed, {"name": "Ada"})
    deployed.advance(5)
    events = events_of(deployed, invocation["id"])
    states = [e["invocation"]["status"] for e in events if e["event"] == "invocation_state"]
    assert states == ["queued", "running", "succeeded"]
    assert events[-1]["invocation"]["output"] is not None
    logs = [e["message"] for e in events if e["event"] == "log"]
    assert logs[0].startswith("Starting hello-app@1.0.0 action greet")
    assert logs[-1].startswith("Action greet finished")


def test_it_follows_a_live_run_as_the_clock_moves(deployed):
    invocation = started(deployed, {"fail": True})

    def advance_once_queued(event):
        if event["event"] == "invocation_state" and event["invocation"]["status"] == "queued":
            deployed.advance(5)

    events = events_of(deployed, invocation["id"], on_event=advance_once_queued)
    assert events[-1]["event"] == "invocation_state"
    assert events[-1]["invocation"]["status"] == "failed"


def test_it_sends_heartbeats_while_quiet(deployed):
    deployed.control("POST", "settings", {"keepalive_seconds": 0.3})
    invocation = started(deployed, {"duration_seconds": 600})
    headers = {"Authorization": f"Bearer {deployed.api_key}"}
    url = f"{deployed.url}/invocations/{invocation['id']}/events"
    with httpx.stream("GET", url, headers=headers, timeout=10) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and json.loads(line[6:])["event"] == "sse_heartbeat":
                break
    deployed.call("PATCH", f"/invocations/{invocation['id']}", json={"status": "failed"})


def test_it_starts_from_the_current_state_with_since(deployed):
    invocation = started(deployed)
    deployed.advance(5)
    events = events_of(deployed, invocation["id"], since="2100-01-01T00:00:00Z")
    assert [e["event"] for e in events] == ["invocation_state"]
    assert events[0]["invocation"]["status"] == "succeeded"


def test_it_answers_404_for_an_unknown_invocation(deployed):
    for method, path in [
        ("GET", "/invocations/inv_nope"),
        ("PATCH", "/invocations/inv_nope"),
        ("GET", "/invocations/inv_nope/events"),
        ("GET", "/invocations/inv_nope/browsers"),
        ("DELETE", "/invocations/inv_nope/browsers"),
    ]:
        response = deployed.call(method, path, json={"status": "failed"} if method == "PATCH" else None)
        assert response.status_code == 404, (method, path)


def test_it_lists_and_deletes_the_browsers_an_invocation_created(demo_tenant):
    body = {
        "app_name": "web-scraper",
        "action_name": "get-page-title",
        "version": "1.2.0",
        "payload": json.dumps({"url": "https://example.com"}),
        "async": True,
    }
    invocation = demo_tenant.call("POST", "/invocations", json=body).json()
    path = f"/invocations/{invocation['id']}/browsers"
    browsers = demo_tenant.call("GET", path).json()["browsers"]
    assert len(browsers) == 1
    assert browsers[0]["session_id"]
    assert all(not key.startswith("_") for key in browsers[0])
    assert demo_tenant.call("DELETE", path).status_code == 204
    assert demo_tenant.call("GET", path).json() == {"browsers": []}


def test_it_runs_the_demo_actions_deterministically(demo_tenant):
    body = {
        "app_name": "web-scraper",
        "action_name": "get-page-title",
        "version": "1.2.0",
        "payload": json.dumps({"url": "https://example.com"}),
        "async": True,
    }
    invocation = demo_tenant.call("POST", "/invocations", json=body).json()
    demo_tenant.advance(5)
    done = demo_tenant.call("GET", f"/invocations/{invocation['id']}").json()
    assert json.loads(done["output"]) == {"title": "Example Domain", "url": "https://example.com"}


def test_it_seeds_invocations_in_every_state(demo_tenant):
    listed = demo_tenant.call("GET", "/invocations", params={"limit": 100}).json()
    assert {i["status"] for i in listed} == {"queued", "running", "succeeded", "failed"}
    assert any(i["status_reason"] == "cancelled" for i in listed)


def test_it_never_keeps_a_project_from_being_deleted_by_run_history(tenant):
    project = tenant.call("POST", "/org/projects", json={"name": "short-lived"}).json()
    scoped = {"X-Kernel-Project": project["id"]}
    files = {"file": ("app.zip", app_zip(), "application/zip")}
    data = {"version": "1.0.0", "entrypoint_rel_path": "main.py"}
    deployment = tenant.call("POST", "/deployments", data=data, files=files, headers=scoped).json()
    tenant.advance(10)
    body = {"app_name": "hello-app", "action_name": "greet", "version": "1.0.0", "async": True}
    assert tenant.call("POST", "/invocations", json=body, headers=scoped).status_code == 202
    assert tenant.call("DELETE", f"/org/projects/{project['id']}").status_code == 409  # still deployed
    tenant.call("DELETE", f"/deployments/{deployment['id']}", headers=scoped)
    assert tenant.call("DELETE", f"/org/projects/{project['id']}").status_code == 204


def test_it_queues_an_invocation_past_the_project_cap_until_a_slot_frees(deployed):
    deployed.call("PATCH", "/org/projects/default/limits", json={"max_concurrent_invocations": 1})
    first = started(deployed, {"duration_seconds": 10})
    waiting = started(deployed, {"duration_seconds": 1})
    deployed.advance(5)
    assert get(deployed, first["id"])["status"] == "running"
    queued = get(deployed, waiting["id"])
    assert queued["status"] == "queued"
    assert "max_concurrent_invocations" in queued["status_reason"]
    deployed.advance(6.2)  # the first finished at about 10.5 s; the slot is taken after the usual queueing
    assert get(deployed, first["id"])["status"] == "succeeded"
    assert get(deployed, waiting["id"])["status"] == "running"
    deployed.advance(5)
    assert get(deployed, waiting["id"])["status"] == "succeeded"
