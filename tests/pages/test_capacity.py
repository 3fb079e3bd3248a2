"""One capacity model (console/capacity.py): every page says the same figure, in the same words, for a
tenant set up with known sessions and pools (issue 23)."""

import re

import pytest

from console.usage.models import Refusal
from tests.sandbox_fixtures import wait_until

HTMX = {"HX-Request": "true"}
HEADLINE = "7 of 12 concurrent sessions in use in this project"
BREAKDOWN = (
    "3 on-demand sessions (3 running, 0 in standby) and 4 reserved by 1 pool (1 acquired, 3 idle, 0 warming)"
)


@pytest.fixture
async def capped(tenant, viewer, operator, org):
    """A project with a cap of 12 that the viewer and the operator work in: 3 on-demand sessions and a pool
    of 4 (filled, one browser leased: it is part of the pool's 4, not a fourth session)."""
    project = tenant.call("POST", "/org/projects", json={"name": "capped"}).json()
    header = {"X-Kernel-Project-Id": project["id"]}
    tenant.call("PATCH", f"/org/projects/{project['id']}/limits", json={"max_concurrent_sessions": 12})
    for _ in range(3):
        assert (
            tenant.call(
                "POST", "/browsers", json={"headless": True, "timeout_seconds": 3600}, headers=header
            ).status_code
            == 201
        )
    pool = tenant.call("POST", "/browser_pools", json={"size": 4, "name": "warm"}, headers=header).json()
    tenant.advance(240)  # 25 % a minute: the pool is full; the sessions (1 h timeout) stay
    leased = tenant.call("POST", f"/browser_pools/{pool['id']}/acquire", json={}, headers=header)
    assert leased.status_code == 200, leased.text
    for member in (viewer, operator):
        membership = await member.memberships.aget(org=org)
        membership.project_id, membership.project_name = project["id"], "capped"
        await membership.asave()
    return {"project": project, "header": header, "pool": pool, "leased": leased.json()["session_id"]}


def text(html: str) -> str:
    """The page's text as a reader sees it (tags out, entities of apostrophes back)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&#x27;", "'").replace("&rsquo;", "'")


async def page(client, path: str, **headers) -> str:
    response = await client.get(f"/o/acme/{path}", headers=headers or None)
    assert response.status_code == 200, path
    return response.content.decode()


async def test_it_says_the_same_figure_on_every_page(viewer_client, operator_client, tenant, capped):
    project_id = capped["project"]["id"]
    pages = {
        "overview": await page(viewer_client, "?part=card-sessions", **HTMX),
        "pools": await page(viewer_client, "pools/?wait=1"),
        "project": await page(viewer_client, f"projects/{project_id}/"),
        "new session": await page(operator_client, "browsers/new/"),
        "wall": await page(viewer_client, "browsers/wall/"),
    }
    for name, html in pages.items():
        said = text(html)
        assert HEADLINE in said, name
        assert BREAKDOWN in said, name
        assert "Cap: this project's own cap; 5 left." in said, name
        if name != "wall":  # the wall has one line above its tiles
            assert "Organization: 7 of 500 concurrent sessions in use in all projects." in said, name
        assert 'aria-label="7 of 12 in use' in html, name  # the bar
    listing = await page(viewer_client, "projects/?wait=1")
    cells = dict(
        re.findall(r'id="project-capacity-([^"]+)"><span data-figure="project-capacity">([^<]*)<', listing)
    )
    default = tenant.call("GET", "/org/projects", params={"name": "default"}).json()[0]["id"]
    assert cells == {project_id: "7 of 12 in use", default: "0 of 500 in use"}


async def test_it_counts_a_pool_by_its_size_whatever_it_leases(viewer_client, tenant, capped):
    # Leased or idle, a pool's browsers are its size: giving the leased one back changes nothing.
    released = tenant.call(
        "POST",
        f"/browser_pools/{capped['pool']['id']}/release",
        json={"session_id": capped["leased"]},
        headers=capped["header"],
    )
    assert released.status_code == 204, released.text
    said = text(await page(viewer_client, "pools/?wait=1"))
    assert HEADLINE in said
    assert "4 reserved by 1 pool (0 acquired, 4 idle, 0 warming)" in said


async def test_it_explains_a_refusal_at_the_cap_in_one_sentence_with_what_uses_it(
    operator_client, tenant, capped
):
    project_id = capped["project"]["id"]
    tenant.call("PATCH", f"/org/projects/{project_id}/limits", json={"max_concurrent_sessions": 7})
    response = await operator_client.post(
        "/o/acme/browsers/new/",
        {"timeout_seconds": "60", "viewport": "1440x900@25", "region": "us-east", "proxy": "mode:direct"},
    )
    assert response.status_code == 200
    html = response.content.decode()
    said = text(html)
    assert f"This project is at its cap: 7 of 7 in use ({BREAKDOWN})." in said
    assert "would exceed" not in said  # the service's own sentence is not repeated beside ours
    assert '<a href="/o/acme/browsers/?status=active">3 on-demand sessions</a>' in html
    assert '<a href="/o/acme/pools/">1 pool reserving 4</a>' in html
    assert f'href="/o/acme/projects/{project_id}/#project-limits"' in html
    assert "End a session, shrink or delete a pool, or raise the cap" in said
    # Counted for the usage page, in the project it happened in.
    assert await Refusal.objects.filter(project_id=project_id, cap="max_concurrent_sessions").acount() == 1
    # The form's own capacity line says the same, at the cap.
    assert "7 of 7 concurrent sessions in use in this project" in said and "at the cap" in said


async def test_it_follows_the_org_default_cap_when_the_project_has_none(viewer_client, tenant, capped):
    tenant.call(
        "PATCH", f"/org/projects/{capped['project']['id']}/limits", json={"max_concurrent_sessions": 0}
    )
    tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 8})
    said = text(await page(viewer_client, "?part=card-sessions", **HTMX))
    assert "7 of 8 concurrent sessions in use in this project" in said
    assert "Cap: the organization's default cap per project; 1 left." in said
    assert "near the cap" in said


async def test_it_counts_a_session_as_ended_once_it_is_deleted(viewer_client, tenant, capped):
    sessions = tenant.call("GET", "/browsers", headers=capped["header"]).json()
    on_demand = [s for s in sessions if not s.get("pool")]
    tenant.call("DELETE", f"/browsers/{on_demand[0]['session_id']}", headers=capped["header"])
    wait_until(
        lambda: len(tenant.call("GET", "/browsers", headers=capped["header"]).json()) == len(sessions) - 1
    )
    said = text(await page(viewer_client, "pools/?wait=1"))
    assert "6 of 12 concurrent sessions in use in this project" in said


async def test_it_counts_the_default_projects_own_cap_when_no_project_is_chosen(viewer_client, tenant):
    # The member works in no project: calls go to the default one, whose own cap is what the service counts.
    default = tenant.call("GET", "/org/projects", params={"name": "default"}).json()[0]["id"]
    tenant.call("PATCH", f"/org/projects/{default}/limits", json={"max_concurrent_sessions": 3})
    tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 100})
    tenant.call("POST", "/browsers", json={"timeout_seconds": 600})
    overview = text(await page(viewer_client, "?part=card-sessions", **HTMX))
    assert "1 of 3 concurrent sessions in use in this project" in overview
    listing = await page(viewer_client, "projects/?wait=1")
    assert f'id="project-capacity-{default}"><span data-figure="project-capacity">1 of 3 in use<' in listing
