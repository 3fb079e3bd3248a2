from django.urls import path

from console.deployments import views

app_name = "deployments"

urlpatterns = [
    path("", views.deployment_list, name="list"),
    path("new/", views.deployment_create, name="create"),
    path("<str:deployment_id>/", views.deployment_detail, name="detail"),
    path("<str:deployment_id>/events/", views.deployment_events, name="events"),
    path("<str:deployment_id>/delete/", views.deployment_delete, name="delete"),
]
