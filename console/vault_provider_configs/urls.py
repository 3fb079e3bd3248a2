from django.urls import path

from console.vault_provider_configs import views

app_name = "vault_provider_configs"

urlpatterns = [
    path("", views.config_list, name="list"),
    path("new/", views.config_create, name="create"),
    path("<str:config_id>/", views.config_detail, name="detail"),
    path("<str:config_id>/delete/", views.config_delete, name="delete"),
]
