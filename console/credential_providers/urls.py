from django.urls import path

from console.credential_providers import views

app_name = "credential_providers"

urlpatterns = [
    path("", views.provider_list, name="list"),
    path("new/", views.provider_create, name="create"),
    path("picker/", views.provider_picker, name="picker"),
    path("<str:provider_id>/", views.provider_detail, name="detail"),
    path("<str:provider_id>/test/", views.provider_test, name="test"),
    path("<str:provider_id>/delete/", views.provider_delete, name="delete"),
]
