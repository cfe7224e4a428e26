"""Writes gathered to run as one statement, and the cursor a statement with large values runs on.

``infra.rows``' write helpers take a :class:`Batch`: on PostgreSQL a tick's writes that nothing
reads back are one statement (``market.services.clock``), instead of one round trip each while the market
row is locked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

from django.db import connection


class Batch:
    """Writes gathered to run together: on PostgreSQL as one statement when :meth:`run` is called
    (``WITH w0 AS (write), w1 AS (write) ... write``: one round trip, one statement to parse,
    plan and log, instead of one each); elsewhere (SQLite, which has no writes inside WITH) each
    write runs at once, as without a batch.

    The helpers of ``infra.rows`` that take ``batch=`` add their statement to it instead of running it. The
    writes of one batch see the database as it was before the statement (one snapshot), so no
    two of them may touch the same rows, and none may depend on another's effect; the order of
    their parameters is the order they were added. A caller that reads what a batch writes runs
    it first.
    """

    def __init__(self) -> None:
        self.deferring = connection.vendor == "postgresql"
        self._parts: list[tuple[str, list[Any]]] = []

    def add(self, sql: str, params: Sequence[Any]) -> None:
        """Add one write (no RETURNING: nothing reads its result)."""
        self._parts.append((sql, list(params)))

    def __len__(self) -> int:
        return len(self._parts)

    def run(self) -> None:
        """Run the gathered writes as one statement (none when nothing was added), and empty the batch."""
        parts, self._parts = self._parts, []
        if not parts:
            return
        *first, (last_sql, _) = parts
        sql = last_sql if not first else (
            "WITH " + ", ".join(f"w{k} AS ({part})" for k, (part, _) in enumerate(first)) + " " + last_sql)
        params = [v for _, part_params in parts for v in part_params]
        with cursor_for(params) as cursor:
            cursor.execute(sql, params)


@contextlib.contextmanager
def cursor_for(params: Sequence[Any]) -> Iterator[Any]:
    """Django's cursor for a statement with ``params``. On PostgreSQL, a statement that carries
    bytes or JSON (a Plan, the engine's state: hundreds of kilobytes) binds its parameters on
    the server (psycopg's ``Cursor``, Django's ``ServerBindingCursor``): Django's default
    client-side binding writes them into the SQL text as an escaped literal, which the client
    builds and the server parses again (about four times the CPU on both sides for a Plan of
    5,000 jobs). The cursor is wrapped as Django wraps its own (query logging, execute
    wrappers, error translation)."""
    if connection.vendor == "postgresql" and any(isinstance(v, _server_bound()) for v in params):
        from django.db.backends.postgresql.base import ServerBindingCursor

        connection.ensure_connection()
        with connection.wrap_database_errors:
            cursor = connection._prepare_cursor(ServerBindingCursor(connection.connection))
    else:
        cursor = connection.cursor()
    with cursor:
        yield cursor


@lru_cache(maxsize=1)
def _server_bound() -> tuple[type, ...]:
    """The prepared value types :func:`_cursor` binds on the server: bytes (a ``BinaryField``'s
    ``psycopg.Binary``) and JSON (a ``JSONField``'s ``Jsonb``)."""
    import psycopg
    from psycopg.types.json import Json, Jsonb

    return (bytes, memoryview, psycopg.Binary, Json, Jsonb)
