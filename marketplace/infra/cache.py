"""Django's Redis cache with one client object per connection pool.

``django.core.cache.backends.redis.RedisCacheClient.get_client`` builds a new
``redis.Redis`` for every cache operation, and each one copies redis-py's table of
response callbacks (about 170 entries): measured at about 0.6 ms of CPU per cached
operation, two per throttled API request (``bench/bench_requests.py``). A
``redis.Redis`` is safe to share between threads (connections come from its pool, which
redis-py also resets after a fork), so one per pool is kept.
"""

from __future__ import annotations

import threading
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class SharedClientRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}
        self._clients_lock = threading.Lock()

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            with self._clients_lock:
                client = self._clients.get(index)
                if client is None:
                    client = self._clients[index] = self._client(connection_pool=self._get_connection_pool(write))
        return client


class SharedClientRedisCache(RedisCache):
    """``BACKEND`` for ``CACHES``: Django's ``RedisCache`` with :class:`SharedClientRedisCacheClient`."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedClientRedisCacheClient
