"""The token endpoint (tokens expire: ``api.authentication.ExpiringTokenAuthentication``).

* :class:`TokenView` -- ``POST /api/auth/token/`` (username, password) returns a new
  token and its expiry; the caller's previous token stops working (rotation, as the README
  says); wrong passwords are limited per address and per username
  (``FAILURE_LIMITS["login"]``). ``DELETE`` revokes the caller's token.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from marketplace.api.authentication import token_expiry
from marketplace.api.fields import StrictJSON
from marketplace.api.parsers import SafeJSONParser
from marketplace.web.throttling import client_address, login_attempt, login_succeeded


class LoginSerializer(StrictJSON, AuthTokenSerializer):
    """Username and password (JSON strings)."""


_TokenOut = inline_serializer("TokenOut", {"token": serializers.CharField(), "expires_at": serializers.DateTimeField()})


class WrongCredentials(exceptions.AuthenticationFailed):
    """401 for a username and password that do not log in (RFC 9110, Sec. 15.5.2); the body keeps the
    field-error shape (``{"non_field_errors": [...]}``). A missing field stays a 400."""

    def __init__(self, errors: Any) -> None:
        super().__init__()
        self.detail = errors


class TokenView(APIView):
    """Obtain (POST, username + password) or revoke (DELETE) the caller's API token."""

    throttle_classes = ()  # wrong passwords are limited by FailureLimiter; right ones are not rate-limited
    parser_classes = (SafeJSONParser,)  # JSON only: one request schema, one content type
    serializer_class = LoginSerializer

    def get_permissions(self) -> list[Any]:
        return [IsAuthenticated()] if self.request.method == "DELETE" else [AllowAny()]

    def get_authenticators(self) -> list[Any]:
        return [] if getattr(self, "request", None) is not None and self.request.method == "POST" else super().get_authenticators()

    def get_authenticate_header(self, request: Request) -> str:
        return 'Token realm="api"'  # with a 401 for wrong credentials (POST has no authenticator to name it)

    @extend_schema(request=LoginSerializer, responses={200: _TokenOut})
    def post(self, request: Request) -> Response:
        address, username = client_address(request), str(request.data.get("username", ""))
        wait = login_attempt(address, username)  # counted before the password is hashed
        if wait is not None:
            raise exceptions.Throttled(wait, detail="Too many failed logins; try again later.")
        serializer = LoginSerializer(data=request.data, context={"request": request})
        if not serializer.is_valid():
            if "non_field_errors" in serializer.errors and set(serializer.errors) == {"non_field_errors"}:
                raise WrongCredentials(serializer.errors)  # both fields given, and they do not log in: 401
            raise exceptions.ValidationError(serializer.errors)
        login_succeeded(address, username)
        user = serializer.validated_data["user"]
        with transaction.atomic():  # rotate: a new key each time; the old one stops working at once
            Token.objects.filter(user=user).delete()
            token = Token.objects.create(user=user)
        return Response({"token": token.key, "expires_at": token_expiry(token)})

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request) -> Response:
        Token.objects.filter(user=request.user).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
