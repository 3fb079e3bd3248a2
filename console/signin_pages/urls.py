from allauth.account import views as allauth_views
from django.contrib.auth import views as auth_views
from django.urls import include, path

from console.signin_pages import views

# Not org-scoped: the password login, logout and password change, single sign-on's two ends, the user's own
# sessions and two-factor devices (allauth.mfa's views and templates, in the console's layout), and the
# allauth names its pages link to, pointed at the same login, logout and password pages.
urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/password/", views.PasswordChangeView.as_view(), name="password-change"),
    path("sso/", views.sso_begin, name="sso-begin"),
    path("sso/callback/", views.sso_callback, name="sso-callback"),
    path("account/sessions/", views.session_list, name="signin-sessions"),
    path("account/two-factor/", include("allauth.mfa.urls")),
    path("account/reauthenticate/", allauth_views.reauthenticate, name="account_reauthenticate"),
    path("account/inactive/", allauth_views.account_inactive, name="account_inactive"),
    path("login/", views.LoginView.as_view(), name="account_login"),
    path("logout/", auth_views.LogoutView.as_view(), name="account_logout"),
    path("account/password/", views.PasswordChangeView.as_view(), name="account_change_password"),
]

# Mounted under /o/<org_slug>/ by console/urls.py.
org_urlpatterns = [
    path("sso/", views.org_sso, name="org-sso"),
    path("settings/sign-in/", views.sign_in_settings, name="sign-in-settings"),
    path("members/<int:member_id>/sign-out/", views.member_sign_out, name="member-sign-out"),
]
