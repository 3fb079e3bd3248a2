"""Every URL of an organization is its own: a non-member gets 404, and no page reaches another org's tenant.

The URL list comes from the resolver, so every page other engineers add under /o/<org_slug>/ is covered
without touching this file. The ids in those URLs are real: each organization has its own sandbox tenant
holding one of everything, so a page that used the wrong organization's key would find the other's resource
(and the other tenant would see the request) instead of answering a harmless 404 for a made-up id.
"""

import io
import json
import re
import zipfile

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from console.accounts.models import Invite, Membership
from console.alerts.models import Alert, Channel, Rule, Silence
from console.metrics.models import MetricsToken
from tests.sandbox_fixtures import SandboxTenant, new_tenant

pytestmark = pytest.mark.django_db(transaction=True)

PARAM = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")
# Parameters that are verbs, not resources: the same in every organization.
VERBS = {"action": "click", "which": "hosted"}
APP_SOURCE = """
from kernel import App

app = App("{name}")

@app.action("greet")
async def greet(ctx, payload):
    return {{"hello": "world"}}
"""


def walk(patterns, prefix=""):
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from walk(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            yield route


def org_routes():
    return sorted(
        {route for route in walk(get_resolver().url_patterns) if route.startswith("o/<slug:org_slug>/")}
    )


def zipped(entries: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def made(tenant: SandboxTenant, method: str, path: str, **kwargs) -> dict:
    response = tenant.call(method, path, **kwargs)
    assert response.status_code in (200, 201, 202), f"{method} {path}: {response.text}"
    return response.json()


def seed(tenant: SandboxTenant, name: str) -> dict[str, str]:
    """One of every resource in the tenant, by the URL parameter that names it."""
    app = f"{name}-app"
    files = {"file": ("app.zip", zipped({"main.py": APP_SOURCE.format(name=app)}), "application/zip")}
    data = {"version": "1.0.0", "entrypoint_rel_path": "main.py"}
    deployment = made(tenant, "POST", "/deployments", data=data, files=files)
    tenant.advance(10)
    invocation = made(
        tenant,
        "POST",
        "/invocations",
        json={"app_name": app, "action_name": "greet", "version": "1.0.0", "async": True},
    )
    telemetry = {"enabled": True, "browser": {"network": {"enabled": True}}}
    session = made(tenant, "POST", "/browsers", json={"timeout_seconds": 3600, "telemetry": telemetry})[
        "session_id"
    ]
    process = made(
        tenant, "POST", f"/browsers/{session}/process/spawn", json={"command": "sleep", "args": ["600"]}
    )
    watch = made(
        tenant, "POST", f"/browsers/{session}/fs/watch", json={"path": "/home/kernel", "recursive": True}
    )
    # One request in the session's telemetry, for the network view's request page.
    request = {"request_id": f"{name}-req", "method": "GET", "url": f"https://shop.example.com/{name}"}
    emitted = tenant.control(
        "POST",
        "telemetry/emit",
        {"session_id": session, "events": [{"type": "network_request", "data": request}]},
    )
    assert emitted.status_code == 201, emitted.text
    manifest = json.dumps({"manifest_version": 3, "name": name, "version": "1.0"})
    extension = made(
        tenant,
        "POST",
        "/extensions",
        data={"name": f"{name}-ext"},
        files={"file": ("ext.zip", zipped({"manifest.json": manifest}), "application/zip")},
    )
    credential = {
        "name": f"{name}-login",
        "domain": "github.com",
        "values": {"username": "bot", "password": "pw"},
    }
    proxy = {"type": "custom", "name": f"{name}-proxy", "config": {"host": "proxy.example.net", "port": 3128}}
    vault = made(tenant, "POST", "/vaults", json={"name": f"{name}-vault"})
    item = {"provider": "kernel", "fields": [{"name": "username", "type": "email", "value": "a@example.com"}]}
    made(tenant, "PUT", f"/vaults/{vault['id']}/items/{name}-item", json={"type": "credential", "spec": item})
    provider = {"name": f"{name}-1p", "provider_type": "onepassword", "token": "ops_" + "a1b2c3d4e5" * 3}
    destination = {"name": f"{name}-otel", "endpoint": "https://otel.example.com"}
    export = {
        "type": "s3",
        "format": "jsonl.gz",
        "bucket": f"{name}-audit",
        "prefix": "",
        "region": "us-east-1",
        "role_arn": "arn:aws:iam::123456789012:role/export",
    }
    provider_config = {
        "name": f"{name}-link",
        "provider": "link",
        "credentials": {"client_id": "cid", "client_secret": "secret"},
    }
    return {
        "key_id": made(tenant, "POST", "/org/api_keys", json={"name": f"{name}-key"})["id"],
        "vault_id": vault["id"],
        "key": f"{name}-item",
        "destination_id": made(tenant, "POST", "/telemetry/destinations", json=destination)["id"],
        "export_destination_id": made(tenant, "POST", "/audit-logs/export/destinations", json=export)["id"],
        "config_id": made(tenant, "POST", "/vault-provider-configs", json=provider_config)["id"],
        "provider_id": made(tenant, "POST", "/org/credential_providers", json=provider)["id"],
        "app_name": app,
        "version": "1.0.0",
        "action_name": "greet",
        "deployment_id": deployment["id"],
        "invocation_id": invocation["id"],
        "session_id": session,
        "request_key": f"{name}-req",
        "process_id": process["process_id"],
        "watch_id": watch["watch_id"],
        # The simulated engine cannot record, so no replay exists; the session in the same URL is real, so
        # a page using the wrong key still reaches (and is heard by) the other tenant.
        "replay_id": f"rep_{name}",
        "id_or_name": extension["id"],
        "project_id": made(tenant, "POST", "/org/projects", json={"name": f"{name}-project"})["id"],
        "proxy_id": made(tenant, "POST", "/proxies", json=proxy)["id"],
        "credential_id": made(tenant, "POST", "/credentials", json=credential)["id"],
        "pool_id": made(tenant, "POST", "/browser_pools", json={"name": f"{name}-pool", "size": 1})["id"],
        "profile_id": made(tenant, "POST", "/profiles", json={"name": f"{name}-profile"})["id"],
        "connection_id": made(
            tenant, "POST", "/auth/connections", json={"domain": "plain.example.com", "profile_name": name}
        )["id"],
    }


@pytest.fixture(scope="module")
def acme_seeded(sandbox_url):
    tenant = new_tenant(sandbox_url)
    return tenant, seed(tenant, "acme")


@pytest.fixture(scope="module")
def globex_seeded(sandbox_url):
    tenant = new_tenant(sandbox_url)
    return tenant, seed(tenant, "globex")


@pytest.fixture
def tenant(acme_seeded):
    return acme_seeded[0]


@pytest.fixture
def other_tenant(globex_seeded):
    return globex_seeded[0]


def real_ids(seeded, org) -> dict[str, str]:
    """The organization's real ids: its tenant's resources, its own membership and a pending invite."""
    membership = Membership.objects.filter(org=org).first()
    invite = Invite.objects.filter(org=org).first() or Invite.objects.create(
        org=org, email=f"x@{org.slug}.example", token_hash=f"isolation-{org.slug}", expires_at=timezone.now()
    )
    return {
        **seeded[1],
        "member_id": str(membership.pk),
        "invite_id": str(invite.pk),
        **alert_ids(org),
        "token_id": str(metrics_token(org).pk),
    }


def metrics_token(org):
    """A /metrics token of the organization (the console's own record; its secret is thrown away)."""
    return MetricsToken.objects.filter(org=org).first() or MetricsToken.objects.create(
        org=org, name=f"{org.slug} scraper", digest=f"isolation-{org.slug}".ljust(64, "0"), hint="bmc_xxxx"
    )


def alert_ids(org) -> dict[str, str]:
    """The organization's alert records (the console's own: ids of its database)."""
    rule = Rule.objects.filter(org=org, builtin=False).first() or Rule.objects.create(
        org=org, kind="pool_exhausted", name=f"{org.slug} pools"
    )
    alert = Alert.objects.filter(org=org).first() or Alert.objects.create(
        org=org, rule=rule, subject_key="pool:x", subject_label="Pool x", state=Alert.State.FIRING
    )
    # On loopback's discard port: nothing there, and nothing leaves the machine.
    channel = Channel.objects.filter(org=org, kind=Channel.Kind.WEBHOOK).first() or Channel.objects.create(
        org=org, kind=Channel.Kind.WEBHOOK, name=f"{org.slug} hook", url="http://127.0.0.1:9/hook"
    )
    silence = Silence.objects.filter(org=org).first() or Silence.objects.create(
        org=org, ends_at=timezone.now() + timezone.timedelta(hours=1), note="isolation"
    )
    return {
        "alert_id": str(alert.pk),
        "rule_id": str(rule.pk),
        "channel_id": str(channel.pk),
        "silence_id": str(silence.pk),
    }


def fill(route: str, org_slug: str, ids: dict[str, str]) -> str:
    def value(match):
        if match["name"] == "org_slug":
            return org_slug
        name = match["name"]
        assert name in VERBS or name in ids, f"seed() has no real id for <{name}> in {route}"
        return VERBS.get(name) or ids[name]

    return "/" + PARAM.sub(value, route).lstrip("^").rstrip("$")


async def answers(client: AsyncClient, url: str, data: dict | None = None) -> list[int]:
    statuses = []
    for headers in ({}, {"HX-Request": "true", "HX-Target": "x"}):
        response = await client.get(url, headers=headers)
        if response.status_code == 405:
            response = await client.post(url, data or {}, headers=headers)
        statuses.append(response.status_code)
    return statuses


def test_it_finds_the_org_pages():
    routes = org_routes()
    assert "o/<slug:org_slug>/" in routes
    assert "o/<slug:org_slug>/members/" in routes


@pytest.mark.parametrize("route", org_routes())
async def test_it_hides_every_org_url_from_outsiders(route, org, admin, outsider_client, acme_seeded):
    url = fill(route, org.slug, await sync_to_async(real_ids)(acme_seeded, org))
    before = len(acme_seeded[0].requests())
    statuses = await answers(outsider_client, url)
    assert statuses == [404, 404], f"{url} answered {statuses} to a non-member"
    assert len(acme_seeded[0].requests()) == before, f"{url} called the service for a non-member"


@pytest.mark.parametrize("route", org_routes())
async def test_it_never_reaches_another_orgs_tenant(
    route, org, other_org, admin_client, outsider_client, acme_seeded, globex_seeded
):
    """Each org's admin asks its own URLs for the other org's real ids: the other tenant hears nothing."""
    for client, mine, (theirs_tenant, _), their_org, seeded in (
        (admin_client, org, globex_seeded, other_org, globex_seeded),
        (outsider_client, other_org, acme_seeded, org, acme_seeded),
    ):
        ids = await sync_to_async(real_ids)(seeded, their_org)
        url = fill(route, mine.slug, ids)
        before = len(theirs_tenant.requests())
        # Their ids in the body too, confirmed: the bulk actions take theirs from the form.
        statuses = await answers(client, url, {"session_id": ids["session_id"], "confirm": "yes"})
        heard = theirs_tenant.requests()[before:]
        assert heard == [], f"{url} reached {their_org.slug}'s tenant: {heard}"
        if "member_id" in route or "invite_id" in route:
            assert statuses == [404, 404], f"{url} answered {statuses} for {their_org.slug}'s record"


@pytest.mark.parametrize("route", org_routes())
async def test_it_sends_anonymous_users_to_login(route, org, admin, acme_seeded):
    url = fill(route, org.slug, await sync_to_async(real_ids)(acme_seeded, org))
    response = await AsyncClient().get(url)
    if response.status_code == 405:
        response = await AsyncClient().post(url)
    assert response.status_code in (302, 404), f"{url} answered {response.status_code} anonymously"


# What every mutating form of the console might send: a viewer's POST with all of it changes nothing.
EVERYTHING = {
    "confirm": "yes",
    "action": "take",
    "kind": "click",
    "x": "1",
    "y": "1",
    "name": "viewer-was-here",
    "reuse": "on",
}
# Service reads sent as POST (the service's computer reads are POSTs).
READS = ("/computer/screenshot", "/computer/get_mouse_position", "/computer/clipboard/read")


@pytest.mark.parametrize("route", org_routes())
async def test_it_lets_a_viewer_change_nothing(route, org, viewer_client, acme_seeded):
    """A viewer POSTs every org URL (plain and htmx, with every field a form of the console sends and the
    org's real ids): the service receives no change, and no audit row but a refusal is written."""
    from console.accounts.models import AuditLog

    ids = await sync_to_async(real_ids)(acme_seeded, org)
    url = fill(route, org.slug, ids)
    tenant = acme_seeded[0]
    before = len(tenant.requests())
    rows = await AuditLog.objects.exclude(outcome="denied").acount()
    data = {**EVERYTHING, "session_id": ids["session_id"]}
    for headers in ({}, {"HX-Request": "true", "HX-Target": "x"}):
        await viewer_client.post(url, data, headers=headers)
    changes = [
        r
        for r in tenant.requests()[before:]
        if r["method"] not in ("GET", "HEAD") and not r["path"].endswith(READS)
    ]
    assert changes == [], f"a viewer's POST to {url} changed {changes}"
    # A refusal may be audited ("denied", the member pages do), nothing else.
    written = await AuditLog.objects.exclude(outcome="denied").acount()
    assert written == rows, f"a viewer's POST to {url} wrote an audit row"
