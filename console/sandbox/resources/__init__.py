"""One module per resource of the service. Each exposes ``routes`` and ``seed(tenant)``.

Adding a resource: write ``resources/<name>.py`` like its siblings and add it to RESOURCES (demo data is
seeded in this order, so a resource that references another comes after it).
"""

from console.sandbox.resources import (
    api_keys,
    apps,
    audit_logs,
    auth_connections,
    browser_computer,
    browser_files,
    browser_processes,
    browser_replays,
    browser_tools,
    browser_vm,
    browsers,
    credential_providers,
    credentials,
    deployments,
    extensions,
    invocations,
    pools,
    profiles,
    projects,
    proxies,
    telemetry,
    telemetry_destinations,
    vaults,
)

RESOURCES = [
    projects,
    api_keys,
    telemetry_destinations,
    credential_providers,
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
    browser_files,
    browser_computer,
    browser_replays,
    browser_tools,
    browser_vm,
    telemetry,
    audit_logs,
]
