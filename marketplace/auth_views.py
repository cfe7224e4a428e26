"""The login page with a limit on wrong passwords (``throttling.FailureLimiter``, scope ``login``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse

from marketplace.throttling import FailureLimiter, client_address


class ThrottledLoginView(auth_views.LoginView):
    """Django's login view; over ``FAILURE_LIMITS["login"]`` wrong passwords per address or per
    username, a 429 page with ``Retry-After`` (right passwords included, until the window ends)."""

    template_name = "registration/login.html"

    def _keys(self, request: HttpRequest) -> tuple[str, str]:
        return f"ip:{client_address(request)}", f"user:{request.POST.get('username', '')[:150].lower()}"

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = FailureLimiter.from_settings("login").retry_after(*self._keys(request))
        if wait is not None:
            response = HttpResponse(
                f"Too many failed logins. Try again in {wait} seconds.", status=429, content_type="text/plain; charset=utf-8"
            )
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: Any) -> HttpResponse:
        FailureLimiter.from_settings("login").record_failure(*self._keys(self.request))
        return super().form_invalid(form)
