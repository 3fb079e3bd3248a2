"""The sections of an organization, in header order. Add one line per resource.

A section is shown when its URL name resolves (so a line may land before its view) and the member's
role is at least `min_role`. Every URL takes the `org_slug` keyword.
"""

from typing import NamedTuple


class Section(NamedTuple):
    label: str
    url_name: str
    min_role: str = "viewer"


SECTIONS = [
    Section("Dashboard", "dashboard", "viewer"),
    Section("Browsers", "browsers:list", "viewer"),
    Section("Projects", "projects:list", "viewer"),
    Section("Proxies", "proxies:list", "viewer"),
    Section("Extensions", "extensions:list", "viewer"),
    Section("Credentials", "credentials:list", "viewer"),
    Section("Auth", "auth:list", "viewer"),
    Section("Providers", "credential_providers:list", "viewer"),
    Section("Vaults", "vaults:list", "viewer"),
    Section("Profiles", "profiles:list", "viewer"),
    Section("Pools", "pools:list", "viewer"),
    Section("Apps", "apps:list", "viewer"),
    Section("Invocations", "invocations:list", "viewer"),
    Section("Deployments", "deployments:list", "viewer"),
    Section("Telemetry export", "telemetry_destinations:list", "viewer"),
    Section("API keys", "api_keys:list", "admin"),
    Section("Members", "members", "viewer"),
    Section("Audit", "audit", "admin"),
    Section("Service audit", "audit_logs:list", "admin"),
    Section("Settings", "settings", "admin"),
]
