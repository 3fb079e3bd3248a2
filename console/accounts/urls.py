from django.contrib.auth import views as auth_views
from django.urls import path

from console.accounts import views

# Not org-scoped: the session itself and invite links.
urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/password/", views.PasswordChangeView.as_view(), name="password-change"),
    path("invite/<str:token>/", views.invite_accept, name="invite-accept"),
]

# Mounted under /o/<org_slug>/ by console/urls.py.
org_urlpatterns = [
    path("members/", views.members, name="members"),
    path("members/invite/", views.invite_create, name="invite-create"),
    path("members/invites/<int:invite_id>/revoke/", views.invite_revoke, name="invite-revoke"),
    path("members/<int:member_id>/role/", views.member_role, name="member-role"),
    path("members/<int:member_id>/remove/", views.member_remove, name="member-remove"),
    path("audit/", views.audit_log, name="audit"),
    path("settings/", views.org_settings, name="settings"),
    path("settings/test-connection/", views.org_test_connection, name="settings-test-connection"),
]
