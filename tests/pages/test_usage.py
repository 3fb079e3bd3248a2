"""The usage page (``/o/<org>/usage/``): ranges over the sampler's rows with the sandbox's clock advanced,
every project or one, a chart and its table per figure, CSV export (issue 23)."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

from django.utils import timezone

from console.accounts.models import AuditLog
from console.usage import sampler
from console.usage.models import Refusal
from tests.usage.test_sampler import default_project, minute, rfc3339

URL = "/o/acme/usage/"


def figure(html: str, name: str) -> str:
    found = re.search(rf'data-figure="{name}">([^<]*)<', html)
    assert found, html
    return found.group(1)


async def sampled_days(org, tenant) -> None:
    """Two sessions three days ago (one headful, deleted after 30 s) and one an hour ago, each interval
    sampled when it ended, the sandbox's clock set to each moment."""
    three_days = minute(timezone.now()) - timedelta(days=3)
    tenant.set_clock(rfc3339(three_days))
    headful = tenant.call("POST", "/browsers", json={"timeout_seconds": 600}).json()
    tenant.call("POST", "/browsers", json={"headless": True, "timeout_seconds": 600})
    tenant.advance(30)
    tenant.call("DELETE", f"/browsers/{headful['session_id']}")
    tenant.advance(30)
    assert await sampler.sample_org(org, three_days) == 1
    hour_ago = minute(timezone.now()) - timedelta(hours=1)
    tenant.set_clock(rfc3339(hour_ago))
    tenant.call("POST", "/browsers", json={"headless": True, "timeout_seconds": 3600})
    tenant.advance(60)
    await Refusal.objects.acreate(org=org, project_id=default_project(tenant), cap="max_concurrent_sessions")
    await Refusal.objects.filter(org=org).aupdate(at=hour_ago + timedelta(seconds=5))
    assert await sampler.sample_org(org, hour_ago) == 1


async def test_it_shows_each_range_from_the_samples(viewer_client, org, tenant):
    await sampled_days(org, tenant)
    day = (await viewer_client.get(URL)).content.decode()
    assert figure(day, "sessions-started") == "1"
    assert figure(day, "refusals") == "1"
    # The member works in no project: the default one, with its cap; every project together has no one cap.
    assert figure(day, "peak") == "1 of a cap of 500"
    every = (await viewer_client.get(URL, {"project": "all"})).content.decode()
    assert figure(every, "peak") == "1"
    assert figure(day, "browser-minutes") == "0.0 headful · 1.0 headless"
    week = (await viewer_client.get(URL, {"range": "7d"})).content.decode()
    assert figure(week, "sessions-started") == "3"
    assert figure(week, "sessions-ended") == "1"
    assert figure(week, "browser-minutes") == "0.5 headful · 2.0 headless"
    month = (await viewer_client.get(URL, {"range": "30d"})).content.decode()
    assert figure(month, "sessions-started") == "3"
    # A chart per figure, each with the table behind it.
    for key in ("sessions", "headful", "headless", "peak", "ended", "refusals", "invocations", "pools"):
        assert f'id="chart-{key}"' in week
    assert week.count("<summary>Table</summary>") == 8
    peak = week[week.index('id="chart-peak"') :]
    assert "total" not in peak[: peak.index("</figcaption>")]  # a sum of peaks means nothing


async def test_it_takes_a_custom_range_and_refuses_a_bad_one(viewer_client, org, tenant):
    await sampled_days(org, tenant)
    three_days = (timezone.now() - timedelta(days=3)).date()
    custom = await viewer_client.get(URL, {"range": "custom", "start": three_days, "end": three_days})
    assert figure(custom.content.decode(), "sessions-started") == "2"
    backwards = await viewer_client.get(
        URL, {"range": "custom", "start": three_days, "end": three_days - timedelta(days=1)}
    )
    assert backwards.status_code == 200 and "The end comes before the start." in backwards.content.decode()
    too_long = await viewer_client.get(
        URL, {"range": "custom", "start": three_days - timedelta(days=100), "end": three_days}
    )
    assert "At most 90 days" in too_long.content.decode()


async def test_it_exports_the_table_as_csv(viewer_client, org, tenant):
    await sampled_days(org, tenant)
    response = await viewer_client.get(URL, {"range": "7d", "format": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == 'attachment; filename="usage-acme.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 28  # 7 days of 6 hours
    assert sum(int(r["Sessions started"]) for r in rows) == 3
    assert sum(int(r["Refusals at the cap (429)"]) for r in rows) == 1
    assert not await AuditLog.objects.filter(org=org).aexists()  # a read, not a change


async def test_it_shows_one_project_or_every_project(viewer_client, org, tenant):
    await sampled_days(org, tenant)
    other = tenant.call("POST", "/org/projects", json={"name": "other"}).json()
    every = (await viewer_client.get(URL, {"range": "7d", "project": "all"})).content.decode()
    assert figure(every, "sessions-started") == "3" and "every project" in every
    none = (await viewer_client.get(URL, {"range": "7d", "project": other["id"]})).content.decode()
    assert figure(none, "sessions-started") == "0"
    assert "No samples in this range" in none


async def test_it_is_for_members_only(outsider_client, org):
    assert (await outsider_client.get(URL)).status_code == 404
