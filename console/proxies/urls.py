from django.urls import path

from console.proxies import views

app_name = "proxies"

urlpatterns = [
    path("", views.proxy_list, name="list"),
    path("new/", views.proxy_create, name="create"),
    path("<str:proxy_id>/", views.proxy_detail, name="detail"),
    path("<str:proxy_id>/rename/", views.proxy_rename, name="rename"),
    path("<str:proxy_id>/check/", views.proxy_check, name="check"),
    path("<str:proxy_id>/delete/", views.proxy_delete, name="delete"),
]
