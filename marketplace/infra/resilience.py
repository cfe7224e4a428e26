"""Outages of Redis (Celery's broker, the cache) never fail a request.

* :func:`publish_task` -- enqueue a Celery task by name; when the broker does
  not answer, log and return False instead of raising. The write that asked
  for the task has committed already (tasks are published after commit), and
  the market sweeper (``market.services.sweeper``) redoes whatever the lost task would
  have done, so the caller answers success. Under eager Celery (tests, no
  ``REDIS_URL``) the task runs in-process and its exceptions propagate.
* :func:`cache_get` / :func:`cache_set` / :func:`cache_add` / :func:`cache_delete` (and ``_many``) -- the
  cache as an optimisation only: errors count as a miss / a no-op / "added".

Each has a :class:`Breaker`: after a failure the service is not tried again for
``RESILIENCE_RETRY_S`` seconds, so an outage costs one timeout, not one per
request.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache

log = logging.getLogger(__name__)


class Breaker:
    """A circuit breaker: ``open()`` after a failure, closed again ``retry_s`` seconds later."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._until = 0.0
        self._lock = threading.Lock()

    def allows(self) -> bool:
        return time.monotonic() >= self._until

    def trip(self, exc: BaseException) -> None:
        retry_s = float(getattr(settings, "RESILIENCE_RETRY_S", 5.0))
        with self._lock:
            first = self.allows()
            self._until = time.monotonic() + retry_s
        if first:
            log.warning("%s unavailable (%s: %s); not retried for %.0f s", self.name, type(exc).__name__, exc, retry_s)

    def reset(self) -> None:
        self._until = 0.0


BROKER = Breaker("Celery broker")
CACHE = Breaker("cache")


def publish_task(name: str, *args: Any) -> bool:
    """Enqueue the registered task ``name`` with ``args``; False if the broker is unreachable.

    Raises:
        whatever the task raises when Celery runs eagerly (tests).
    """
    from marketplace.celery import app

    task = app.tasks[name]
    if app.conf.task_always_eager:
        task.delay(*args)
        return True
    if not BROKER.allows():
        log.info("broker down: %s%s left to the sweeper", name, args)
        return False
    try:
        task.delay(*args)
    except Exception as exc:  # kombu OperationalError, redis errors, OSError: any broker failure
        BROKER.trip(exc)
        return False
    return True


def cache_get(key: str) -> Any:
    """``cache.get(key)``, or None (a miss) when the cache fails."""
    if not CACHE.allows():
        return None
    try:
        return cache.get(key)
    except Exception as exc:  # redis ConnectionError/TimeoutError and the like
        CACHE.trip(exc)
        return None


def cache_set(key: str, value: Any, timeout: float) -> None:
    """Django's cache ``set``; nothing when the cache fails."""
    if not CACHE.allows():
        return
    try:
        cache.set(key, value, timeout)
    except Exception as exc:
        CACHE.trip(exc)


def cache_get_many(keys: list[str]) -> dict[str, Any]:
    """Django's cache ``get_many`` (one round trip to Redis), or {} (every key a miss) when the cache fails."""
    if not keys or not CACHE.allows():
        return {}
    try:
        return dict(cache.get_many(keys))
    except Exception as exc:
        CACHE.trip(exc)
        return {}


def cache_set_many(values: dict[str, Any], timeout: float) -> None:
    """Django's cache ``set_many``; nothing when the cache fails."""
    if not values or not CACHE.allows():
        return
    try:
        cache.set_many(values, timeout)
    except Exception as exc:
        CACHE.trip(exc)


def cache_add(key: str, value: Any, timeout: float) -> bool:
    """``cache.add(...)``: True if the key was absent and is now set; True as well when the cache
    fails (fail open: the caller goes on as if it had set it)."""
    if not CACHE.allows():
        return True
    try:
        return bool(cache.add(key, value, timeout))
    except Exception as exc:
        CACHE.trip(exc)
        return True


def cache_delete(key: str) -> None:
    """``cache.delete(key)``; nothing when the cache fails."""
    if not CACHE.allows():
        return
    try:
        cache.delete(key)
    except Exception as exc:
        CACHE.trip(exc)
