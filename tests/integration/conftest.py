"""Real services: PostgreSQL and Redis from DATABASE_URL / REDIS_URL, and a real Celery worker.

In CI (``CI`` set) missing services are a failure; elsewhere the tests are
skipped with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def _require(condition: bool, why: str) -> None:
    if condition:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI requires real services: {why}")
    pytest.skip(f"{why} (set DATABASE_URL=postgres://... and REDIS_URL=redis://... to run)")


@pytest.fixture
def real_services(transactional_db):  # type: ignore[no-untyped-def]
    _require(connection.vendor == "postgresql", "DATABASE_URL does not point at PostgreSQL")
    _require(bool(os.environ.get("REDIS_URL")), "REDIS_URL is not set")
    import redis

    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    try:
        client.ping()
    except redis.RedisError as exc:
        _require(False, f"Redis does not answer: {exc}")
    client.flushdb()  # no stale messages from an earlier run on this database
    return client


@pytest.fixture(scope="session", autouse=True)
def _test_database_left_alone(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    """At the session's end, wait (up to 10 s) until no other session uses the test database. A worker or
    clock the tests stopped has exited, but its PostgreSQL backend may still be closing when pytest-django
    drops the database right after this: the drop then fails ("is being accessed by other users") and
    leaves the database behind, with only a warning. Sessions still there after 10 s are named in a warning."""
    yield
    if connection.vendor != "postgresql":
        return
    query = ("SELECT pid, backend_start, left(query, 120) FROM pg_stat_activity"
             " WHERE datname = current_database() AND pid <> pg_backend_pid()")
    with django_db_blocker.unblock():
        deadline = time.monotonic() + 10
        with connection.cursor() as cursor:
            cursor.execute(query)
            others = cursor.fetchall()
            while others and time.monotonic() < deadline:
                time.sleep(0.05)
                cursor.execute(query)
                others = cursor.fetchall()
        connection.close()
    if others:
        warnings.warn(f"sessions still on the test database after 10 s: {others}", stacklevel=1)


@pytest.fixture
def celery_worker_process(real_services):  # type: ignore[no-untyped-def]
    """A real `celery worker` subprocess on the test database and the Redis broker."""
    from marketplace.celery import app

    s = connection.settings_dict
    url = f"postgres://{s['USER']}:{s['PASSWORD'] or ''}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    env = dict(os.environ, DATABASE_URL=url, PYTHONPATH=str(ROOT))
    with open(ROOT / "var" / "test-worker.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "marketplace", "worker", "--pool=solo", "--loglevel=info",
             "--without-gossip", "--without-mingle", "--hostname", f"test-{os.getpid()}@%h"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while not app.control.ping(timeout=1.0):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the Celery worker did not start; see {log.name}")
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
            connection.close()


@pytest.fixture
def postgres(transactional_db):  # type: ignore[no-untyped-def]
    """PostgreSQL only (row locks and unique-index waits are what is under test), Celery eager."""
    _require(connection.vendor == "postgresql", "DATABASE_URL does not point at PostgreSQL")
    from marketplace.celery import app

    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = old
