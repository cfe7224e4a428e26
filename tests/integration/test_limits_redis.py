"""Parallel wrong passwords get at most the limit's answers
(the attempt counted with Redis' INCRBY before the hash), and with Redis unreachable the limits
count per process instead of switching off."""

from __future__ import annotations

import os
import threading

import pytest
from django.core.cache import caches
from django.db import connection
from rest_framework.test import APIClient

from marketplace.infra import resilience
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.setup import market_create, tenant_create
from marketplace.web import throttling

pytestmark = pytest.mark.integration
PASSWORD = "pw-for-tests-1"


@pytest.fixture
def redis_cache(real_services, settings):  # type: ignore[no-untyped-def]
    settings.CACHES = {"default": {"BACKEND": "marketplace.infra.cache.SharedClientRedisCache",
                                   "LOCATION": os.environ["REDIS_URL"]}}
    settings.FAILURE_LIMITS = {"login": (5, 300), "login_ip": (500, 300), "token": (20, 300)}
    caches["default"].clear()
    resilience.CACHE.reset()
    yield caches["default"]
    caches["default"].clear()


@pytest.fixture
def dave(real_services) -> Tenant:  # type: ignore[no-untyped-def]
    market = market_create(name="limits", resources={"map": 4}, hierarchy={"root": 1.0, "root.a": 1.0})
    return tenant_create(market=market, username="dave", password=PASSWORD, queue=market.queues.get(name="a"), deposit=0)


def test_parallel_wrong_passwords_on_redis_get_at_most_the_limits_answers(redis_cache, dave):
    codes: list[int] = []
    lock = threading.Lock()

    def guess() -> None:
        try:
            code = APIClient().post("/api/auth/token/", {"username": " dave", "password": "wrong"}).status_code
        finally:
            connection.close()  # this thread's own connection: left open, it keeps the test database from being dropped
        with lock:
            codes.append(code)

    threads = [threading.Thread(target=guess) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert codes.count(401) <= 5 and codes.count(429) >= 15, codes
    assert APIClient().post("/api/auth/token/", {"username": "dave", "password": PASSWORD}).status_code == 429  # locked


def test_with_redis_unreachable_the_limits_count_per_process(real_services, settings, dave):
    settings.CACHES = {"default": {"BACKEND": "marketplace.infra.cache.SharedClientRedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0", "OPTIONS": {"socket_connect_timeout": 0.2}}}
    settings.FAILURE_LIMITS = {"login": (5, 300), "login_ip": (500, 300), "token": (20, 300)}
    resilience.CACHE.reset()
    throttling.LOCAL_FALLBACK.clear()
    try:
        codes = [APIClient().post("/api/auth/token/", {"username": "dave", "password": "wrong"}).status_code for _ in range(7)]
    finally:
        resilience.CACHE.reset()
        throttling.LOCAL_FALLBACK.clear()
    assert codes == [401] * 5 + [429, 429]


def test_a_count_on_redis_is_set_nx_ex_then_incrby_even_after_the_scripts_are_flushed(redis_cache):  # type: ignore[no-untyped-def]
    client = redis_cache._cache.get_client(redis_cache.make_and_validate_key("x"), write=True)
    client.script_flush()  # the server does not know the script: it is sent whole
    assert [throttling.count_hit("hits", 60) for _ in range(3)] == [1, 2, 3]
    assert throttling.count_hit("hits", 60, -1) == 2
    assert 0 < client.ttl(redis_cache.make_and_validate_key("hits")) <= 60  # the lifetime set when it was created
    assert throttling.count_hit("fresh", 7, -1) == -1 and 0 < client.ttl(redis_cache.make_and_validate_key("fresh")) <= 7
