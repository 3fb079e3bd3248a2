from django.urls import path

from console.apps import views

app_name = "apps"

urlpatterns = [
    path("", views.app_list, name="list"),
    path("sample/deploy/", views.deploy_sample, name="deploy-sample"),
    path("<str:app_name>/", views.app_detail, name="detail"),
    path("<str:app_name>/versions/<str:version>/", views.app_detail, name="version"),
    path(
        "<str:app_name>/versions/<str:version>/actions/<str:action_name>/invoke/",
        views.invoke,
        name="invoke",
    ),
]
