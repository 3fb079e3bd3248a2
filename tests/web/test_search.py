"""The command palette's search: pages and resources by name or id, org-scoped, never held up by one type."""

from console.web import search


def url(org="acme"):
    return f"/o/{org}/search/"


async def test_it_finds_a_session_by_part_of_its_id(viewer_client, tenant):
    session = tenant.call("POST", "/browsers", json={"name": "checkout-run"}).json()
    tenant.call("POST", "/browsers", json={"name": "other-run"})
    part = session["session_id"][3:11]
    body = (await viewer_client.get(url(), {"q": part})).content.decode()
    assert f"/o/acme/browsers/{session['session_id']}/" in body
    assert "checkout-run" in body and "other-run" not in body


async def test_it_finds_resources_of_every_type_by_name(viewer_client, tenant):
    tenant.call("POST", "/profiles", json={"name": "zebra-profile"})
    tenant.call("POST", "/org/projects", json={"name": "zebra-project"})
    credential = {"name": "zebra-login", "domain": "zebra.example", "values": {"u": "x"}}
    tenant.call("POST", "/credentials", json=credential)
    body = (await viewer_client.get(url(), {"q": "zebra"})).content.decode()
    assert "zebra-profile" in body and "zebra-project" in body and "zebra-login" in body
    assert ">Profile<" in body and ">Project<" in body and ">Credential<" in body


async def test_it_finds_pages_by_name_and_group(viewer_client):
    body = (await viewer_client.get(url(), {"q": "pool"})).content.decode()
    assert 'href="/o/acme/pools/"' in body
    by_group = (await viewer_client.get(url(), {"q": "auth"})).content.decode()
    assert 'href="/o/acme/credentials/"' in by_group and 'href="/o/acme/auth/"' in by_group
    # Pages a role may not open are not offered.
    assert 'href="/o/acme/audit/"' not in (await viewer_client.get(url(), {"q": "audit"})).content.decode()


async def test_it_serves_the_results_partial_to_htmx(viewer_client):
    response = await viewer_client.get(
        url(), {"q": "pools"}, headers={"HX-Request": "true", "HX-Target": "search-results"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="search-results"')
    assert "<html" not in body


async def test_it_does_not_wait_for_a_slow_resource(viewer_client, tenant, monkeypatch):
    # Pools answer in two minutes: the results come without them, said so by the palette's own bound (below
    # the client's 5 s read timeout, whose failure would read "could not be searched"), with the rest found.
    monkeypatch.setattr(search, "TIMEOUT", 4.0)
    session = tenant.call("POST", "/browsers", json={"name": "slowpoke-session"}).json()
    tenant.fault(method="GET", path="^/browser_pools$", latency_ms=120_000, count=None)
    body = (await viewer_client.get(url(), {"q": "slowpoke"})).content.decode()
    assert session["session_id"] in body
    assert "Pools did not answer in time" in body


async def test_it_reports_a_failing_resource_and_shows_the_rest(viewer_client, tenant):
    tenant.call("POST", "/profiles", json={"name": "sturdy-profile"})
    tenant.fault(method="GET", path="^/browsers$", status=500, count=None)
    body = (await viewer_client.get(url(), {"q": "sturdy"})).content.decode()
    assert "sturdy-profile" in body and "Sessions could not be searched" in body


async def test_it_searches_only_the_members_org(outsider_client, viewer_client, tenant):
    tenant.call("POST", "/profiles", json={"name": "private-profile"})
    assert (await outsider_client.get(url(), {"q": "private"})).status_code == 404
    assert "private-profile" in (await viewer_client.get(url(), {"q": "private"})).content.decode()


async def test_it_asks_the_service_nothing_for_a_one_letter_query(viewer_client, tenant):
    before = len(tenant.requests())
    body = (await viewer_client.get(url(), {"q": "p"})).content.decode()
    assert 'href="/o/acme/pools/"' in body
    assert len(tenant.requests()) == before


async def test_it_escapes_what_the_service_names(viewer_client, tenant):
    tenant.call("POST", "/browsers", json={"name": "<img src=x onerror=alert(1)>"})
    body = (await viewer_client.get(url(), {"q": "onerror"})).content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;" in body and "<img src=x" not in body


async def test_it_links_no_id_that_is_not_an_id_token(viewer_client, tenant):
    # A hostile service: an id with "/" made reverse() raise (a 500), ".." linked elsewhere in the console.
    tenant.call("POST", "/browsers", json={"name": "planted-one"})
    for planted in ("a/b", "..", "x?y#z"):
        tenant.fault(method="GET", path="^/browsers$", fields={"session_id": planted}, count=1)
        response = await viewer_client.get(url(), {"q": "planted"})
        body = response.content.decode()
        assert response.status_code == 200
        assert "/o/acme/browsers/a" not in body and "/o/acme/browsers/../" not in body
        assert "/o/acme/browsers/x?" not in body  # quoted if linked: x%3Fy%23z


async def test_it_offers_actions_by_the_role_of_their_pages(viewer_client, operator_client, admin_client):
    def actions(body):
        return {line.split(">")[-1] for line in body.split("</span>") if "search-hit__title" in line}

    new = {"q": "new"}
    as_viewer = (await viewer_client.get(url(), new)).content.decode()
    assert ">Action<" not in as_viewer
    as_operator = (await operator_client.get(url(), new)).content.decode()
    assert 'href="/o/acme/browsers/new/"' in as_operator and "New session" in actions(as_operator)
    assert 'href="/o/acme/pools/new/"' not in as_operator  # pools are the admins'
    as_admin = (await admin_client.get(url(), new)).content.decode()
    assert {"New session", "New pool", "New deployment"} <= actions(as_admin)
    invite = (await admin_client.get(url(), {"q": "invite"})).content.decode()
    assert 'href="/o/acme/members/#invite"' in invite
