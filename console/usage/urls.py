from django.urls import path

from console.usage import views

app_name = "usage"
urlpatterns = [path("", views.usage, name="index")]
