"""One module per resource of the service. Each exposes ``routes`` and ``seed(tenant)``.

Adding a resource: write ``resources/<name>.py`` like its siblings and add it to RESOURCES (demo data is
seeded in this order, so a resource that references another comes after it).
"""

from console.sandbox.resources import (
    apps,
    auth_connections,
    browser_computer,
    browser_files,
    browser_processes,
    browser_replays,
    browsers,
    credentials,
    deployments,
    extensions,
    invocations,
    pools,
    profiles,
    projects,
    proxies,
    telemetry,
)

RESOURCES = [
    projects,
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
    telemetry,
]
