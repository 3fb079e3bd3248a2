from django.urls import path

from console.auth import views

app_name = "auth"

urlpatterns = [
    path("", views.connection_list, name="list"),
    path("new/", views.connection_create, name="create"),
    path("<str:connection_id>/", views.connection_detail, name="detail"),
    path("<str:connection_id>/settings/", views.connection_settings, name="settings"),
    path("<str:connection_id>/history/", views.connection_history, name="history"),
    path("<str:connection_id>/flow/", views.connection_flow, name="flow"),
    path("<str:connection_id>/flow/<str:which>/", views.connection_flow_link, name="flow-link"),
    path("<str:connection_id>/login/", views.connection_login, name="login"),
    path("<str:connection_id>/submit/", views.connection_submit, name="submit"),
    path("<str:connection_id>/events/", views.connection_events, name="events"),
    path("<str:connection_id>/delete/", views.connection_delete, name="delete"),
]
