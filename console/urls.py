"""Root URLs. Org pages live under /o/<org_slug>/: add a resource with one `include` line below.

Every view under /o/<org_slug>/ must be wrapped in `console.web.decorators.org_view`; a test walks
this tree and requires 404 for non-members on every pattern.
"""

from django.contrib import admin
from django.urls import include, path

from console.audit import urls as audit_urls
from console.dashboard import views as dashboard_views
from console.members import urls as members_urls
from console.metrics import urls as metrics_urls
from console.org_settings import urls as org_settings_urls
from console.signin_pages import urls as signin_urls
from console.web import search

org_urlpatterns = [
    path("", dashboard_views.dashboard, name="dashboard"),
    path("search/", search.search, name="search"),
    path("browsers/", include("console.browsers.urls")),
    *members_urls.org_urlpatterns,
    *audit_urls.org_urlpatterns,
    *org_settings_urls.org_urlpatterns,
    *metrics_urls.org_urlpatterns,
    *signin_urls.org_urlpatterns,
    path("projects/", include("console.projects.urls")),
    path("proxies/", include("console.proxies.urls")),
    path("extensions/", include("console.extensions.urls")),
    path("credentials/", include("console.credentials.urls")),
    path("auth/", include("console.auth.urls")),
    path("profiles/", include("console.profiles.urls")),
    path("pools/", include("console.pools.urls")),
    path("apps/", include("console.apps.urls")),
    path("invocations/", include("console.invocations.urls")),
    path("deployments/", include("console.deployments.urls")),
    path("api_keys/", include("console.api_keys.urls")),
    path("telemetry_destinations/", include("console.telemetry_destinations.urls")),
    path("credential_providers/", include("console.credential_providers.urls")),
    path("vault_provider_configs/", include("console.vault_provider_configs.urls")),
    path("audit_logs/destinations/", include("console.audit_log_export_destinations.urls")),
    path("audit_logs/", include("console.audit_logs.urls")),
    path("vaults/", include("console.vaults.urls")),
    path("alerts/", include("console.alerts.urls")),
    path("usage/", include("console.usage.urls")),
]

# /healthz and /readyz are answered by console.web.middleware.ProbeMiddleware, ahead of the Host check.
urlpatterns = [
    path("", dashboard_views.home, name="home"),
    path("admin/", admin.site.urls),
    *metrics_urls.urlpatterns,
    path("", include(signin_urls.urlpatterns)),
    path("", include(members_urls.urlpatterns)),
    path("o/<slug:org_slug>/", include(org_urlpatterns)),
]

handler404 = "console.web.errors.not_found"
handler403 = "console.web.errors.forbidden"
handler500 = "console.web.errors.server_error"
