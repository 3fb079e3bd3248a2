from django.urls import path

from console.audit_logs import views

app_name = "audit_logs"

urlpatterns = [
    path("", views.entry_list, name="list"),
    path("export/", views.export_download, name="export"),
    path("export/chunk/", views.export_chunk, name="export-chunk"),
]
