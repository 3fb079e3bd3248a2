"""The list component (templates/web/list_page.html, console.web.deferred.list_page): every list page drawn
on it answers a browser with its frame at once (head, filters, buttons) and loads its list after; a slow or
failing list shows what went wrong and a Retry in the list's place; scripts and no-JS get it whole."""

import pytest

NAVIGATE = {"Sec-Fetch-Mode": "navigate"}
HX = {"HX-Request": "true"}

# (page, the list's id, a heading the frame shows, a filter field the frame shows)
LIST_PAGES = [
    ("apps/", "apps-table", "Apps", 'name="query"'),
    ("extensions/", "extensions-table", "Extensions", 'id="extension-search"'),
    ("api_keys/", "api-keys-table", "API keys", 'id="api-key-status"'),
    ("vaults/", "vaults-table", "Vaults", 'id="vault-search"'),
    ("telemetry_destinations/", "destinations-table", "Telemetry destinations", 'id="destination-search"'),
    ("credential_providers/", "providers-table", "Credential providers", 'id="provider-search"'),
    ("audit_logs/", "audit-logs-table", "Service audit log", '<form class="filters'),
    ("credentials/", "credentials-table", "Credentials", 'id="credential-domain"'),
    ("proxies/", "proxies-table", "Proxies", 'id="proxy-search"'),
    ("profiles/", "profiles-table", "Profiles", 'id="profile-search"'),
    ("projects/", "projects-table", "Projects", 'id="project-search"'),
    ("pools/", "pools-live", "Browser pools", 'id="pool-search"'),
    ("invocations/", "invocations-table", "Invocations", '<form class="filters row"'),
    ("deployments/", "deployments-table", "Deployments", '<form class="filters row"'),
    ("browsers/", "browsers-table", "Browser sessions", 'id="browser-search"'),
    ("auth/", "auth-table", "Auth connections", 'id="auth-search"'),
]


def url(path=""):
    return f"/o/acme/{path}"


@pytest.mark.parametrize(("page", "list_id", "heading", "field"), LIST_PAGES)
async def test_it_draws_the_frame_without_asking_the_service(
    admin_client, tenant, page, list_id, heading, field
):
    response = await admin_client.get(url(page), headers=NAVIGATE)
    body = response.content.decode()
    assert response.status_code == 200
    assert f"<h1>{heading}</h1>" in body and field in body
    assert f'hx-target="#{list_id}"' in body
    assert f'<div id="{list_id}" class="deferred deferred-loading"' in body
    assert f'hx-get="/o/acme/{page}?part={list_id}"' in body
    assert f'<noscript><a href="/o/acme/{page}?wait=1">' in body
    assert tenant.requests() == []


@pytest.mark.parametrize(("page", "list_id", "heading", "field"), LIST_PAGES)
async def test_it_serves_the_list_as_its_part(admin_client, tenant, page, list_id, heading, field):
    response = await admin_client.get(url(f"{page}?part={list_id}"), headers=HX)
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith(f'<section id="{list_id}"')
    assert "<h1>" not in body and "deferred-failed" not in body
    assert tenant.requests(), "the part is what asks the service"


@pytest.mark.parametrize(("page", "list_id", "heading", "field"), LIST_PAGES)
async def test_it_gives_scripts_and_no_js_the_whole_page(admin_client, page, list_id, heading, field):
    for path in (url(page), url(f"{page}?wait=1")):
        headers = NAVIGATE if "wait" in path else {}
        body = (await admin_client.get(path, headers=headers)).content.decode()
        assert f"<h1>{heading}</h1>" in body and f'<section id="{list_id}"' in body
        assert "deferred-loading" not in body.split(f'<section id="{list_id}"')[1].split("</section>")[0]


async def test_it_shows_a_slow_list_as_an_error_with_a_retry_then_loads_it(admin_client, tenant, settings):
    settings.SERVICE_READ_TIMEOUT = 0.5
    tenant.call("POST", "/credentials", json={"name": "shop-login", "domain": "shop.example", "values": {}})
    tenant.fault(method="GET", path="^/credentials$", latency_ms=3000, count=1)

    frame = await admin_client.get(url("credentials/?q=shop"), headers=NAVIGATE)
    body = frame.content.decode()
    assert "<h1>Credentials</h1>" in body and 'value="shop"' in body and "New credential" in body
    part = "/o/acme/credentials/?part=credentials-table&q=shop"
    assert f'hx-get="{part.replace("&", "&amp;")}" hx-trigger="load"' in body

    failed = (await admin_client.get(part, headers=HX)).content.decode()
    assert failed.lstrip().startswith('<div id="credentials-table" class="deferred deferred-failed"')
    assert "did not answer within 0.5 s" in failed
    assert f'href="{part.replace("&", "&amp;")}" hx-get="{part.replace("&", "&amp;")}"' in failed
    assert ">Retry</a>" in failed

    retried = (await admin_client.get(part, headers=HX)).content.decode()
    assert retried.lstrip().startswith('<section id="credentials-table"') and "shop-login" in retried


async def test_it_answers_the_filters_with_the_list_alone(admin_client, tenant):
    tenant.call("POST", "/proxies", json={"type": "isp", "name": "edge"})
    headers = {**HX, "HX-Target": "proxies-table"}
    body = (await admin_client.get(url("proxies/?q=edge"), headers=headers)).content.decode()
    assert body.lstrip().startswith('<section id="proxies-table"') and "edge" in body
    assert "<h1>" not in body


async def test_it_keeps_the_part_out_of_the_pager_links(admin_client, tenant):
    for n in range(3):
        tenant.call("POST", "/profiles", json={"name": f"p{n}"})
    body = (await admin_client.get(url("profiles/?part=profiles-table&limit=2"), headers=HX)).content.decode()
    assert 'href="/o/acme/profiles/?limit=2&amp;offset=2" rel="next"' in body
    assert "part=" not in body.split('class="pager"')[1]


async def test_it_loads_the_vaults_plan_on_its_own(viewer_client, tenant, settings):
    settings.SERVICE_READ_TIMEOUT = 0.5
    tenant.fault(method="GET", path="^/org/limits$", latency_ms=3000, count=1)
    frame = (await viewer_client.get(url("vaults/"), headers=NAVIGATE)).content.decode()
    assert 'hx-get="/o/acme/vaults/?part=vaults-plan"' in frame
    assert 'hx-get="/o/acme/vaults/?part=vaults-table"' in frame
    plan = (await viewer_client.get(url("vaults/?part=vaults-plan"), headers=HX)).content.decode()
    assert 'id="vaults-plan" class="deferred deferred-failed"' in plan
    table = (await viewer_client.get(url("vaults/?part=vaults-table"), headers=HX)).content.decode()
    assert table.lstrip().startswith('<section id="vaults-table"')


async def test_it_draws_a_posted_form_whole(admin_client, tenant):
    response = await admin_client.post(url("vaults/"), {"name": ""}, headers=NAVIGATE)
    body = response.content.decode()
    assert 'id="vault-create"' in body and '<section id="vaults-table"' in body
    assert "deferred-loading" not in body
