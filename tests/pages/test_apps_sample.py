"""The sample app (console/apps/sample/): an empty Apps page offers it to operators, and deploying it makes
an app with two actions whose forms come from its schemas."""

from console.accounts.models import AuditLog


def deployments_posted(tenant):
    return [r for r in tenant.requests() if r["method"] == "POST" and r["path"] == "/deployments"]


async def test_it_offers_the_sample_on_an_empty_apps_page_to_operators(operator_client, viewer_client):
    body = (await operator_client.get("/o/acme/apps/", {"wait": "1"})).content.decode()
    assert "No app is deployed in this project yet." in body and "Deploy the sample" in body
    assert 'action="/o/acme/apps/sample/deploy/"' in body
    seen = (await viewer_client.get("/o/acme/apps/", {"wait": "1"})).content.decode()
    assert "No app is deployed" in seen and "Deploy the sample" not in seen


async def test_it_deploys_the_sample_and_audits_it(operator_client, tenant, operator):
    response = await operator_client.post("/o/acme/apps/sample/deploy/")
    assert response.status_code == 302
    (posted,) = deployments_posted(tenant)
    assert posted["status"] == 201
    deployment_id = response["Location"].rstrip("/").rsplit("/", 1)[-1]
    assert response["Location"] == f"/o/acme/deployments/{deployment_id}/"
    entry = await AuditLog.objects.aget(action="deployment.create")
    assert entry.actor_id == operator.pk and entry.outcome == "ok" and entry.target_id == deployment_id
    assert "sample-greeter" in entry.detail
    tenant.advance(120)  # queued, built, running
    page = (await operator_client.get("/o/acme/apps/sample-greeter/")).content.decode()
    assert "greet" in page and "page-title" in page
    form = (
        await operator_client.get("/o/acme/apps/sample-greeter/versions/1.0.0/actions/greet/invoke/")
    ).content.decode()
    assert 'name="input-p__name"' in form and 'name="input-p__tone"' in form and "shout" in form
    # Deploying it again says so, sends one more request, and changes nothing.
    again = await operator_client.post("/o/acme/apps/sample/deploy/")
    assert again.status_code == 302 and again["Location"] == "/o/acme/deployments/"


async def test_it_refuses_the_sample_to_viewers_without_sending_anything(viewer_client, tenant):
    response = await viewer_client.post("/o/acme/apps/sample/deploy/")
    assert response.status_code == 403
    assert deployments_posted(tenant) == []
    assert not await AuditLog.objects.filter(action="deployment.create").aexists()
