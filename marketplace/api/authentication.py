"""API tokens that expire and cannot be guessed at speed (no view imports here: DRF loads
this module while its settings are being read).

:class:`ExpiringTokenAuthentication` -- a token older than ``API_TOKEN_TTL_S``
(default 24 h) is refused ("Token expired"; ``api.auth.TokenView`` issues a new
one); wrong tokens are counted per client address and, over
``FAILURE_LIMITS["token"]``, answered 429 with ``Retry-After`` (counted on
failure only: a valid token costs no cache round trip).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.request import Request

from marketplace.throttling import FailureLimiter, client_address


def token_expiry(token: Token) -> datetime:
    return token.created + timedelta(seconds=settings.API_TOKEN_TTL_S)


class ExpiringTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>`` with expiry and a limit on wrong keys per address."""

    def authenticate(self, request: Request) -> tuple[Any, Token] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.lower().startswith("token "):
            return None
        try:
            user, token = super().authenticate(request)  # type: ignore[misc]
        except exceptions.AuthenticationFailed:
            # Counted on failure only, so a valid token costs no cache round trip; over the
            # limit, wrong tokens get 429 instead of an answer (guessing stops paying).
            limiter = FailureLimiter.from_settings("token")
            address = client_address(request)
            limiter.record_failure(address)
            wait = limiter.retry_after(address)
            if wait is not None:
                raise exceptions.Throttled(wait, detail="Too many invalid tokens from this address.") from None
            raise
        if token_expiry(token) <= timezone.now():
            raise exceptions.AuthenticationFailed("Token expired; obtain a new one from /api/auth/token/.")
        return user, token
