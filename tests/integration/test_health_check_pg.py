"""The PostgreSQL backend's health check (``infra.postgresql.base``): no statement on a quiet idle
connection, Django's ``SELECT 1`` (and a new connection) once the server has ended it, and Django's
check whenever the connection is not idle outside a transaction."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection, transaction
from django.db.backends.postgresql import base as django_postgresql

from tests.integration.conftest import _require

pytestmark = pytest.mark.integration


@pytest.fixture
def counted(transactional_db, monkeypatch):  # type: ignore[no-untyped-def]
    _require(connection.vendor == "postgresql", "DATABASE_URL does not point at PostgreSQL")  # a failure under CI
    calls: list[bool] = []
    original = django_postgresql.DatabaseWrapper.is_usable

    def is_usable(self):  # type: ignore[no-untyped-def]
        calls.append(True)
        return original(self)

    monkeypatch.setattr(django_postgresql.DatabaseWrapper, "is_usable", is_usable)
    connection.ensure_connection()
    yield calls
    connection.close()


def _new_request() -> None:
    connection.close_if_unusable_or_obsolete()  # what a request's start does (close_old_connections)


def test_a_quiet_idle_connection_is_checked_without_a_statement(counted):  # type: ignore[no-untyped-def]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    _new_request()
    first = connection.connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT 2")
    assert counted == [] and connection.connection is first and connection.health_check_done


def test_a_connection_the_server_ended_is_replaced_before_the_request_reads(counted):  # type: ignore[no-untyped-def]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    s = connection.settings_dict
    with psycopg.connect(host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, user=s["USER"], password=s["PASSWORD"] or None,
                         dbname=s["NAME"], autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    time.sleep(0.2)  # the server's goodbye reaches the socket
    _new_request()
    old = connection.connection
    with connection.cursor() as cursor:  # no error: the ended connection was found and replaced first
        cursor.execute("SELECT 3")
        assert cursor.fetchone()[0] == 3
    assert counted == [True] and connection.connection is not old


def test_a_connection_inside_a_transaction_gets_djangos_check(counted):  # type: ignore[no-untyped-def]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        assert not connection._quiet()
    assert connection._quiet()
