"""Plain-value writes for the live clock's hot path: rows in, SQL out, no model instances.

On the clock's path a tick writes a few rows of several tables, thousands of times
per replayed hour. ``QuerySet.bulk_create`` builds a model instance per row and
compiles its statement on every call, which costs more than the statement itself
at that size. These helpers prepare every value with the field's own
``get_db_prep_save`` (so they store exactly what the ORM would, on SQLite and on
PostgreSQL) and build each statement once per (table, columns). Callers pass
every column a row needs, ``auto_now_add`` fields included. Everything else
(reads with filters, anything off the hot path) stays with the ORM.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any

from django.db import connection, models

_MONEY_PLACES: dict[int, Decimal] = {}


@lru_cache(maxsize=64)
def _statement(
    model: type[models.Model], names: tuple[str, ...], returning: bool, n_rows: int
) -> tuple[str, tuple[models.Field[Any, Any], ...]]:
    meta = model._meta
    fields = tuple(meta.get_field(name) for name in names)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)  # type: ignore[union-attr]
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = f"INSERT INTO {connection.ops.quote_name(meta.db_table)} ({columns}) VALUES {', '.join([one] * n_rows)}"
    if returning:
        sql += f" RETURNING {connection.ops.quote_name(meta.pk.column)}"  # type: ignore[union-attr]
    return sql, fields  # type: ignore[return-value]


def insert_rows(model: type[models.Model], names: Sequence[str], rows: Iterable[Sequence[Any]], *, returning_pk: bool = False) -> list[int]:
    """INSERT ``rows`` (one value per name in ``names``; a foreign key by its id under
    the field's name) into ``model``'s table; returns the new primary keys, in row
    order, when ``returning_pk`` (one multi-row statement), else [] (executemany)."""
    rows = list(rows)
    if not rows:
        return []
    names = tuple(names)
    if returning_pk:
        sql, fields = _statement(model, names, True, len(rows))
        params = [f.get_db_prep_save(v, connection) for row in rows for f, v in zip(fields, row, strict=True)]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return [int(r[0]) for r in cursor.fetchall()]
    sql, fields = _statement(model, names, False, 1)
    prepared = [[f.get_db_prep_save(v, connection) for f, v in zip(fields, row, strict=True)] for row in rows]
    with connection.cursor() as cursor:
        cursor.executemany(sql, prepared)
    return []


def to_decimal(value: Any, places: int) -> Decimal:
    """A money column's raw database value as a Decimal with ``places`` decimals
    (SQLite hands NUMERIC columns back as float or int, as the ORM's own converter
    assumes; PostgreSQL as Decimal)."""
    quantum = _MONEY_PLACES.get(places)
    if quantum is None:
        quantum = _MONEY_PLACES.setdefault(places, Decimal(1).scaleb(-places))
    if isinstance(value, Decimal):
        return value.quantize(quantum)
    return Decimal(repr(value) if isinstance(value, float) else str(value)).quantize(quantum)


def column(model: type[models.Model], name: str) -> str:
    """The quoted column of field ``name`` of ``model``."""
    return str(connection.ops.quote_name(model._meta.get_field(name).column))  # type: ignore[union-attr]


def table(model: type[models.Model]) -> str:
    """The quoted table of ``model``."""
    return str(connection.ops.quote_name(model._meta.db_table))


@lru_cache(maxsize=64)
def _update_statement(
    model: type[models.Model], names: tuple[str, ...], keys: tuple[str, ...]
) -> tuple[str, tuple[models.Field[Any, Any], ...]]:
    meta = model._meta
    fields = tuple(meta.get_field(name) for name in (*names, *keys))
    sets = ", ".join(f"{connection.ops.quote_name(f.column)} = %s" for f in fields[: len(names)])  # type: ignore[union-attr]
    where = " AND ".join(f"{connection.ops.quote_name(f.column)} = %s" for f in fields[len(names) :])  # type: ignore[union-attr]
    return f"UPDATE {connection.ops.quote_name(meta.db_table)} SET {sets} WHERE {where}", fields  # type: ignore[return-value]


def update_rows(model: type[models.Model], names: Sequence[str], keys: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """UPDATE ``model``'s table, one prepared statement for all ``rows``: each row gives
    the new values of ``names`` followed by the values of ``keys`` that select the row
    (a row that matches nothing changes nothing)."""
    sql, fields = _update_statement(model, tuple(names), tuple(keys))
    prepared = [[f.get_db_prep_save(v, connection) for f, v in zip(fields, row, strict=True)] for row in rows]
    if prepared:
        with connection.cursor() as cursor:
            cursor.executemany(sql, prepared)
