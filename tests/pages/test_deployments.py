"""Deployment pages: list with filters, detail with live build events, upload (admins), stop/delete."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from console.accounts.models import AuditLog
from tests.sandbox.test_deployments import app_zip

SECRET = "pa55-w0rd-never-shown"


def url(path=""):
    return f"/o/acme/deployments/{path}"


def upload(content=None, **fields):
    data = {
        "file": SimpleUploadedFile("app.zip", content or app_zip(), content_type="application/zip"),
        "entrypoint_rel_path": "main.py",
        "version": "1.0.0",
        "region": "aws.us-east-1a",
        "env_vars": f"API_TOKEN={SECRET}\nMODE=fast",
    }
    data.update(fields)
    return data


def deployed(tenant, content=None, **fields) -> dict:
    data = {"version": "1.0.0", "entrypoint_rel_path": "main.py", **fields}
    files = {"file": ("app.zip", content or app_zip(), "application/zip")}
    response = tenant.call("POST", "/deployments", data=data, files=files)
    assert response.status_code == 201, response.text
    return response.json()


def posted(tenant):
    return [r for r in tenant.requests() if r["method"] == "POST" and r["path"] == "/deployments"]


async def test_it_lists_deployments_with_app_version_status_and_filters(viewer_client, tenant):
    first = deployed(tenant, app_zip(name="alpha"))
    deployed(tenant, app_zip(name="beta"), version="2.0.0")
    tenant.advance(10)
    body = (await viewer_client.get(url())).content.decode()
    assert first["id"] in body and "alpha" in body and "beta" in body and "status-running" in body
    only = (await viewer_client.get(url(), {"app_name": "beta", "app_version": "2.0.0"})).content.decode()
    assert "beta" in only and "alpha" not in only


async def test_it_filters_deployments_in_progress(viewer_client, tenant):
    done = deployed(tenant, app_zip(name="alpha"))
    tenant.advance(60)
    building = deployed(tenant, app_zip(name="beta"), version="2.0.0")
    # Back to before its build was queued (the first stays running): it is not built 3 s later, however
    # long a loaded machine takes to answer the pages below.
    tenant.advance(-30)
    body = (await viewer_client.get(url(), {"status": "in_progress"})).content.decode()
    assert building["id"] in body and done["id"] not in body
    assert (">Building<" in body or ">Queued<" in body) and ">in_progress<" not in body
    running = (await viewer_client.get(url(), {"status": "running"})).content.decode()
    assert done["id"] in running and building["id"] not in running


async def test_it_refuses_a_version_filter_without_an_app(viewer_client, tenant):
    response = await viewer_client.get(url(), {"app_version": "1.0.0"})
    assert "Filter by app as well" in response.content.decode()
    assert [r for r in tenant.requests() if r["path"] == "/deployments"] == []


async def test_it_corrects_out_of_range_paging(viewer_client, tenant):
    body = (await viewer_client.get(url(), {"limit": "1000"})).content.decode()
    assert "between 1 and 100" in body
    assert [r["status"] for r in tenant.requests() if r["path"] == "/deployments"] == [200]


async def test_it_shows_source_entrypoint_and_env_var_names(viewer_client, tenant):
    dep = deployed(tenant, **{"env_vars[API_TOKEN]": SECRET})
    tenant.advance(10)
    body = (await viewer_client.get(url(f"{dep['id']}/"))).content.decode()
    assert "status-running" in body and "Uploaded zip" in body and "<code>main.py</code>" in body
    assert "API_TOKEN" in body and SECRET not in body
    assert f'sse-connect="/o/acme/deployments/{dep["id"]}/events/"' in body
    assert "Stop and delete" not in body  # viewers read only


async def test_it_uploads_a_zip_and_never_renders_or_audits_env_values(admin_client, tenant, admin):
    page = (await admin_client.get(url("new/"))).content.decode()
    assert 'enctype="multipart/form-data"' in page and "js/deployments.js" in page
    response = await admin_client.post(url("new/"), upload())
    assert response.status_code == 302
    (dep,) = tenant.call("GET", "/deployments").json()
    assert response["Location"] == url(f"{dep['id']}/")
    assert sorted(dep["env_vars"]) == ["API_TOKEN", "MODE"]
    entry = await AuditLog.objects.aget(action="deployment.create")
    assert (entry.target_id, entry.actor_id) == (dep["id"], admin.pk)
    assert "API_TOKEN" in entry.detail and SECRET not in entry.detail


async def test_it_answers_the_upload_script_with_a_redirect_header(admin_client):
    headers = {"HX-Request": "true", "HX-Target": "deployment-create"}
    response = await admin_client.post(url("new/"), upload(), headers=headers)
    assert response["HX-Redirect"].startswith("/o/acme/deployments/dep_")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"file": SimpleUploadedFile("app.zip", b"not a zip")}, "not a zip archive"),
        ({"entrypoint_rel_path": "../main.py"}, "relative to the zip"),
        ({"version": "not a version!"}, "Letters, digits"),
        ({"env_vars": f"1BAD={SECRET}"}, "not a valid name"),
        ({"env_vars": SECRET}, "write NAME=value"),
    ],
)
async def test_it_validates_before_uploading_and_never_echoes_values(admin_client, tenant, fields, message):
    response = await admin_client.post(url("new/"), upload(**fields))
    assert response.status_code == 200
    body = response.content.decode()
    assert message in body
    assert SECRET not in body
    assert posted(tenant) == []


async def test_it_explains_a_version_that_is_already_deployed(admin_client, tenant):
    deployed(tenant)
    response = await admin_client.post(url("new/"), upload())
    body = response.content.decode()
    assert "already deployed" in body and "Replace this version" in body
    assert SECRET not in body
    assert (await AuditLog.objects.aget(action="deployment.create")).outcome == "error"
    forced = await admin_client.post(url("new/"), upload(force="on"))
    assert forced.status_code == 302


async def test_it_forbids_operators_and_viewers_to_deploy(operator_client, viewer_client, tenant):
    for client in (operator_client, viewer_client):
        assert (await client.get(url("new/"))).status_code == 403
        assert (await client.post(url("new/"), upload())).status_code == 403
    assert posted(tenant) == []


async def test_it_stops_a_running_deployment_and_says_so(admin_client, tenant):
    dep = deployed(tenant)
    tenant.advance(10)
    confirm = (await admin_client.get(url(f"{dep['id']}/delete/"))).content.decode()
    assert "<strong>stops it</strong>" in confirm and "stops serving" in confirm
    response = await admin_client.post(url(f"{dep['id']}/delete/"), follow=True)
    body = response.content.decode()
    assert "was running: stopped and marked for deletion" in body
    assert tenant.call("GET", f"/deployments/{dep['id']}").json()["status"] == "stopped"
    entry = await AuditLog.objects.aget(action="deployment.delete")
    assert entry.detail == "was running: stopped and marked for deletion"


@pytest.mark.parametrize("terminal", ["stopped", "failed"])
async def test_it_says_a_terminal_deployment_is_left_unchanged(admin_client, tenant, terminal):
    dep = deployed(tenant, app_zip() if terminal == "stopped" else app_zip(entrypoint="other.py"))
    tenant.advance(10)
    if terminal == "stopped":
        tenant.call("DELETE", f"/deployments/{dep['id']}")
    confirm = (await admin_client.get(url(f"{dep['id']}/delete/"))).content.decode()
    assert f"already <strong>{terminal}</strong>" in confirm and "changes nothing" in confirm
    body = (await admin_client.post(url(f"{dep['id']}/delete/"), follow=True)).content.decode()
    assert f"was already {terminal}: nothing changed" in body


async def test_it_forbids_operators_to_delete(operator_client, tenant):
    dep = deployed(tenant)
    assert (await operator_client.post(url(f"{dep['id']}/delete/"))).status_code == 403
    assert tenant.call("GET", f"/deployments/{dep['id']}").json()["status"] == "queued"


async def test_it_relays_the_build_until_it_fails(viewer_client, tenant):
    dep = deployed(tenant, app_zip(entrypoint="other.py"))
    tenant.advance(10)
    response = await viewer_client.get(url(f"{dep['id']}/events/"))
    chunks = []
    async for chunk in response.streaming_content:
        chunks.append(chunk.decode())
        if "event: ended" in chunks[-1]:
            break
    stream = "".join(chunks)
    assert "State: Building" in stream and "State: Failed" in stream and "Build failed" in stream
    assert "State: in_progress" not in stream
    assert 'id="deployment-summary"' in stream


async def test_it_answers_404_for_an_unknown_deployment(admin_client):
    assert (await admin_client.get(url("dep_missing/"))).status_code == 404
    assert (await admin_client.post(url("dep_missing/delete/"))).status_code == 404


async def test_it_hides_the_org_from_outsiders(outsider_client):
    assert (await outsider_client.get(url())).status_code == 404
    assert (await outsider_client.get(url("new/"))).status_code == 404
