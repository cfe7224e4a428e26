"""Routes every page shares: login, logout and the header's market clock."""

from django.contrib.auth import views as auth_views
from django.urls import path

from marketplace.web.views import ThrottledLoginView, clock_json

urlpatterns = [
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("clock.json", clock_json, name="clock"),
]
