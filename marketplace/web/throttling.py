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

Counts live in the shared cache (Redis). No limit switches off when it is down: request rates
and credential limits then count in this process's memory (:data:`LOCAL_FALLBACK`, logged once;
each process counts alone, so a limit of N allows up to N per process), and the cache is not
tried again for ``RESILIENCE_RETRY_S`` (``marketplace.infra.resilience``). Rates once failed
open instead: about 1,400 bids passed the 120/min write limit in a 25 s Redis outage.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.forms import UsernameField
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest
from redis.exceptions import NoScriptError
from rest_framework import throttling
from rest_framework.request import Request

from marketplace.infra.resilience import CACHE

log = logging.getLogger(__name__)


def client_address(request: HttpRequest | Request) -> str:
    """The client's address as the socket saw it (``REMOTE_ADDR``; a proxy in front must set it)."""
    return str(request.META.get("REMOTE_ADDR") or "unknown")


# ``SET NX EX`` then ``INCRBY``, as one script: one command sent and one answer read (a pipeline of the
# two cost about 0.09 ms of this process's CPU per count, the script 0.05).
_HIT = b"redis.call('SET', KEYS[1], 0, 'EX', ARGV[2], 'NX') return redis.call('INCRBY', KEYS[1], ARGV[1])"
_HIT_SHA = hashlib.sha1(_HIT).hexdigest()  # Redis names scripts by their SHA-1


def count_hit(key: str, window_s: int, delta: int = 1) -> int:
    """Add ``delta`` to the counter ``key`` (created at 0 with a lifetime of ``window_s``) and return it.

    On Redis one round trip (``SET NX EX`` and ``INCRBY`` in one script, run by its hash, sent whole
    when the server does not know it yet); on other caches ``add`` then ``incr``. Raises whatever the
    cache raises."""
    cache = caches["default"]
    if isinstance(cache, RedisCache):
        full = cache.make_and_validate_key(key)
        client = cache._cache.get_client(full, write=True)
        try:
            return int(client.execute_command("EVALSHA", _HIT_SHA, 1, full, delta, window_s))
        except NoScriptError:
            return int(client.execute_command("EVAL", _HIT, 1, full, delta, window_s))
    cache.add(key, 0, window_s)
    return int(cache.incr(key, delta))


LOCAL_FALLBACK = LocMemCache("credential-limits-fallback", {"MAX_ENTRIES": 100_000})
"""Where request and failure counts go while the shared cache is down: this process's memory (each
process then counts alone, so a limit of N allows up to N per process: weaker, never off)."""
_fallback_logged = threading.Event()


def _local_count(key: str, window_s: int, delta: int) -> int:
    if not _fallback_logged.is_set():
        _fallback_logged.set()
        log.warning("cache down: request and credential limits count in a per-process limiter until it is back")
    LOCAL_FALLBACK.add(key, 0, window_s)
    return int(LOCAL_FALLBACK.incr(key, delta))


def _count(key: str, window_s: int, delta: int = 1) -> int:
    """Add ``delta`` to the counter ``key`` atomically and return it: in the shared cache, or,
    while it is down, in :data:`LOCAL_FALLBACK` (no limit switches off)."""
    if CACHE.allows():
        try:
            count = count_hit(key, window_s, delta)
        except Exception as exc:  # Redis down: trip the breaker, count locally
            CACHE.trip(exc)
        else:
            _fallback_logged.clear()
            return count
    return _local_count(key, window_s, delta)


@dataclass(frozen=True)
class FailureLimiter:
    """At most ``limit`` attempts per key in fixed windows of ``window_s`` seconds.

    An attempt is counted *before* the work it guards (a password hash, a token lookup),
    with the cache's atomic increment: of any number of parallel attempts, at most
    ``limit`` get past :meth:`attempt` in a window. A right password gives its count back
    (:meth:`forgive`), so only failures use the limit up.
    """

    scope: str
    limit: int
    window_s: int

    @classmethod
    def from_settings(cls, scope: str) -> FailureLimiter:
        limit, window = settings.FAILURE_LIMITS[scope]
        return cls(scope, int(limit), int(window))

    def _key(self, key: str, start: int) -> str:
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]  # any username is a safe cache key
        return f"fail:{self.scope}:{digest}:{start}"

    def _window(self) -> tuple[int, int]:
        """(start of the current window, seconds until it ends, at least 1)."""
        now = time.time()
        start = int(now // self.window_s) * self.window_s
        return start, max(1, math.ceil(start + self.window_s - now))

    def attempt(self, *keys: str) -> int | None:
        """Count one attempt against each key; seconds until the window ends if any key is
        now over the limit (the attempt must be refused), else None."""
        start, wait = self._window()
        over = [_count(self._key(k, start), self.window_s) > self.limit for k in keys]
        return wait if any(over) else None

    def forgive(self, *keys: str) -> None:
        """Give back the attempt :meth:`attempt` counted (it succeeded)."""
        start, _ = self._window()
        for k in keys:
            _count(self._key(k, start), self.window_s, -1)


class _FixedWindow:
    """DRF's ``SimpleRateThrottle`` interface (rate, scope, ``get_cache_key``, ``wait``)
    counted in fixed windows of the rate's period; while the cache is down, counted per
    process (:func:`_count`), as the credential limits are."""

    rate: str | None
    num_requests: int
    duration: int

    def allow_request(self, request: Request, view: Any) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)  # type: ignore[attr-defined]
        if key is None:
            return True
        now = time.time()
        start = int(now // self.duration) * self.duration
        self._wait = start + self.duration - now
        return _count(f"{key}:{start}", self.duration) <= self.num_requests

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


def login_username(raw: object) -> str:
    """The username as the login form and the token endpoint read it (whitespace stripped,
    NFKC-normalised: ``UsernameField``), lower-cased: the key its failures count under, so
    ``" dave"`` and ``"dave\t"`` are ``dave``."""
    return str(UsernameField().to_python(str(raw or "")))[:150].lower()


def _login_keys(address: str, username: str) -> tuple[tuple[FailureLimiter, str], ...]:
    return ((FailureLimiter.from_settings("login"), f"user:{login_username(username)}"),
            (FailureLimiter.from_settings("login_ip"), f"ip:{address}"))


def login_attempt(address: str, username: str) -> int | None:
    """Count a login attempt (page or token endpoint) before its password is checked; the
    seconds it must wait if that puts it over ``FAILURE_LIMITS["login"]`` attempts for this
    username or ``FAILURE_LIMITS["login_ip"]`` from this address (higher: many people may
    share one address), else None. A successful login calls :func:`login_succeeded`."""
    waits = [wait for limiter, key in _login_keys(address, username) if (wait := limiter.attempt(key)) is not None]
    return max(waits) if waits else None


def login_succeeded(address: str, username: str) -> None:
    """The attempt :func:`login_attempt` counted had the right password: it does not count."""
    for limiter, key in _login_keys(address, username):
        limiter.forgive(key)
