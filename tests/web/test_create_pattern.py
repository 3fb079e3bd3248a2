"""One place to create: every resource list has its create button in the page head, going to a page of its
own (``<list>/new/``), and no create form of its own."""

import re

import pytest

LISTS = [
    "browsers",
    "pools",
    "profiles",
    "proxies",
    "extensions",
    "projects",
    "credentials",
    "auth",
    "deployments",
    "telemetry_destinations",
    "credential_providers",
]


@pytest.mark.parametrize("resource", LISTS)
async def test_it_creates_from_the_page_heads_button(admin_client, resource):
    listed = (await admin_client.get(f"/o/acme/{resource}/")).content.decode()
    head = listed.split('class="page-head"', 1)[1].split("</div>\n</div>", 1)[0]
    assert re.search(rf'<a class="button primary" href="/o/acme/{resource}/new/">', head), resource
    create_form = rf'<form[^>]*method="post"[^>]*action="/o/acme/{resource}/"'
    assert not re.search(create_form, listed), resource
    assert (await admin_client.get(f"/o/acme/{resource}/new/")).status_code == 200
