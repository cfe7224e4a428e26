"""The login pages (the site's and the admin's) with one limit on wrong passwords (``throttling.login_attempt``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found

from marketplace.market import selectors
from marketplace.web.throttling import client_address, login_attempt, login_succeeded


def _locked(wait: int) -> HttpResponse:
    response = HttpResponse(f"Too many failed logins. Try again in {wait} seconds.", status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(wait)
    return response


def throttled_login(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``view`` (a login page) behind the one limit every login path shares: a POST is counted before
    its password is hashed and refused with 429 past the limit; a POST that logged the user in is
    forgiven. The admin's login (``/admin/login/``) is wrapped with it, so a username locked on one
    path is locked on every path (the site's page, the admin's, the token endpoint)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        address, username = client_address(request), request.POST.get("username", "")
        wait = login_attempt(address, username)
        if wait is not None:
            return _locked(wait)
        response = view(request, *args, **kwargs)
        if request.user.is_authenticated and response.status_code in (301, 302, 303):
            login_succeeded(address, username)
        return response

    return wrapped


class ThrottledLoginView(auth_views.LoginView):
    """Django's login view; over ``FAILURE_LIMITS["login"]`` wrong passwords per username or
    ``FAILURE_LIMITS["login_ip"]`` per address, a 429 page with ``Retry-After`` (right passwords included, until the window ends).
    Each attempt is counted before its password is hashed (``throttling.login_attempt``)."""

    template_name = "registration/login.html"

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = login_attempt(client_address(request), request.POST.get("username", ""))
        if wait is not None:
            return _locked(wait)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: Any) -> HttpResponse:
        """The form again with its errors, answered 401 when a username and a password were given
        and do not log in (a missing field stays 200: nothing was checked)."""
        response = super().form_invalid(form)
        if form.cleaned_data.get("username") and form.cleaned_data.get("password"):
            response.status_code = 401
            response["WWW-Authenticate"] = 'Form realm="login"'  # no challenge a browser answers by itself
        return response

    def form_valid(self, form: Any) -> HttpResponse:
        login_succeeded(client_address(self.request), self.request.POST.get("username", ""))
        return super().form_valid(form)


def not_found(request: HttpRequest, exception: Exception | None = None, rest: str = "") -> HttpResponse:
    """404 handler: JSON under /api/ (the API's documented error shape), the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception or Exception("not found"))


def clock_json(request: HttpRequest) -> HttpResponse:
    """``GET /clock.json``: the market clock for the header of every page (``static/js/clock.js``):
    ``{"sim_time": float s, "speed": simulated s per wall s (0 while stopped), "running": bool}``
    (``market.selectors.market_clock``); 401 when not logged in, 404 before a market exists."""
    if not request.user.is_authenticated:
        return JsonResponse({"detail": "Log in to read the market clock."}, status=401)
    market = selectors.market_or_none()
    if market is None:
        return JsonResponse({"detail": "No market yet."}, status=404)
    response = JsonResponse(selectors.market_clock(market=market))
    response["Cache-Control"] = "private, no-store"
    return response
