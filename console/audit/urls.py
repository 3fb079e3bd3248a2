from django.urls import path

from console.audit import views

# Mounted under /o/<org_slug>/ by console/urls.py.
org_urlpatterns = [
    path("audit/", views.audit_log, name="audit"),
]
