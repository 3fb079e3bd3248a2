from django.urls import include, path

from console.browsers import inspector, views, wall

app_name = "browsers"

urlpatterns = [
    path("", views.session_list, name="list"),
    path("new/", views.session_create, name="create"),
    path("delete-selected/", views.session_delete_selected, name="delete-selected"),
    # Before <session_id>/: "wall" is not a session.
    path("wall/", wall.wall, name="wall"),
    path("wall/stream/", wall.wall_stream, name="wall-stream"),
    path("wall/badges/", wall.wall_badges, name="wall-badges"),
    path("<str:session_id>/", views.session_detail, name="detail"),
    path("<str:session_id>/delete/", views.session_delete, name="delete"),
    path("<str:session_id>/telemetry/", views.telemetry_history, name="telemetry"),
    path("<str:session_id>/telemetry/stream/", views.telemetry_stream, name="telemetry-stream"),
    path("<str:session_id>/telemetry/enable/", views.telemetry_enable, name="telemetry-enable"),
    path("<str:session_id>/telemetry/har/", inspector.har, name="telemetry-har"),
    path("<str:session_id>/telemetry/requests/<str:request_key>/", inspector.request_detail, name="request"),
    path("<str:session_id>/", include("console.browsers.panes.urls")),
]
