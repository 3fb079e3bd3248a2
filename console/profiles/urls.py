from django.urls import path

from console.profiles import views

app_name = "profiles"

urlpatterns = [
    path("", views.profile_list, name="list"),
    path("new/", views.profile_create, name="create"),
    path("<str:profile_id>/rename/", views.profile_rename, name="rename"),
    path("<str:profile_id>/delete/", views.profile_delete, name="delete"),
    path("<str:profile_id>/download/", views.profile_download, name="download"),
]
