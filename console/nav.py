"""The sections of an organization, in sidebar order. Add one line per resource.

A section is shown when its URL name resolves (so a line may land before its view) and the member's
role is at least `min_role`. Every URL takes the `org_slug` keyword. Sections of the same `group` are
drawn together under that heading, groups in the order they first appear; a section without a group
(the overview) stands above them all.
"""

from typing import NamedTuple

BROWSERS = "Browsers"
AUTH = "Auth"
APPS = "Apps"
ORGANIZATION = "Organization"


class Section(NamedTuple):
    label: str
    url_name: str
    min_role: str = "viewer"
    group: str = ""


class Action(NamedTuple):
    """Something the command palette offers to do (console/web/search.py): the page where it is done, for the
    role that page asks for (the page checks again). ``words``: more terms it is found by."""

    label: str
    url_name: str
    min_role: str
    words: str = ""
    anchor: str = ""


ACTIONS = [
    Action("New session", "browsers:create", "operator", "start browser create"),
    Action("New pool", "pools:create", "admin", "create browser pool"),
    Action("New auth connection", "auth:create", "operator", "create login"),
    Action("New credential", "credentials:create", "admin", "create secret password"),
    Action("New proxy", "proxies:create", "admin", "create"),
    Action("New deployment", "deployments:create", "admin", "deploy upload app create"),
    Action("Invite member", "members", "admin", "invite user add people", "invite"),
]

SECTIONS = [
    Section("Overview", "dashboard", "viewer"),
    Section("Alerts", "alerts:list", "viewer"),
    Section("Usage", "usage:index", "viewer"),
    Section("Sessions", "browsers:list", "viewer", BROWSERS),
    Section("Session wall", "browsers:wall", "viewer", BROWSERS),
    Section("Pools", "pools:list", "viewer", BROWSERS),
    Section("Profiles", "profiles:list", "viewer", BROWSERS),
    Section("Proxies", "proxies:list", "viewer", BROWSERS),
    Section("Extensions", "extensions:list", "viewer", BROWSERS),
    Section("Telemetry export", "telemetry_destinations:list", "viewer", BROWSERS),
    Section("Connections", "auth:list", "viewer", AUTH),
    Section("Credentials", "credentials:list", "viewer", AUTH),
    Section("Providers", "credential_providers:list", "viewer", AUTH),
    Section("Vaults", "vaults:list", "viewer", AUTH),
    Section("Apps", "apps:list", "viewer", APPS),
    Section("Invocations", "invocations:list", "viewer", APPS),
    Section("Deployments", "deployments:list", "viewer", APPS),
    Section("Projects", "projects:list", "viewer", ORGANIZATION),
    Section("Members", "members", "viewer", ORGANIZATION),
    Section("API keys", "api_keys:list", "admin", ORGANIZATION),
    Section("Audit", "audit", "admin", ORGANIZATION),
    Section("Service audit", "audit_logs:list", "admin", ORGANIZATION),
    Section("Settings", "settings", "admin", ORGANIZATION),
]
