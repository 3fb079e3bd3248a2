from django.contrib.auth import views as auth_views
from django.urls import include, path

from console.demo_idp import views

urlpatterns = [
    path("", views.index, name="index"),
    path("accounts/login/", auth_views.LoginView.as_view(template_name="demo_idp/login.html"), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="/"), name="logout"),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("_idp/users/", views.control_user, name="control-user"),
    path("_idp/faults/", views.control_faults, name="control-faults"),
]
