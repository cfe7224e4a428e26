"""Throttling: request rates per user and per address, and failed-credential lockouts.

* DRF throttles (``REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"]``): every API
  request counts against ``user`` (authenticated, per user) or ``anon`` (per
  address); POST/PUT/PATCH/DELETE also against ``writes`` (per user). Over the
  rate: ``429`` with ``Retry-After`` (the seconds left in the window). Counted in
  fixed windows of the rate's period, one atomic increment per request (one Redis
  round trip), not DRF's list of timestamps read and written back whole on every
  request (two round trips and a pickled list of up to ``rate`` floats): at most
  ``rate`` requests start in any window, so at most twice ``rate`` in any period that
  straddles two windows.
* :class:`FailureLimiter`: wrong passwords (login page, token endpoint) and
  wrong API tokens, counted per client address (and per username for
  passwords) in a fixed window; once over the limit, ``429`` with
  ``Retry-After`` until the window ends: for passwords even right ones (so the
  limit cannot be probed), for tokens every wrong one (a valid token is never
  delayed by a cache lookup).

All of it lives in the cache and fails open: a cache outage (Redis down) lets
requests through rather than answering 500 (``marketplace.market.resilience``).
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest
from rest_framework import throttling
from rest_framework.request import Request

from marketplace.market.resilience import CACHE, cache_get, cache_set


def client_address(request: HttpRequest | Request) -> str:
    """The client's address as the socket saw it (``REMOTE_ADDR``; a proxy in front must set it)."""
    return str(request.META.get("REMOTE_ADDR") or "unknown")


@dataclass(frozen=True)
class FailureLimiter:
    """At most ``limit`` failures per key in a fixed window of ``window_s`` seconds."""

    scope: str
    limit: int
    window_s: int

    @classmethod
    def from_settings(cls, scope: str) -> FailureLimiter:
        limit, window = settings.FAILURE_LIMITS[scope]
        return cls(scope, int(limit), int(window))

    def _key(self, key: str) -> str:
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]  # any username is a safe cache key
        return f"fail:{self.scope}:{digest}"

    def retry_after(self, *keys: str) -> int | None:
        """Seconds until the window of the first blocked key ends, or None if none is blocked."""
        now = time.time()
        for key in keys:
            entry = cache_get(self._key(key))
            if entry and entry[0] >= self.limit:
                return max(1, math.ceil(entry[1] + self.window_s - now))
        return None

    def record_failure(self, *keys: str) -> None:
        now = time.time()
        for key in keys:
            entry = cache_get(self._key(key))
            count, start = (entry[0] + 1, entry[1]) if entry and now < entry[1] + self.window_s else (1, now)
            cache_set(self._key(key), (count, start), self.window_s)


def count_hit(key: str, window_s: int) -> int:
    """Add one to the counter ``key`` (created at 0 with a lifetime of ``window_s``) and return it.

    On Redis one round trip (``SET NX EX`` and ``INCR`` in a pipeline); on other caches
    ``add`` then ``incr``. Raises whatever the cache raises."""
    cache = caches["default"]
    if isinstance(cache, RedisCache):
        full = cache.make_and_validate_key(key)
        pipe = cache._cache.get_client(full, write=True).pipeline(transaction=False)
        pipe.set(full, 0, ex=window_s, nx=True)
        pipe.incr(full)
        return int(pipe.execute()[1])
    cache.add(key, 0, window_s)
    return int(cache.incr(key))


class _FixedWindow:
    """DRF's ``SimpleRateThrottle`` interface (rate, scope, ``get_cache_key``, ``wait``)
    counted in fixed windows of the rate's period; fails open (a cache failure lets the
    request through, and the cache is not tried again for ``RESILIENCE_RETRY_S``)."""

    rate: str | None
    num_requests: int
    duration: int

    def allow_request(self, request: Request, view: Any) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)  # type: ignore[attr-defined]
        if key is None or not CACHE.allows():
            return True
        now = time.time()
        start = int(now // self.duration) * self.duration
        self._wait = start + self.duration - now
        try:
            count = count_hit(f"{key}:{start}", self.duration)
        except Exception as exc:  # the cache (Redis) is down: throttling is best effort
            CACHE.trip(exc)
            return True
        return count <= self.num_requests

    def wait(self) -> float:
        """Seconds until the current window ends (``Retry-After``)."""
        return max(1.0, math.ceil(self._wait))


class UserRateThrottle(_FixedWindow, throttling.UserRateThrottle):
    """``user`` rate per authenticated user (``anon`` callers are left to :class:`AnonRateThrottle`)."""

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not (request.user and request.user.is_authenticated):
            return None
        return super().get_cache_key(request, view)


class AnonRateThrottle(_FixedWindow, throttling.AnonRateThrottle):
    """``anon`` rate per client address for unauthenticated requests."""


class WriteRateThrottle(_FixedWindow, throttling.UserRateThrottle):
    """``writes`` rate per user, counting only unsafe methods (bids, cancellations)."""

    scope = "writes"

    def allow_request(self, request: Request, view: Any) -> bool:
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return True
        return super().allow_request(request, view)


def login_retry_after(address: str, username: str) -> int | None:
    """Seconds a login (page or token endpoint) must wait: over ``FAILURE_LIMITS["login"]`` wrong
    passwords for this username, or ``FAILURE_LIMITS["login_ip"]`` from this address (higher:
    many people may share one address), else None."""
    by_user = FailureLimiter.from_settings("login").retry_after(f"user:{username[:150].lower()}")
    return by_user if by_user is not None else FailureLimiter.from_settings("login_ip").retry_after(f"ip:{address}")


def login_failed(address: str, username: str) -> None:
    FailureLimiter.from_settings("login").record_failure(f"user:{username[:150].lower()}")
    FailureLimiter.from_settings("login_ip").record_failure(f"ip:{address}")
