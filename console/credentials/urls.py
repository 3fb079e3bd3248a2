from django.urls import path

from console.credentials import views

app_name = "credentials"

urlpatterns = [
    path("", views.credential_list, name="list"),
    path("new/", views.credential_create, name="create"),
    path("<str:credential_id>/", views.credential_detail, name="detail"),
    path("<str:credential_id>/edit/", views.credential_edit, name="edit"),
    path("<str:credential_id>/delete/", views.credential_delete, name="delete"),
    path("<str:credential_id>/totp/", views.credential_totp, name="totp"),
]
