"""The broker transport: a channel of a closed connection raises a connection error, never an
AttributeError, when asked for a Redis client (the integration test stops Redis under a worker)."""

from __future__ import annotations

import pytest
from kombu import Connection
from redis.exceptions import ConnectionError as RedisConnectionError

from marketplace.infra.broker import Channel, Transport


def test_the_settings_select_the_transport_when_redis_is_the_broker() -> None:
    conn = Connection("redis://127.0.0.1:1/0", transport="marketplace.infra.broker:Transport")
    assert isinstance(conn.transport, Transport) and conn.transport.Channel is Channel
    assert conn.transport.driver_type == "redis"


def test_a_detached_transport_gives_a_connection_error_the_worker_survives() -> None:
    # given a channel (no Redis needed to build one lazily) whose connection is then closed
    conn = Connection("redis://127.0.0.1:1/0", transport="marketplace.infra.broker:Transport")
    channel = Channel.__new__(Channel)  # no connect: the constructor pings Redis
    channel.connection = conn.transport
    assert channel._connparams()["port"] == 1  # attached: kombu's parameters
    conn.close()  # what the consumer's cleanup does before restoring the unacked messages
    # when a client is needed (restore_unacked, ack), then a connection error, which Celery catches
    with pytest.raises(RedisConnectionError):
        channel._connparams()
    assert RedisConnectionError in Transport.connection_errors
