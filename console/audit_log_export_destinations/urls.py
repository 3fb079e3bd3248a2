from django.urls import path

from console.audit_log_export_destinations import views

app_name = "audit_log_export_destinations"

urlpatterns = [
    path("", views.destination_list, name="list"),
    path("new/", views.destination_create, name="create"),
    path("<str:export_destination_id>/", views.destination_detail, name="detail"),
    path("<str:export_destination_id>/test/", views.destination_test, name="test"),
    path("<str:export_destination_id>/status/", views.destination_status, name="status"),
    path("<str:export_destination_id>/delete/", views.destination_delete, name="delete"),
]
