from django.urls import path

from console.vaults import views

app_name = "vaults"

urlpatterns = [
    path("", views.vault_list, name="list"),
    path("<str:vault_id>/", views.vault_detail, name="detail"),
    path("<str:vault_id>/delete/", views.vault_delete, name="delete"),
    path("<str:vault_id>/items/<str:key>/", views.item_detail, name="item"),
    path("<str:vault_id>/items/<str:key>/delete/", views.item_delete, name="item-delete"),
]
