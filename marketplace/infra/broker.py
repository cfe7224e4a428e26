"""The Redis broker transport the workers, beat and the web use: kombu's, with one race closed.

When a worker loses Redis while a task is in flight (acknowledged late, so its message is
still "delivered" on the consumer's channel) and the channel is in the middle of a BRPOP,
Celery's consumer closes the broken connection twice (``Consumer.on_connection_error_after_connected``:
``connection.collect()``, then ``connection.close()``). The first pass fails inside the channel's
BRPOP read (a connection error, swallowed) but still detaches the transport
(``Transport.client = None``); the second pass reaches ``restore_unacked`` for the in-flight
message, which needs a new Redis client, and kombu builds its parameters from the detached
transport: ``AttributeError: 'NoneType' object has no attribute 'hostname'``. An AttributeError
is not one of the transport's connection errors, so nothing catches it and the worker stops
("Unrecoverable error"), with beat's ticks and every clearing. Celery 5.7.0 / kombu 5.7.0 (the
newest releases) still do this; ``--without-gossip --without-mingle --without-heartbeat`` does
not avoid it (the pidbox and task channels remain).

Here a channel whose transport is detached refuses to build a client with a
``redis.exceptions.ConnectionError``, one of the transport's ``connection_errors``: Celery's
cleanup swallows it and reconnects. The message is not lost: it stays in Redis's unacked set
and is restored after the visibility timeout, as for any worker lost mid-task (the tasks are
idempotent, ``market.tasks``). Selected by ``CELERY_BROKER_TRANSPORT`` in settings.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):  # type: ignore[misc]
    """kombu's Redis channel; never builds a client from a closed (detached) transport."""

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        transport = self.connection
        if transport is None or transport.client is None:
            raise RedisConnectionError("the broker connection is closed (its transport is detached)")
        params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)
        return params


class Transport(kombu_redis.Transport):  # type: ignore[misc]
    """kombu's Redis transport with :class:`Channel`."""

    Channel = Channel
