"""Project-wide pytest fixtures.

Celery runs eagerly in tests (services are tested directly); the integration
tests under tests/integration switch to a real broker and a real worker.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _celery_eager(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    if request.node.get_closest_marker("integration"):
        yield
        return
    from marketplace.celery import app

    old = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old


@pytest.fixture(autouse=True)
def _fresh_process_caches():  # type: ignore[no-untyped-def]
    # Each test's database reuses primary keys; bids kept in memory must not leak across.
    from marketplace.api import conditional
    from marketplace.api.authentication import forget_tokens
    from marketplace.market import adapters, selectors

    adapters.forget_bids()
    selectors.forget_caches()
    forget_tokens()
    conditional.LOCAL.clear()
    yield


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):  # type: ignore[no-untyped-def]
    # PBKDF2's deliberate slowness (~0.3 s a user) is not under test here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_local_cache(request: pytest.FixtureRequest, settings):  # type: ignore[no-untyped-def]
    # Throttle counters and failed-login counts live in the cache: outside the integration
    # tests each test gets an empty in-process cache, even when REDIS_URL is set (CI).
    if request.node.get_closest_marker("integration"):
        yield
        return
    from django.core.cache import cache

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "tests"}}
    cache.clear()
    yield
