from django.urls import path

from console.api_keys import views

app_name = "api_keys"

urlpatterns = [
    path("", views.api_key_list, name="list"),
    path("<str:key_id>/rename/", views.api_key_rename, name="rename"),
    path("<str:key_id>/rotate/", views.api_key_rotate, name="rotate"),
    path("<str:key_id>/delete/", views.api_key_delete, name="delete"),
]
