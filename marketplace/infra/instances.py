"""The live clock's hot-path reads: rows read or locked by key as model instances, from statements built once.

``Model.objects.get(pk=...)`` (and ``select_for_update``, ``only``, ``defer``) compiles its statement on
every call, which on the clock's path costs more than the round trip. These build each statement once
per (model, columns, lock) and pass each value through the converters the ORM itself applies, so the
instances are the ORM's (``Model.from_db``). Writes of plain rows are ``infra.rows``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from django.db import connection, models


def lock_suffix() -> str:
    """The row lock of a raw SELECT: PostgreSQL's ``FOR NO KEY UPDATE``, the lock an UPDATE of the
    row takes, which lets other transactions insert rows that reference it meanwhile (a bid's
    new job its market, while a tick holds the market; ``infra.locking``); SQLite locks the
    database at ``BEGIN IMMEDIATE`` instead."""
    if connection.vendor == "postgresql":
        return " FOR NO KEY UPDATE"
    return " FOR UPDATE" if connection.features.has_select_for_update else ""


@lru_cache(maxsize=32)
def _select_statement(
    model: type[models.Model], exclude: tuple[str, ...], lock: bool, only: tuple[str, ...] = (), n_ids: int = 1,
    keys: tuple[str, ...] = (),
) -> tuple[str, tuple[str, ...], tuple[Any, ...]]:
    """SELECT by primary key (``n_ids`` of them), or by equality on the fields ``keys`` when given."""
    meta = model._meta
    q = connection.ops.quote_name
    fields = [f for f in meta.concrete_fields if f.name not in exclude and (not only or f.attname in only or f.name in only)]
    columns = ", ".join(q(f.column) for f in fields)
    suffix = lock_suffix() if lock else ""
    if keys:
        where = " AND ".join(f"{q(meta.get_field(k).column)} = %s" for k in keys)  # type: ignore[union-attr]
    else:
        where = f"{q(meta.pk.column)} " + ("= %s" if n_ids == 1 else f"IN ({', '.join(['%s'] * n_ids)})")  # type: ignore[union-attr]
    sql = f"SELECT {columns} FROM {q(meta.db_table)} WHERE {where}{suffix}"
    return sql, tuple(f.attname for f in fields), _converters(model, fields)


def _converters(model: type[models.Model], fields: Sequence[models.Field[Any, Any]]) -> tuple[Any, ...]:
    """Per field, its column and the converters the ORM applies to a value read from it."""
    converters = []
    for f in fields:
        col = f.get_col(model._meta.db_table)
        converters.append((col, tuple(connection.ops.get_db_converters(col) + col.get_db_converters(connection))))
    return tuple(converters)


@lru_cache(maxsize=8)
def _increment_statement(model: type[models.Model], counter: str, exclude: tuple[str, ...]) -> tuple[str, tuple[str, ...], tuple[Any, ...]]:
    meta = model._meta
    q = connection.ops.quote_name
    fields = [f for f in meta.concrete_fields if f.name not in exclude]
    column = q(meta.get_field(counter).column)  # type: ignore[union-attr]
    sql = (f"UPDATE {q(meta.db_table)} SET {column} = {column} + 1 WHERE {q(meta.pk.column)} = %s"  # type: ignore[union-attr]
           f" RETURNING {', '.join(q(f.column) for f in fields)}")
    return sql, tuple(f.attname for f in fields), _converters(model, fields)


def increment_row(model: type[models.Model], pk: int, *, counter: str, exclude: Sequence[str] = ()) -> Any:
    """Add one to the integer field ``counter`` of row ``pk`` and return the row as it is then
    (``exclude``: fields left deferred), in one statement built once: ``UPDATE ... RETURNING``.
    The UPDATE takes the row lock the caller's transaction then holds (``FOR NO KEY UPDATE``'s
    mode on PostgreSQL: ``counter`` is no key; SQLite: the transaction's ``BEGIN IMMEDIATE``), so
    this is ``get_row(..., for_update=True)`` and the increment in one round trip.

    Raises:
        model.DoesNotExist: no such row.
    """
    return _one_instance(model, pk, *_increment_statement(model, counter, tuple(exclude)))


@lru_cache(maxsize=8)
def _returning(model: type[models.Model], exclude: tuple[str, ...]) -> tuple[str, tuple[str, ...], tuple[Any, ...]]:
    q = connection.ops.quote_name
    fields = [f for f in model._meta.concrete_fields if f.name not in exclude]
    return f" RETURNING {', '.join(q(f.column) for f in fields)}", tuple(f.attname for f in fields), _converters(model, fields)


def update_returning(model: type[models.Model], sql: str, params: Sequence[Any], *, exclude: Sequence[str] = ()) -> Any:
    """Run ``sql``, an ``UPDATE`` of ``model``'s table that changes at most one row, and return
    that row as it is then (``exclude``: fields left deferred; values through the ORM's
    converters, as :func:`get_row`), or None when no row changed: the update and the read in
    one round trip (``UPDATE ... RETURNING``: PostgreSQL, SQLite >= 3.35)."""
    returning, names, converters = _returning(model, tuple(exclude))
    found = _fetch(model, (sql + returning, names, converters), list(params), first=True)
    return found[0] if found else None


def _instance(model: type[models.Model], names: tuple[str, ...], converters: tuple[Any, ...], row: Sequence[Any]) -> Any:
    values = []
    for value, (col, funcs) in zip(row, converters, strict=True):
        for func in funcs:
            value = func(value, col, connection)
        values.append(value)
    return model.from_db(connection.alias, list(names), values)


def _fetch(model: type[models.Model], statement: tuple[str, tuple[str, ...], tuple[Any, ...]], params: list[Any], *,
           first: bool = False) -> list[Any]:
    """The rows of a built ``statement`` (sql, column names, converters) as instances (only the first with ``first``)."""
    sql, names, converters = statement
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = [cursor.fetchone()] if first else cursor.fetchall()
    return [_instance(model, names, converters, row) for row in rows if row is not None]


def get_many(model: type[models.Model], ids: Sequence[int], *, only: Sequence[str]) -> list[Any]:
    """``model.objects.filter(pk__in=ids).only(*only)`` from one statement built once per
    (model, columns, number of ids), values through the ORM's converters; rows in no
    particular order."""
    if not ids:
        return []
    return _fetch(model, _select_statement(model, (), False, tuple(only), len(ids)), list(ids))


def find_row(model: type[models.Model], **keys: Any) -> Any:
    """``model.objects.filter(**keys).first()`` for keys that name at most one row (a unique
    set of columns; a foreign key by its id under the field's name), from one statement built
    once; None if there is none."""
    found = _fetch(model, _select_statement(model, (), False, keys=tuple(keys)), list(keys.values()), first=True)
    return found[0] if found else None


def find_rows(model: type[models.Model], **keys: Any) -> list[Any]:
    """``model.objects.filter(**keys)`` (equality on ``keys``; a foreign key by its id under the
    field's name) from one statement built once, in no particular order."""
    return _fetch(model, _select_statement(model, (), False, keys=tuple(keys)), list(keys.values()))


def newest_row(model: type[models.Model], *, exclude: Sequence[str] = (), **keys: Any) -> Any:
    """``model.objects.filter(**keys).defer(*exclude).order_by("-pk").first()`` (equality on ``keys``; a
    foreign key by its id under the field's name) from one statement built once per (model, exclude,
    keys); None if no row matches."""
    found = _fetch(model, _newest_statement(model, tuple(exclude), tuple(keys)), list(keys.values()), first=True)
    return found[0] if found else None


@lru_cache(maxsize=16)
def _newest_statement(
    model: type[models.Model], exclude: tuple[str, ...], keys: tuple[str, ...],
) -> tuple[str, tuple[str, ...], tuple[Any, ...]]:
    sql, names, converters = _select_statement(model, exclude, False, keys=keys)
    return f"{sql} ORDER BY {connection.ops.quote_name(model._meta.pk.column)} DESC LIMIT 1", names, converters  # type: ignore[union-attr]


def get_row(model: type[models.Model], pk: int, *, exclude: Sequence[str] = (), for_update: bool = False) -> Any:
    """``model.objects[.select_for_update()].defer(*exclude).get(pk=pk)`` from one statement
    built once: each value through the same converters the ORM applies; with
    ``for_update`` the row is locked (``FOR NO KEY UPDATE`` on PostgreSQL: see ``lock_suffix``;
    SQLite: by the transaction's ``BEGIN IMMEDIATE``).

    Raises:
        model.DoesNotExist: no such row.
    """
    return _one_instance(model, pk, *_select_statement(model, tuple(exclude), for_update))


def _one_instance(model: type[models.Model], pk: int, sql: str, names: tuple[str, ...], converters: tuple[Any, ...]) -> Any:
    """Run ``sql`` (one ``%s``: the primary key) and return its row as an instance.

    Raises:
        model.DoesNotExist: no row.
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [pk])
        row = cursor.fetchone()
    if row is None:
        raise model.DoesNotExist(f"{model.__name__} {pk} does not exist")
    return _instance(model, names, converters, row)


@lru_cache(maxsize=8)
def _page_statement(model: type[models.Model], names: tuple[str, ...], keys: tuple[str, ...]) -> tuple[str, tuple[Any, ...]]:
    meta = model._meta
    q = connection.ops.quote_name
    fields = [meta.get_field(n) for n in names]
    where = " AND ".join(f"{q(meta.get_field(k).column)} = %s" for k in keys)  # type: ignore[union-attr]
    table = q(meta.db_table)
    sql = (f"SELECT {', '.join(q(f.column) for f in fields)}, (SELECT COUNT(*) FROM {table} WHERE {where}) "  # type: ignore[union-attr]
           f"FROM {table} WHERE {where} ORDER BY {q(meta.pk.column)} DESC LIMIT %s OFFSET %s")  # type: ignore[union-attr]
    return sql, _converters(model, fields)  # type: ignore[arg-type]


def newest_page(model: type[models.Model], names: Sequence[str], *, limit: int, offset: int,
                **keys: Any) -> tuple[list[dict[str, Any]], int]:
    """One page of ``model.objects.filter(**keys).order_by("-pk").values(*names)`` (``names``: attnames,
    a foreign key as ``<field>_id``; equality on ``keys``, a foreign key by its id under the field's
    name), ``limit`` rows from ``offset``, and ``.count()`` of the whole filter, in one statement built
    once per (model, names, keys); each value through the converters the ORM applies. The count is read
    in the same statement as the rows (one snapshot); with no row on the page it is 0, whatever the
    filter matches (an offset past the end reads nothing to count with)."""
    sql, converters = _page_statement(model, tuple(names), tuple(keys))
    params = list(keys.values())
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *params, limit, offset])
        found = cursor.fetchall()
    out = []
    for row in found:
        values = {}
        for name, value, (col, funcs) in zip(names, row, converters, strict=False):
            for func in funcs:
                value = func(value, col, connection)
            values[name] = value
        out.append(values)
    return out, int(found[0][-1]) if found else 0


def selected(model: type[models.Model]) -> tuple[str, Callable[[Sequence[Any]], Any]]:
    """For a statement that selects a whole ``model`` row beside others (a join built once): its
    columns, qualified by its table, for the select list, and a function from those values (one per
    concrete field, in the list's order) to the instance, through the ORM's converters (``from_db``)."""
    meta = model._meta
    q = connection.ops.quote_name
    fields = list(meta.concrete_fields)
    names, converters = tuple(f.attname for f in fields), _converters(model, fields)
    columns = ", ".join(f"{q(meta.db_table)}.{q(f.column)}" for f in fields)
    return columns, lambda values: _instance(model, names, converters, values)
