from django.urls import path

from console.projects import views

app_name = "projects"

urlpatterns = [
    path("", views.project_list, name="list"),
    path("new/", views.project_create, name="create"),
    path("selector/", views.project_selector, name="selector"),
    path("select/", views.project_select, name="select"),
    path("<str:project_id>/", views.project_detail, name="detail"),
    path("<str:project_id>/limits/", views.project_limits, name="limits"),
    path("<str:project_id>/rename/", views.project_rename, name="rename"),
    path("<str:project_id>/status/", views.project_status, name="status"),
    path("<str:project_id>/delete/", views.project_delete, name="delete"),
]
