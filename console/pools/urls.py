from django.urls import path

from console.pools import views

app_name = "pools"

urlpatterns = [
    path("", views.pool_list, name="list"),
    path("new/", views.pool_create, name="create"),
    path("<str:pool_id>/", views.pool_detail, name="detail"),
    path("<str:pool_id>/edit/", views.pool_edit, name="edit"),
    path("<str:pool_id>/acquire/", views.pool_acquire, name="acquire"),
    path("<str:pool_id>/release/", views.pool_release, name="release"),
    path("<str:pool_id>/release-selected/", views.pool_release_selected, name="release-selected"),
    path("<str:pool_id>/flush/", views.pool_flush, name="flush"),
    path("<str:pool_id>/delete/", views.pool_delete, name="delete"),
]
