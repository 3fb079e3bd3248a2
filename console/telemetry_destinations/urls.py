from django.urls import path

from console.telemetry_destinations import views

app_name = "telemetry_destinations"

urlpatterns = [
    path("", views.destination_list, name="list"),
    path("new/", views.destination_create, name="create"),
    path("<str:destination_id>/", views.destination_detail, name="detail"),
    path("<str:destination_id>/delete/", views.destination_delete, name="delete"),
]
