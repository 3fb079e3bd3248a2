"""The sidebar: sections in groups, by role, a section shown only once its URL resolves."""

import pytest

from console import nav
from console.web import context_processors


@pytest.fixture
def sections(monkeypatch):
    """The section list, for a test to add lines to (the nav caches are emptied around it)."""
    lines = list(nav.SECTIONS)
    monkeypatch.setattr(context_processors, "SECTIONS", lines)
    context_processors._nav.cache_clear()
    context_processors._nav_groups.cache_clear()
    yield lines
    context_processors._nav.cache_clear()
    context_processors._nav_groups.cache_clear()


def labels(groups):
    return [(group["label"], [s["label"] for s in group["sections"]]) for group in groups]


def test_it_groups_the_sections_with_the_overview_first(sections):
    assert labels(context_processors._nav_groups("acme", "admin")) == [
        ("", ["Overview", "Alerts", "Usage"]),
        (
            "Browsers",
            ["Sessions", "Session wall", "Pools", "Profiles", "Proxies", "Extensions", "Telemetry export"],
        ),
        ("Auth", ["Connections", "Credentials", "Providers", "Vaults"]),
        ("Apps", ["Apps", "Invocations", "Deployments"]),
        ("Organization", ["Projects", "Members", "API keys", "Audit", "Service audit", "Settings"]),
    ]


def test_it_shows_a_viewer_only_what_a_viewer_may_open(sections):
    organization = dict(labels(context_processors._nav_groups("acme", "viewer")))["Organization"]
    assert organization == ["Projects", "Members"]


def test_it_slots_a_new_section_in_by_one_line_once_its_url_resolves(sections):
    sections.append(nav.Section("Secrets", "secrets:list", "admin", nav.ORGANIZATION))
    sections.append(nav.Section("Browsers again", "browsers:list", "viewer", nav.BROWSERS))
    groups = dict(labels(context_processors._nav_groups("acme", "admin")))
    assert "Secrets" not in groups["Organization"]  # no such URL yet: not shown
    assert groups["Browsers"][-1] == "Browsers again"


async def test_it_draws_the_sidebar_with_the_current_page_marked(viewer_client):
    body = (await viewer_client.get("/o/acme/credentials/")).content.decode()
    assert '<details class="nav-group" data-nav-group="Auth" open>' in body
    assert '<a href="/o/acme/credentials/" aria-current="page">Credentials</a>' in body
    assert body.index('href="/o/acme/">Overview') < body.index('data-nav-group="Browsers"')
