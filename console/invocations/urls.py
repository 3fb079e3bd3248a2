from django.urls import path

from console.invocations import views

app_name = "invocations"

urlpatterns = [
    path("", views.invocation_list, name="list"),
    path("<str:invocation_id>/", views.invocation_detail, name="detail"),
    path("<str:invocation_id>/events/", views.invocation_events, name="events"),
    path("<str:invocation_id>/cancel/", views.invocation_cancel, name="cancel"),
    path("<str:invocation_id>/browsers/", views.invocation_browsers, name="browsers"),
    path("<str:invocation_id>/browsers/delete/", views.invocation_delete_browsers, name="delete-browsers"),
]
