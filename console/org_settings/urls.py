from django.urls import path

from console.org_settings import views

# Mounted under /o/<org_slug>/ by console/urls.py; the sign-in settings tab is console/signin's.
org_urlpatterns = [
    path("settings/", views.org_settings, name="settings"),
    path("settings/test-connection/", views.org_test_connection, name="settings-test-connection"),
]
