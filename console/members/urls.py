from django.urls import path

from console.members import views

# Not org-scoped: an invite link.
urlpatterns = [
    path("invite/<str:token>/", views.invite_accept, name="invite-accept"),
]

# Mounted under /o/<org_slug>/ by console/urls.py.
org_urlpatterns = [
    path("members/", views.members, name="members"),
    path("members/invite/", views.invite_create, name="invite-create"),
    path("members/invites/<int:invite_id>/revoke/", views.invite_revoke, name="invite-revoke"),
    path("members/<int:member_id>/role/", views.member_role, name="member-role"),
    path("members/<int:member_id>/remove/", views.member_remove, name="member-remove"),
]
