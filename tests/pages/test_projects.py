"""Projects pages: list, create, rename, archive, delete (with the 409 explained), limits, selector."""

import pytest

from console.accounts.models import AuditLog, Membership


def url(path=""):
    return f"/o/acme/projects/{path}"


async def create(client, name):
    return await client.post(url("new/"), {"name": name})


@pytest.fixture
def project(tenant):
    return tenant.call("POST", "/org/projects", json={"name": "checkout"}).json()


async def test_it_lists_projects_with_search_and_paging(admin_client, tenant):
    for i in range(23):
        tenant.call("POST", "/org/projects", json={"name": f"team-{i:02d}"})
    page = await admin_client.get(url())
    assert page.status_code == 200
    body = page.content.decode()
    assert "team-00" in body and "team-18" in body and "team-19" not in body
    assert 'rel="next"' in body
    second = (await admin_client.get(url(), {"offset": 20})).content.decode()
    assert "team-19" in second and "team-22" in second
    found = (await admin_client.get(url(), {"q": "am-07"})).content.decode()
    assert "team-07" in found and "team-08" not in found


async def test_it_serves_the_table_partial_to_htmx(viewer_client, project):
    response = await viewer_client.get(url(), headers={"HX-Request": "true", "HX-Target": "projects-table"})
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="projects-table">')
    assert "<html" not in body
    assert "checkout" in body


async def test_it_corrects_out_of_range_paging_instead_of_forwarding_it(viewer_client, tenant):
    response = await viewer_client.get(url(), {"limit": "500", "offset": "-4"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "between 1 and 100" in body and "0 or more" in body
    assert [r["status"] for r in tenant.requests() if r["path"] == "/org/projects"] == [200]


async def test_it_creates_a_project_and_audits_it(admin_client, tenant, admin):
    response = await create(admin_client, "data-team")
    assert response.status_code == 302
    created = tenant.call("GET", "/org/projects/data-team").json()
    assert response["Location"] == url(f"{created['id']}/")
    entry = await AuditLog.objects.aget(action="project.create")
    assert entry.target_id == created["id"]
    assert entry.actor_id == admin.pk
    assert entry.request_id.startswith("req_")


async def test_it_refuses_a_bad_name_without_calling_the_service(admin_client, tenant):
    response = await create(admin_client, "a/b")
    assert response.status_code == 200
    assert "cannot contain / or %" in response.content.decode()
    assert [r for r in tenant.requests() if r["method"] == "POST"] == []


async def test_it_shows_the_services_conflict_next_to_the_name(admin_client, project):
    response = await create(admin_client, "checkout")
    assert response.status_code == 200
    assert "already exists" in response.content.decode()


async def test_it_forbids_viewers_and_operators_to_create(viewer_client, operator_client, tenant):
    assert (await create(viewer_client, "nope")).status_code == 403
    assert (await create(operator_client, "nope")).status_code == 403
    assert tenant.call("GET", "/org/projects/nope").status_code == 404


async def test_it_shows_a_project_with_its_limits(viewer_client, project):
    response = await viewer_client.get(url(f"{project['id']}/"))
    body = response.content.decode()
    assert response.status_code == 200
    assert "checkout" in body
    assert "No project cap — organization limit applies" in body
    assert "deprecated" in body
    assert "Edit limits" not in body  # viewers read only


async def test_it_answers_404_for_an_unknown_project(viewer_client):
    assert (await viewer_client.get(url("proj_nope/"))).status_code == 404


async def test_it_edits_limits_in_all_three_states(admin_client, tenant, project):
    limits_url = url(f"{project['id']}/limits/")
    htmx = {"HX-Request": "true", "HX-Target": "project-limits"}
    form = await admin_client.get(limits_url, {"edit": "1"}, headers=htmx)
    assert "Remove the cap" in form.content.decode()

    # Cap = N for one limit; the other is left unchanged (not sent).
    saved = await admin_client.post(
        limits_url,
        {
            "max_concurrent_sessions_mode": "cap",
            "max_concurrent_sessions_value": "12",
            "max_concurrent_invocations_mode": "keep",
        },
        headers=htmx,
    )
    assert saved.status_code == 200
    assert "Cap = <strong>12</strong>" in saved.content.decode()
    limits = tenant.call("GET", f"/org/projects/{project['id']}/limits").json()
    assert limits == {
        "max_concurrent_sessions": 12,
        "max_concurrent_invocations": None,
        "max_pooled_sessions": None,
    }

    # Remove the cap: sends 0, back to "no project cap".
    removed = await admin_client.post(
        limits_url,
        {"max_concurrent_sessions_mode": "remove", "max_concurrent_invocations_mode": "keep"},
        headers=htmx,
    )
    assert "organization limit applies" in removed.content.decode()
    assert (
        tenant.call("GET", f"/org/projects/{project['id']}/limits").json()["max_concurrent_sessions"] is None
    )
    patches = [r for r in tenant.requests() if r["method"] == "PATCH"]
    assert len(patches) == 2
    assert await AuditLog.objects.filter(action="project.limits").acount() == 2


@pytest.mark.parametrize(
    ("value", "message"),
    [("-3", "at least 1"), ("ten", "whole number"), ("1000000", "at most"), ("", "Enter the cap")],
)
async def test_it_refuses_bad_limits_next_to_the_field_with_nothing_sent(
    admin_client, tenant, project, value, message
):
    response = await admin_client.post(
        url(f"{project['id']}/limits/"),
        {
            "max_concurrent_sessions_mode": "cap",
            "max_concurrent_sessions_value": value,
            "max_concurrent_invocations_mode": "keep",
        },
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    assert [r for r in tenant.requests() if r["method"] == "PATCH"] == []


async def test_it_refuses_a_sessions_cap_over_the_org_ceiling(admin_client, tenant, project):
    ceiling = tenant.call("GET", "/org/limits").json()["max_concurrent_sessions"]
    assert ceiling == 500
    response = await admin_client.post(
        url(f"{project['id']}/limits/"),
        {
            "max_concurrent_sessions_mode": "cap",
            "max_concurrent_sessions_value": "600",
            "max_concurrent_invocations_mode": "keep",
        },
    )
    body = response.content.decode()
    assert "at most the organization&#x27;s ceiling of 500" in body
    assert [r for r in tenant.requests() if r["method"] == "PATCH"] == []
    form = (await admin_client.get(url(f"{project['id']}/limits/"), {"edit": "1"})).content.decode()
    assert 'max="500"' in form


async def test_it_takes_a_typed_cap_as_cap_at(admin_client, tenant, project):
    """Typing a number beside “Cap at” means that choice, even when the radio was left alone."""
    await admin_client.post(
        url(f"{project['id']}/limits/"),
        {
            "max_concurrent_sessions_mode": "keep",
            "max_concurrent_sessions_value": "7",
            "max_concurrent_invocations_mode": "keep",
        },
    )
    assert tenant.call("GET", f"/org/projects/{project['id']}/limits").json()["max_concurrent_sessions"] == 7


async def test_it_checks_cap_at_when_a_number_is_typed(admin_client, project):
    form = (await admin_client.get(url(f"{project['id']}/limits/"), {"edit": "1"})).content.decode()
    assert "js/limits.js" in form
    assert 'data-selects="id_max_concurrent_sessions_mode_1"' in form


async def test_it_forbids_viewers_to_edit_limits(viewer_client, project, tenant):
    response = await viewer_client.post(
        url(f"{project['id']}/limits/"),
        {"max_concurrent_sessions_mode": "remove", "max_concurrent_invocations_mode": "keep"},
    )
    assert response.status_code == 403
    assert [r for r in tenant.requests() if r["method"] == "PATCH"] == []


async def test_it_renames_and_archives(admin_client, tenant, project):
    renamed = await admin_client.post(url(f"{project['id']}/rename/"), {"name": "checkout-eu"})
    assert renamed.status_code == 302
    assert tenant.call("GET", f"/org/projects/{project['id']}").json()["name"] == "checkout-eu"
    archived = await admin_client.post(url(f"{project['id']}/status/"), {"status": "archived"})
    assert archived.status_code == 302
    assert tenant.call("GET", f"/org/projects/{project['id']}").json()["status"] == "archived"


async def test_it_confirms_before_deleting(admin_client, tenant, project):
    confirm = await admin_client.get(url(f"{project['id']}/delete/"))
    assert "Delete project" in confirm.content.decode()
    assert tenant.call("GET", f"/org/projects/{project['id']}").status_code == 200
    deleted = await admin_client.post(url(f"{project['id']}/delete/"))
    assert deleted.status_code == 302
    assert tenant.call("GET", f"/org/projects/{project['id']}").status_code == 404


async def test_it_explains_a_project_that_is_not_empty(admin_client, tenant):
    # The default project is never deletable: the service answers 409, the page explains it inline.
    default = tenant.call("GET", "/org/projects/default").json()
    response = await admin_client.post(url(f"{default['id']}/delete/"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "The service refused" in body and "default project cannot be deleted" in body
    entry = await AuditLog.objects.aget(action="project.delete")
    assert entry.outcome == "error"


async def test_it_selects_the_project_sent_as_the_project_header(viewer_client, viewer, project, tenant):
    response = await viewer_client.post(url("select/"), {"project_id": project["id"], "next": url()})
    assert response.status_code == 302
    assert response["Location"] == url()
    membership = await Membership.objects.aget(user=viewer)
    assert membership.project_id == project["id"]
    menu = await viewer_client.get(url("selector/"), {"q": "check"})
    assert "checkout" in menu.content.decode()


async def test_it_renders_a_banner_when_the_service_fails(viewer_client, tenant):
    tenant.fault(method="GET", path="^/org/projects$", status=500, count=1)
    response = await viewer_client.get(url())
    assert response.status_code in (502, 503)
    assert "Traceback" not in response.content.decode()


async def test_it_says_in_place_of_the_list_when_the_service_times_out(viewer_client, tenant, settings):
    settings.SERVICE_READ_TIMEOUT = 0.3
    tenant.fault(method="GET", path="^/org/projects$", latency_ms=1500, count=3)
    response = await viewer_client.get(url(), headers={"HX-Request": "true", "HX-Target": "projects-table"})
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="projects-table" class="deferred deferred-failed"')
    assert "did not answer" in body and ">Retry</a>" in body


EVIL_NEXTS = [
    "https://evil.example/",
    "//evil.example",
    "/\\evil.example",
    "\\\\evil.example",
    "http:evil.example",
    " //evil.example",
    "https://evil.example/o/acme/projects/",
    "http://testserver//evil.example/o/acme/",
    "javascript:alert(1)",
]


def stays_on_site(location: str) -> bool:
    return location.startswith("/") and not location.startswith(("//", "/\\")) and "evil" not in location


@pytest.mark.parametrize("next_url", EVIL_NEXTS)
@pytest.mark.parametrize("htmx", [False, True])
async def test_it_never_redirects_off_site_after_selecting_a_project(
    viewer_client, viewer, project, next_url, htmx
):
    headers = {"HX-Request": "true"} if htmx else {}
    for project_id in ["prj_does_not_exist", project["id"], ""]:
        response = await viewer_client.post(
            url("select/"), {"project_id": project_id, "next": next_url}, headers=headers
        )
        location = response["HX-Redirect"] if htmx else response["Location"]
        assert stays_on_site(location), (project_id, location)


async def test_it_returns_to_a_page_of_this_org_after_an_unknown_project(viewer_client, viewer):
    here = "http://testserver/o/acme/browsers/?q=x"
    response = await viewer_client.post(url("select/"), {"project_id": "prj_gone", "next": here})
    assert response["Location"] == "/o/acme/browsers/?q=x"


async def test_it_shows_the_organizations_session_usage_beside_the_limits(viewer_client, tenant, project):
    tenant.call("POST", "/browser_pools", json={"size": 3})
    body = (await viewer_client.get(f"/o/acme/projects/{project['id']}/")).content.decode()
    assert "Organization: 3 of 500 concurrent sessions in use in all projects." in body


async def test_it_renders_org_limits_with_unknown_fields_and_without_the_new_ones(
    viewer_client, tenant, project
):
    import json

    limits = {"max_concurrent_sessions": 50, "max_gpu_sessions": 2, "auth_connections_used": 0}
    tenant.fault(method="GET", path="^/org/limits$", status=200, body=json.dumps(limits))
    response = await viewer_client.get(f"/o/acme/projects/{project['id']}/")
    assert response.status_code == 200
    assert "organization ceiling: 50" in response.content.decode()
    assert 'id="org-usage"' not in response.content.decode()
