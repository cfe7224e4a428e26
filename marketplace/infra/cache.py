"""Django's Redis cache with one client object per connection pool, and an atomic compare-and-delete.

``django.core.cache.backends.redis.RedisCacheClient.get_client`` builds a new
``redis.Redis`` for every cache operation, and each one copies redis-py's table of
response callbacks (about 170 entries): measured at about 0.6 ms of CPU per cached
operation, two per throttled API request (``bench/bench_requests.py``). A
``redis.Redis`` is safe to share between threads (connections come from its pool, which
redis-py also resets after a fork), so one per pool is kept.

``delete_if(key, value)`` deletes a key only while it still holds ``value``, in one Lua script run by
the server (``EVAL``): a ``get`` then a ``delete`` leaves an instant between the two in which the key
may expire and be taken by someone else, whose key the ``delete`` would then remove (a lock's
release; ``auction.admission`` gives its preview slots back with it).
"""

from __future__ import annotations

import threading
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient

_DELETE_IF = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


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

    def delete_if(self, key: Any, value: Any) -> bool:
        """Delete ``key`` (already made by the cache) if it holds ``value``, atomically; True if deleted."""
        client = self.get_client(key, write=True)
        return bool(client.eval(_DELETE_IF, 1, key, self._serializer.dumps(value)))


class SharedClientRedisCache(RedisCache):
    """``BACKEND`` for ``CACHES``: Django's ``RedisCache`` with :class:`SharedClientRedisCacheClient`."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedClientRedisCacheClient

    def delete_if(self, key: str, value: Any, version: int | None = None) -> bool:
        """Delete ``key`` only if it holds ``value`` (compared as stored), in one atomic step on the
        server; True if it was deleted. Raises what redis-py raises when the server is unreachable."""
        return bool(self._cache.delete_if(self.make_and_validate_key(key, version=version), value))
