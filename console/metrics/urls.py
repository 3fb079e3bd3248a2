from django.urls import path

from console.metrics import views

# /metrics at the root (console/urls.py); the tokens' pages under /o/<org_slug>/ beside the org's settings.
urlpatterns = [path("metrics", views.metrics, name="metrics")]
org_urlpatterns = [
    path("settings/metrics/", views.tokens, name="metrics-tokens"),
    path("settings/metrics/<int:token_id>/revoke/", views.revoke, name="metrics-token-revoke"),
]
