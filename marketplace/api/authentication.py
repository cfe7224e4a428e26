"""API tokens that expire and cannot be guessed at speed (no view imports here: DRF loads
this module while its settings are being read).

:class:`ExpiringTokenAuthentication` -- a token older than ``API_TOKEN_TTL_S``
(default 24 h) is refused ("Token expired"; ``api.auth.TokenView`` issues a new
one); wrong tokens are counted per client address and, over
``FAILURE_LIMITS["token"]``, answered 429 with ``Retry-After`` (counted on
failure only: a valid token costs no cache round trip).

A valid token's row (with its user, the user's tenant and role, one query) is remembered in
this process for ``API_TOKEN_CACHE_S`` seconds (default 5; 0 turns it off), so a client
polling several endpoints a second costs one lookup per few seconds, not one per request.
Each request gets its own copies of the objects. Deleting a token (revocation,
rotation, a deleted user) drops it from this process at once; other processes may
accept it for at most ``API_TOKEN_CACHE_S`` more seconds, and likewise for a user made
inactive. Expiry is checked on every request.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.db.models.base import ModelState
from django.db.models.signals import post_delete
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.request import Request

from marketplace.infra import instances
from marketplace.market import roles
from marketplace.market.models.tenants import Tenant
from marketplace.web.throttling import FailureLimiter, client_address

_REMEMBERED: dict[str, tuple[float, Token]] = {}  # key -> (monotonic time read, token with user and tenant)
_REMEMBERED_LOCK = threading.Lock()
_REMEMBERED_MAX = 10_000


def forget_tokens(*keys: str) -> None:
    """Drop remembered tokens (all when no key is given)."""
    with _REMEMBERED_LOCK:
        if not keys:
            _REMEMBERED.clear()
        for key in keys:
            _REMEMBERED.pop(key, None)


def _token_deleted(sender: Any, instance: Token, **kwargs: Any) -> None:
    forget_tokens(instance.key)


post_delete.connect(_token_deleted, sender=Token, dispatch_uid="marketplace-forget-deleted-token")


def _shallow(obj: Any) -> Any:
    """A shallow copy of a model instance: its attributes, its state and its cache of related objects
    (what ``copy.copy`` copies, without the pickling protocol it goes through for a model)."""
    out = obj.__class__.__new__(obj.__class__)
    out.__dict__.update(obj.__dict__)
    state = ModelState.__new__(ModelState)
    state.__dict__.update(obj._state.__dict__)
    state.fields_cache = dict(obj._state.fields_cache)
    out._state = state
    return out


def _copy(token: Token) -> Token:
    """A copy of ``token`` and of its user and tenant, for one request (nothing shared between requests)."""
    out = _shallow(token)
    user = _shallow(token.user)
    tenant = user._state.fields_cache.get("tenant")
    if tenant is not None:
        user._state.fields_cache["tenant"] = _shallow(tenant)
    out._state.fields_cache["user"] = user
    return out


@lru_cache(maxsize=1)
def _token_statement() -> tuple[str, tuple[int, int], tuple[Any, Any, Any]]:
    """``Token.objects.select_related("user", "user__tenant").annotate(cluster_manager=Exists(<the user in
    the cluster managers' group>)).get(key=...)`` as one statement built once (compiling it cost more than
    it ran, on every token this process has not remembered): the SQL (parameters: the group's name, the
    key), where the user's and the tenant's columns start, and the three row readers."""
    User = get_user_model()
    q = connection.ops.quote_name
    (token_cols, token), (user_cols, user), (tenant_cols, tenant) = (instances.selected(m) for m in (Token, User, Tenant))
    members = User.groups.through._meta  # type: ignore[attr-defined]
    t, u, n, g, ug = (q(m._meta.db_table) for m in (Token, User, Tenant, Group, members.model))

    def col(table: str, model: Any, name: str) -> str:
        return f"{table}.{q(model._meta.get_field(name).column)}"

    member = (f"EXISTS(SELECT 1 FROM {g} INNER JOIN {ug} ON {col(g, Group, 'id')} = {col(ug, members.model, 'group')} "
              f"WHERE {col(g, Group, 'name')} = %s AND {col(ug, members.model, 'user')} = {col(t, Token, 'user')})")
    sql = (f"SELECT {token_cols}, {user_cols}, {tenant_cols}, {member} FROM {t} INNER JOIN {u} ON {col(t, Token, 'user')} = "
           f"{col(u, User, User._meta.pk.name)} LEFT OUTER JOIN {n} ON {col(u, User, User._meta.pk.name)} = {col(n, Tenant, 'user')} "
           f"WHERE {col(t, Token, 'key')} = %s")
    first_user = len(Token._meta.concrete_fields)
    return sql, (first_user, first_user + len(User._meta.concrete_fields)), (token, user, tenant)


def _read_token(key: str) -> Token:
    """The token ``key`` with its user, the user's tenant (cached as select_related caches them, both ways)
    and ``cluster_manager``: one statement (:func:`_token_statement`).

    Raises:
        Token.DoesNotExist: no such key.
    """
    sql, (first_user, first_tenant), (read_token, read_user, read_tenant) = _token_statement()
    with connection.cursor() as cursor:
        cursor.execute(sql, [roles.CLUSTER_MANAGER, key])
        row = cursor.fetchone()
    if row is None:
        raise Token.DoesNotExist("Token matching query does not exist.")
    token, user = read_token(row[:first_user]), read_user(row[first_user:first_tenant])
    tenant = read_tenant(row[first_tenant:-1]) if row[first_tenant] is not None else None
    token._state.fields_cache["user"] = user
    user._state.fields_cache["auth_token"] = token
    user._state.fields_cache["tenant"] = tenant
    if tenant is not None:
        tenant._state.fields_cache["user"] = user
    token.cluster_manager = bool(row[-1])  # type: ignore[attr-defined]
    return token


def token_expiry(token: Token) -> datetime:
    return token.created + timedelta(seconds=settings.API_TOKEN_TTL_S)


class ExpiringTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>`` with expiry and a limit on wrong keys per address."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        ttl = float(getattr(settings, "API_TOKEN_CACHE_S", 5.0))
        now = time.monotonic()
        hit = _REMEMBERED.get(key)
        if hit is not None and now - hit[0] < ttl:
            token = _copy(hit[1])
            return token.user, token
        try:
            token = _read_token(key)
        except Token.DoesNotExist:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        # the role, read in the token's query: is_cluster_manager answers from the user object
        token.user.__dict__["_is_cluster_manager"] = bool(token.user.is_superuser or token.cluster_manager)
        if ttl > 0:
            with _REMEMBERED_LOCK:
                if len(_REMEMBERED) >= _REMEMBERED_MAX:
                    _REMEMBERED.clear()
                _REMEMBERED[key] = (now, _copy(token))
        return token.user, token

    def authenticate(self, request: Request) -> tuple[Any, Token] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.lower().startswith("token "):
            return None
        try:
            user, token = super().authenticate(request)  # type: ignore[misc]
        except exceptions.AuthenticationFailed:
            # Counted on failure only, so a valid token costs no cache round trip. The first
            # FAILURE_LIMITS["token"] wrong tokens of a window are answered 401 (as the login's
            # limit answers its wrong passwords); after that, 429 instead of an answer
            # (guessing stops paying).
            wait = FailureLimiter.from_settings("token").attempt(client_address(request))
            if wait is not None:
                raise exceptions.Throttled(wait, detail="Too many invalid tokens from this address.") from None
            raise
        if token_expiry(token) <= timezone.now():
            raise exceptions.AuthenticationFailed("Token expired; obtain a new one from /api/auth/token/.")
        return user, token
