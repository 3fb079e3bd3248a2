"""``/metrics``: the console's health and one organization's fleet in Prometheus' text format, read with a
per-org token (shown once, kept hashed, revocable, audited), never open (issue 23)."""

import json
import re
from pathlib import Path

from django.test import AsyncClient
from prometheus_client.parser import text_string_to_metric_families

from console.accounts.models import AuditLog
from console.metrics.models import MetricsToken
from tests.pages.test_capacity import capped  # noqa: F401  (the fixture: a project with known use)

ROOT = Path(__file__).resolve().parents[2]


async def issue(client, name="prometheus") -> str:
    response = await client.post("/o/acme/settings/metrics/", {"name": name})
    assert response.status_code == 200
    found = re.search(r'id="issued-token">(bmc_[^<]+)<', response.content.decode())
    assert found, response.content.decode()
    return found.group(1)


async def scrape(token: str | None, **params):
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return await AsyncClient().get("/metrics", params, headers=headers)


def samples(body: str) -> dict:
    """(name, sorted labels) → value, every sample of the exposition (parsed with prometheus-client)."""
    found = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict, name: str, **labels) -> float:
    matches = [v for (n, ls), v in found.items() if n == name and labels.items() <= dict(ls).items()]
    assert len(matches) == 1, (name, labels, matches)
    return matches[0]


async def test_it_serves_the_fleet_of_the_tokens_org_in_the_text_format(admin_client, capped):  # noqa: F811
    token = await issue(admin_client)
    response = await scrape(token)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    body = response.content.decode()
    found = samples(body)
    capped_project = {"org": "acme", "project": "capped"}
    # The same figures as the pages (tests/pages/test_capacity.py).
    assert value(found, "fleet_capacity_used", **capped_project) == 7
    assert value(found, "fleet_capacity_cap", source="project", **capped_project) == 12
    assert value(found, "fleet_sessions", status="running", **capped_project) == 3
    assert value(found, "fleet_sessions", status="standby", **capped_project) == 0
    assert value(found, "fleet_pool_browsers", pool="warm", state="size", **capped_project) == 4
    assert value(found, "fleet_pool_browsers", pool="warm", state="acquired", **capped_project) == 1
    assert value(found, "fleet_pool_browsers", pool="warm", state="available", **capped_project) == 3
    assert value(found, "fleet_org_capacity_used", org="acme") == 7
    assert value(found, "fleet_org_capacity_limit", org="acme") == 500
    assert value(found, "fleet_up", org="acme") == 1
    assert value(found, "fleet_invocations", status="running", **capped_project) == 0
    assert value(found, "fleet_auth_connections_needing_human", **capped_project) == 0
    # The console's own health.
    assert any(name == "console_http_requests_total" for name, _ in found)
    assert any(name == "console_http_request_duration_seconds_bucket" for name, _ in found)
    assert ("console_live_viewers", (("kind", "events"),)) in found
    assert ("console_upstream_streams", (("kind", "screen"),)) in found
    # Bounded labels: no session id anywhere.
    assert capped["leased"] not in body and "sess_" not in body


async def test_it_refuses_a_scrape_without_a_valid_token(admin_client, capped):  # noqa: F811
    token = await issue(admin_client)
    for presented in (None, "", "bmc_not-a-token", token + "x", token.upper()):
        response = await scrape(presented)
        assert response.status_code == 401, presented
        assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
        assert "fleet_" not in response.content.decode()
    basic = await AsyncClient().get("/metrics", headers={"Authorization": f"Basic {token}"})
    assert basic.status_code == 401


async def test_it_never_serves_an_org_with_another_orgs_token(admin_client, other_org, capped):  # noqa: F811
    _, other_token = await MetricsToken.aissue(other_org, "theirs", None)
    refused = await scrape(other_token, org="acme")
    assert refused.status_code == 403 and b"fleet_" not in refused.content
    theirs = (await scrape(other_token)).content.decode()
    assert 'org="acme"' not in theirs and "capped" not in theirs
    assert value(samples(theirs), "fleet_up", org=other_org.slug) == 1


async def test_it_shows_a_token_once_keeps_its_hash_and_audits_it(admin_client, org, capped):  # noqa: F811
    token = await issue(admin_client, name="prometheus-prod")
    row = await MetricsToken.objects.aget(org=org)
    assert row.digest != token and token not in (row.digest, row.hint, row.name)
    page = (await admin_client.get("/o/acme/settings/metrics/")).content.decode()
    assert token not in page and f"{row.hint}…" in page and "prometheus-prod" in page
    entry = await AuditLog.objects.aget(action="metrics_token.create")
    assert entry.actor_username and token not in entry.detail
    assert (await scrape(token)).status_code == 200
    await MetricsToken.objects.filter(pk=row.pk).aupdate(last_used_at=None)
    assert (await scrape(token)).status_code == 200
    assert (await MetricsToken.objects.aget(pk=row.pk)).last_used_at is not None


async def test_it_revokes_a_token_after_a_confirmation(admin_client, org, capped):  # noqa: F811
    token = await issue(admin_client)
    row = await MetricsToken.objects.aget(org=org)
    confirm = await admin_client.get(f"/o/acme/settings/metrics/{row.pk}/revoke/")
    assert confirm.status_code == 200 and "Revoke the token" in confirm.content.decode()
    assert (await scrape(token)).status_code == 200  # asking is not revoking
    done = await admin_client.post(f"/o/acme/settings/metrics/{row.pk}/revoke/")
    assert done.status_code == 302
    assert (await scrape(token)).status_code == 401
    assert await AuditLog.objects.filter(action="metrics_token.revoke", target_id=str(row.pk)).aexists()


async def test_it_lets_only_admins_manage_tokens(viewer_client, operator_client, org):
    for client in (viewer_client, operator_client):
        assert (await client.get("/o/acme/settings/metrics/")).status_code == 403
        assert (await client.post("/o/acme/settings/metrics/", {"name": "x"})).status_code == 403
    assert not await MetricsToken.objects.filter(org=org).aexists()


async def test_it_refuses_a_token_of_an_org_for_a_non_member(outsider_client, org):
    assert (await outsider_client.get("/o/acme/settings/metrics/")).status_code == 404


async def test_it_says_the_service_did_not_answer_rather_than_failing_the_scrape(admin_client, tenant):
    token = await issue(admin_client)
    tenant.fault(method="GET", path="^/org/projects$", status=503, count=None)
    response = await scrape(token)
    assert response.status_code == 200
    assert value(samples(response.content.decode()), "fleet_up", org="acme") == 0


async def test_it_ships_a_dashboard_built_on_these_metrics(admin_client, capped):  # noqa: F811
    dashboard = json.loads((ROOT / "docs" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    used = set(re.findall(r"\b((?:fleet|console)_[a-z_]+)", " ".join(exprs)))
    served = {name for name, _ in samples((await scrape(await issue(admin_client))).content.decode())}
    assert used and used <= served, used - served
