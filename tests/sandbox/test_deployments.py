"""Sandbox conformance: deployments (notes §13; spec: States and transitions for Deployment)."""

import io
import json
import zipfile

import httpx
import pytest

APP_SOURCE = """
from kernel import App

app = App("{name}")

@app.action("greet")
async def greet(ctx, payload):
    return {{"hello": payload.get("name", "world")}}

@app.action("add")
async def add(ctx, payload):
    return {{"sum": payload["a"] + payload["b"]}}
"""


def app_zip(name="hello-app", entrypoint="main.py", schemas=None, source=None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(entrypoint, source if source is not None else APP_SOURCE.format(name=name))
        if schemas is not None:
            archive.writestr("actions.json", json.dumps(schemas))
    return buffer.getvalue()


def deploy(tenant, content=None, **fields):
    data = {"version": "1.0.0", "entrypoint_rel_path": "main.py", **fields}
    files = {"file": ("app.zip", content if content is not None else app_zip(), "application/zip")}
    return tenant.call("POST", "/deployments", data=data, files=files)


def created(tenant, content=None, **fields) -> dict:
    response = deploy(tenant, content, **fields)
    assert response.status_code == 201, response.text
    return response.json()


def build_failure(tenant, content: bytes) -> str:
    """Deploy ``content`` and let its build run: the reason the build failed (it must fail)."""
    deployment = created(tenant, content)
    tenant.advance(10)
    deployment = get(tenant, deployment["id"])
    assert deployment["status"] == "failed", deployment
    return deployment["status_reason"]


def get(tenant, deployment_id) -> dict:
    response = tenant.call("GET", f"/deployments/{deployment_id}")
    assert response.status_code == 200, response.text
    return response.json()


def error(response) -> dict:
    body = response.json()
    assert set(body) >= {"code", "message", "details"}
    return body


def test_it_moves_a_deployment_from_queued_to_in_progress_to_running(tenant):
    deployment = created(tenant)
    assert deployment["id"].startswith("dep_")
    assert deployment["status"] == "queued"
    assert deployment["region"] == "aws.us-east-1a"
    assert deployment["source_type"] == "file"
    assert deployment["entrypoint_rel_path"] == "main.py"
    tenant.advance(1.5)
    assert get(tenant, deployment["id"])["status"] == "in_progress"
    tenant.advance(3)
    running = get(tenant, deployment["id"])
    assert running["status"] == "running"
    assert (running["app_name"], running["version"]) == ("hello-app", "1.0.0")


def test_it_fails_a_zip_without_the_entrypoint_with_a_reason(tenant):
    deployment = created(tenant, app_zip(entrypoint="app.py"))
    tenant.advance(10)
    failed = get(tenant, deployment["id"])
    assert failed["status"] == "failed"
    assert "main.py was not found" in failed["status_reason"]


def test_it_fails_an_entrypoint_that_defines_no_app(tenant):
    deployment = created(tenant, app_zip(source="print('hello')\n"))
    tenant.advance(10)
    assert "defines no app" in get(tenant, deployment["id"])["status_reason"]


def test_it_never_sends_env_var_values_back(tenant):
    deployment = created(tenant, **{"env_vars[API_TOKEN]": "s3cret-value", "env_vars[LOG_LEVEL]": "debug"})
    assert deployment["env_vars"] == {"API_TOKEN": "", "LOG_LEVEL": ""}
    tenant.advance(10)
    assert "s3cret-value" not in tenant.call("GET", f"/deployments/{deployment['id']}").text
    assert "s3cret-value" not in tenant.call("GET", "/apps").text


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"version": "not a version!"}, "version"),
        ({"region": "mars-1"}, "region"),
        ({"env_vars[1BAD]": "x"}, "env_vars[1BAD]"),
        ({"entrypoint_rel_path": ""}, "entrypoint_rel_path"),
    ],
)
def test_it_refuses_bad_fields_with_details(tenant, fields, field):
    response = deploy(tenant, **fields)
    assert response.status_code == 400
    assert field in [d["code"] for d in error(response)["details"]]


def test_it_refuses_a_file_that_is_not_a_zip_and_a_missing_file(tenant):
    response = deploy(tenant, b"not a zip")
    assert response.status_code == 400
    assert error(response)["details"][0]["code"] == "file"
    missing = tenant.call(
        "POST", "/deployments", data={"version": "1"}, files={"x": ("a", b"", "text/plain")}
    )
    assert missing.status_code == 400
    assert error(missing)["details"][0]["code"] == "file"


def test_it_refuses_an_active_version_unless_forced(tenant):
    first = created(tenant)
    again = deploy(tenant)
    assert again.status_code == 409
    assert error(again)["code"] == "version_exists"
    forced = created(tenant, force="true")
    assert get(tenant, first["id"])["status"] == "stopped"
    assert get(tenant, forced["id"])["status"] == "queued"


def test_it_deploys_from_a_github_source(tenant):
    data = {
        "source[type]": "github",
        "source[url]": "https://github.com/acme/crawler",
        "source[ref]": "main",
        "source[entrypoint]": "src/index.ts",
        "version": "2",
    }
    response = tenant.call("POST", "/deployments", data=data, files={"unused": ("x", b"", "text/plain")})
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["source_type"], body["source_url"], body["source_ref"]) == (
        "github",
        "https://github.com/acme/crawler",
        "main",
    )


def test_it_stops_a_running_deployment_and_marks_it_for_deletion(tenant):
    deployment = created(tenant)
    tenant.advance(10)
    assert tenant.call("DELETE", f"/deployments/{deployment['id']}").status_code == 204
    stopped = get(tenant, deployment["id"])
    assert stopped["status"] == "stopped"
    assert "marked for deletion" in stopped["status_reason"]
    assert tenant.call("GET", "/apps", params={"app_name": "hello-app"}).json() == []
    assert tenant.call("GET", "/deployments").json() == []  # marked for deletion: gone from lists


@pytest.mark.parametrize("terminal", ["stopped", "failed"])
def test_it_leaves_a_terminal_deployment_unchanged_on_delete(tenant, terminal):
    content = app_zip() if terminal == "stopped" else app_zip(entrypoint="other.py")
    deployment = created(tenant, content)
    tenant.advance(10)
    if terminal == "stopped":
        tenant.call("DELETE", f"/deployments/{deployment['id']}")
    before = get(tenant, deployment["id"])
    assert before["status"] == terminal
    tenant.advance(5)
    response = tenant.call("DELETE", f"/deployments/{deployment['id']}")
    assert response.status_code == 204
    assert response.content == b""
    assert get(tenant, deployment["id"]) == before


def test_it_answers_404_for_an_unknown_deployment(tenant):
    assert tenant.call("GET", "/deployments/dep_nope").status_code == 404
    assert error(tenant.call("DELETE", "/deployments/dep_nope"))["code"] == "not_found"


def test_it_lists_newest_first_with_filters_and_paging(tenant):
    ids = [created(tenant, app_zip(name=f"app-{n}"))["id"] for n in range(3)]
    listed = tenant.call("GET", "/deployments").json()
    assert [d["id"] for d in listed] == ids[::-1]
    only = tenant.call("GET", "/deployments", params={"app_name": "app-1", "app_version": "1.0.0"}).json()
    assert [d["id"] for d in only] == [ids[1]]
    page = tenant.call("GET", "/deployments", params={"limit": 2})
    assert (page.headers["X-Has-More"], page.headers["X-Next-Offset"]) == ("true", "2")
    needs_name = tenant.call("GET", "/deployments", params={"app_version": "1.0.0"})
    assert needs_name.status_code == 400


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"offset": -1}])
def test_it_refuses_out_of_range_paging(tenant, params):
    response = tenant.call("GET", "/deployments", params=params)
    assert response.status_code == 400
    assert error(response)["details"][0]["code"] in params


def read_events(tenant, path, **params) -> list[dict]:
    headers = {"Authorization": f"Bearer {tenant.api_key}", "Accept": "text/event-stream"}
    events = []
    with httpx.stream("GET", f"{tenant.url}{path}", headers=headers, params=params, timeout=10) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    return events


def test_it_streams_logs_and_states_until_a_terminal_state(tenant):
    deployment = created(tenant, app_zip(entrypoint="other.py"))
    tenant.advance(10)
    events = read_events(tenant, f"/deployments/{deployment['id']}/events")
    states = [e["deployment"]["status"] for e in events if e["event"] == "deployment_state"]
    assert states == ["queued", "in_progress", "failed"]
    assert any(e["event"] == "log" and "Build failed" in e["message"] for e in events)
    assert all("timestamp" in e for e in events)


def test_it_streams_a_version_summary_once_running_and_ends_when_stopped(tenant):
    deployment = created(tenant)
    tenant.advance(10)
    tenant.call("DELETE", f"/deployments/{deployment['id']}")
    events = read_events(tenant, f"/deployments/{deployment['id']}/events")
    kinds = [e["event"] for e in events]
    summary = events[kinds.index("app_version_summary")]
    assert (summary["app_name"], summary["version"]) == ("hello-app", "1.0.0")
    assert [a["name"] for a in summary["actions"]] == ["greet", "add"]
    assert events[-1]["event"] == "deployment_state"
    assert events[-1]["deployment"]["status"] == "stopped"


def test_it_follows_a_live_build_as_the_clock_moves(tenant):
    deployment = created(tenant)
    headers = {"Authorization": f"Bearer {tenant.api_key}"}
    path = f"{tenant.url}/deployments/{deployment['id']}/events"
    states = []
    with httpx.stream("GET", path, headers=headers, timeout=10) as response:
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if event["event"] == "deployment_state":
                states.append(event["deployment"]["status"])
                if event["deployment"]["status"] == "queued":
                    tenant.advance(10)
                if event["deployment"]["status"] == "running":
                    break  # running is not terminal: the stream stays open
    assert states == ["queued", "in_progress", "running"]


def test_it_refuses_a_bad_since(tenant):
    deployment = created(tenant)
    response = tenant.call("GET", f"/deployments/{deployment['id']}/events", params={"since": "yesterday"})
    assert response.status_code == 400
    assert error(response)["details"][0]["code"] == "since"


def test_it_seeds_deployments_in_every_state(demo_tenant):
    statuses = {d["status"] for d in demo_tenant.call("GET", "/deployments", params={"limit": 100}).json()}
    assert statuses == {"queued", "in_progress", "running", "failed", "stopped"}
