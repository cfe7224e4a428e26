"""Routes every page shares: login and logout."""

from django.contrib.auth import views as auth_views
from django.urls import path

from marketplace.web.views import ThrottledLoginView

urlpatterns = [
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
