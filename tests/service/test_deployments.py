"""console.service.deployments against the sandbox (notes §13)."""

import io

import pytest

from console.service import Invalid, NotFound, deployments
from tests.sandbox.test_deployments import app_zip


async def deploy(service, content=None, **kwargs):
    kwargs.setdefault("entrypoint_rel_path", "main.py")
    kwargs.setdefault("version", "1.0.0")
    return await deployments.create_deployment(
        service, file=io.BytesIO(content or app_zip()), filename="app.zip", **kwargs
    )


async def test_it_uploads_a_zip_with_env_vars_and_follows_it_to_running(service, tenant):
    created = await deploy(service, env_vars={"API_TOKEN": "s3cret", "MODE": "fast"})
    assert created.id.startswith("dep_")
    assert (created.status, created.source_type, created.entrypoint_rel_path) == ("queued", "file", "main.py")
    assert created.env_var_names == ["API_TOKEN", "MODE"]
    assert set(created.env_vars.values()) == {""}
    assert created.created_at.tzinfo is not None
    tenant.advance(10)
    running = await deployments.get_deployment(service, created.id)
    assert (running.status, running.app_name, running.version) == ("running", "hello-app", "1.0.0")
    assert not running.terminal


async def test_it_sends_version_region_and_force(service, tenant):
    await deploy(service, version="2.0.0")
    replaced = await deploy(service, version="2.0.0", force=True, region="aws.us-east-1a")
    assert replaced.region == "aws.us-east-1a"


async def test_it_raises_invalid_with_field_errors(service):
    with pytest.raises(Invalid) as caught:
        await deploy(service, version="bad version!")
    assert "version" in caught.value.field_errors


async def test_it_stops_a_running_deployment_and_leaves_a_stopped_one(service, tenant):
    created = await deploy(service)
    tenant.advance(10)
    await deployments.delete_deployment(service, created.id)
    stopped = await deployments.get_deployment(service, created.id)
    assert stopped.status == "stopped"
    assert stopped.terminal
    await deployments.delete_deployment(service, created.id)
    assert (await deployments.get_deployment(service, created.id)).updated_at == stopped.updated_at


async def test_it_lists_one_page_with_filters(service):
    for n in range(3):
        await deploy(service, app_zip(name=f"app-{n}"))
    page = await deployments.list_deployments(service, limit=2)
    assert (len(page.items), page.has_more, page.next_offset) == (2, True, 2)
    only = await deployments.list_deployments(service, app_name="app-1", app_version="1.0.0")
    assert [d.app_name for d in only.items] == ["app-1"]


async def test_it_raises_not_found(service):
    with pytest.raises(NotFound):
        await deployments.get_deployment(service, "dep_missing")


async def test_it_reads_the_events_stream_to_the_end(service, tenant):
    created = await deploy(service, app_zip(entrypoint="elsewhere.py"))
    tenant.advance(10)
    kinds = [e.data["event"] async for e in deployments.events(service, created.id)]
    assert kinds[0] == "deployment_state"
    assert kinds[-1] == "deployment_state"
    assert "log" in kinds
