"""One module per resource of the service. Each exposes ``routes`` and ``seed(tenant)``.

Adding a resource: write ``resources/<name>.py`` like its siblings and add it to RESOURCES (demo data is
seeded in this order, so a resource that references another comes after it).
"""

from console.sandbox.resources import credentials, extensions, pools, profiles, projects, proxies

RESOURCES = [projects, credentials, proxies, extensions, profiles, pools]
