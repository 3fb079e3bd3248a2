from django.urls import path

from console.alerts import views

app_name = "alerts"

urlpatterns = [
    path("", views.alert_list, name="list"),
    path("bell/", views.bell, name="bell"),
    path("<int:alert_id>/", views.alert_detail, name="detail"),
    path("<int:alert_id>/acknowledge/", views.acknowledge, name="acknowledge"),
    path("silences/", views.silence_create, name="silence-create"),
    path("silences/<int:silence_id>/end/", views.silence_end, name="silence-end"),
    path("rules/", views.rule_list, name="rules"),
    path("rules/new/", views.rule_create, name="rule-create"),
    path("rules/<int:rule_id>/", views.rule_edit, name="rule-edit"),
    path("rules/<int:rule_id>/delete/", views.rule_delete, name="rule-delete"),
    path("channels/", views.channel_list, name="channels"),
    path("channels/new/", views.channel_create, name="channel-create"),
    path("channels/<int:channel_id>/", views.channel_detail, name="channel"),
    path("channels/<int:channel_id>/delete/", views.channel_delete, name="channel-delete"),
    path("channels/<int:channel_id>/test/", views.channel_test, name="channel-test"),
]
