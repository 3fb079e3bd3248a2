from django.urls import path

from console.extensions import views

app_name = "extensions"

urlpatterns = [
    path("", views.extension_list, name="list"),
    path("new/", views.extension_create, name="create"),
    path("<str:id_or_name>/download/", views.extension_download, name="download"),
    path("<str:id_or_name>/delete/", views.extension_delete, name="delete"),
]
