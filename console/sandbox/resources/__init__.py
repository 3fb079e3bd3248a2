"""The resources wing: one module per resource of the service, each exposing ``routes`` and, where it
has demo data, ``seed(tenant)``; and what serves sessions beside them (``cdp_proxy``, ``live_view``,
``login_browser``; their routes are added by the app), on ``sessions`` (a session's record and life, which
every module that starts, drives or ends one shares) and ``caps``.

Resources import core and chromium, and each other downwards (a session's sub-resources import
``sessions``, never the reverse); what a lower module needs from a higher one is handed in by
``app.assemble`` (docs/architecture.md, "The sandbox in wings").

Adding a resource: write ``resources/<name>.py`` like its siblings and add it to RESOURCES (demo data is
seeded in this order, so a resource that references another comes after it).
"""

from console.sandbox.resources import (
    api_keys,
    apps,
    audit_log_export_destinations,
    audit_logs,
    auth_connections,
    browser_computer,
    browser_files,
    browser_playwright,
    browser_processes,
    browser_replays,
    browser_tools,
    browser_vm,
    browser_webmcp,
    browsers,
    config_registry,
    credential_providers,
    credentials,
    deployments,
    extensions,
    invocations,
    pools,
    profiles,
    projects,
    proxies,
    search,
    telemetry,
    telemetry_destinations,
    vault_provider_configs,
    vaults,
)

RESOURCES = [
    projects,
    api_keys,
    telemetry_destinations,
    credential_providers,
    vault_provider_configs,
    vaults,
    credentials,
    proxies,
    extensions,
    profiles,
    auth_connections,
    pools,
    deployments,
    apps,
    invocations,
    browsers,
    browser_processes,
    browser_playwright,
    browser_webmcp,
    browser_files,
    browser_computer,
    browser_replays,
    browser_tools,
    browser_vm,
    telemetry,
    audit_logs,
    audit_log_export_destinations,
    config_registry,
    search,
]
