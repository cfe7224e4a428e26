"""Plain-value writes for the live clock's hot path: rows in, SQL out, no model instances.

On the clock's path a tick writes a few rows of several tables, thousands of times
per replayed hour. ``QuerySet.bulk_create`` builds a model instance per row and
compiles its statement on every call, which costs more than the statement itself
at that size. These helpers prepare every value with the field's own
``get_db_prep_save`` (so they store exactly what the ORM would, on SQLite and on
PostgreSQL) and build each statement once per (table, columns). Callers pass
every column a row needs, ``auto_now_add`` fields included. Everything else
(reads with filters, anything off the hot path) stays with the ORM; the hot path's reads of whole
rows as model instances are ``infra.instances``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any

from django.db import connection, models

from marketplace.infra import encoding
from marketplace.infra.batch import Batch, cursor_for

_MONEY_PLACES: dict[int, Decimal] = {}
_NATIVE = frozenset({int, float, str, bool, type(None)})  # every driver binds these as they are


def _prep(field: models.Field[Any, Any], value: Any) -> Any:
    """``value`` as the database takes it: the field's own ``get_db_prep_save``, except
    for plain ints, floats, strings, booleans and None into fields that store them as
    they are (the ORM would pass those unchanged too)."""
    if type(value) in _NATIVE and not isinstance(field, _CONVERTING):
        return value
    if value is not None and type(field) is models.JSONField and field.encoder is None:
        return _json_adapter()(value)  # what get_db_prep_save gives for a plain document, without its per-value lookups
    return field.get_db_prep_save(value, connection)


@lru_cache(maxsize=1)
def _json_adapter() -> Any:
    """The database's adapter of a JSON document (``connection.ops.adapt_json_value`` without an
    encoder: psycopg's ``Jsonb`` encoded by orjson on PostgreSQL (``infra.encoding``), ``json.dumps`` elsewhere); one per process (its
    database's vendor does not change)."""
    if connection.vendor == "postgresql":
        return encoding.document
    import json

    return json.dumps


_CONVERTING = (models.JSONField, models.DecimalField, models.DateTimeField, models.DateField, models.TimeField,
               models.UUIDField, models.BinaryField, models.DurationField)


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


def insert_rows(model: type[models.Model], names: Sequence[str], rows: Iterable[Sequence[Any]], *, returning_pk: bool = False,
                batch: Batch | None = None) -> list[int]:
    """INSERT ``rows`` (one value per name in ``names``; a foreign key by its id under
    the field's name) into ``model``'s table; returns the new primary keys, in row
    order, when ``returning_pk`` (one multi-row statement), else [] (executemany on SQLite,
    one ``INSERT ... SELECT * FROM unnest(...)`` on PostgreSQL, added to ``batch`` when given)."""
    rows = list(rows)
    if not rows:
        return []
    names = tuple(names)
    if returning_pk:
        sql, fields = _statement(model, names, True, len(rows))
        params = [_prep(f, v) for row in rows for f, v in zip(fields, row, strict=True)]
        with cursor_for(params) as cursor:
            cursor.execute(sql, params)
            return [int(r[0]) for r in cursor.fetchall()]
    sql, fields = _statement(model, names, False, 1)
    if len(rows) > 1 and ((batch is not None and batch.deferring) or connection.vendor == "postgresql"):
        params = _prepared_columns(fields, rows)  # one statement for all rows: the server runs one, not one a row
        if batch is not None and batch.deferring:
            batch.add(_unnest_insert(model, names), params)
        else:
            with connection.cursor() as cursor:
                cursor.execute(_unnest_insert(model, names), params)
        return []
    prepared = [[_prep(f, v) for f, v in zip(fields, row, strict=True)] for row in rows]
    if batch is not None and batch.deferring:
        batch.add(sql, prepared[0])
        return []
    with connection.cursor() as cursor:
        if len(prepared) == 1:
            cursor.execute(sql, prepared[0])
        else:
            cursor.executemany(sql, prepared)
    return []


def insert_statement(model: type[models.Model], names: Sequence[str]) -> str:
    """PostgreSQL: the INSERT of any number of rows into ``names`` of ``model``'s table that
    :func:`insert_rows` runs, with one array parameter per column (:func:`column_values`), for a
    caller that adds to it (a RETURNING clause inside a WITH)."""
    return _unnest_insert(model, tuple(names))


def column_values(fields: Sequence[Any], prepared: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """The parameters of :func:`insert_statement` for rows of values prepared for ``fields``."""
    return _columns(fields, prepared)


@lru_cache(maxsize=64)
def _unnest_insert(model: type[models.Model], names: tuple[str, ...]) -> str:
    """PostgreSQL: ``INSERT INTO t (a, b) SELECT * FROM unnest(%s::ta[], %s::tb[])``, one array
    parameter per column (:func:`_columns`): the same text for any number of rows."""
    meta = model._meta
    fields = [meta.get_field(name) for name in names]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)  # type: ignore[union-attr]
    return f"INSERT INTO {connection.ops.quote_name(meta.db_table)} ({columns}) SELECT * FROM unnest({_arrays(fields)})"


def _arrays(fields: Sequence[Any]) -> str:
    """``%s::type[], ...``: one array parameter per field, cast to its column's type; a JSON
    field's is one JSON document, the list of its values (:func:`_columns`), taken apart on the
    server in order (its JSON nulls as SQL nulls, as ``None`` is stored)."""
    return ", ".join(_JSON_ARRAY if _is_json(f) else f"%s::{f.db_type(connection)}[]" for f in fields)


_JSON_ARRAY = "ARRAY(SELECT NULLIF(e, 'null'::jsonb) FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS t(e, n) ORDER BY n)"


def _is_json(field: Any) -> bool:
    """A JSON field that stores its values as they are (no encoder): sent in one document (:func:`_arrays`)."""
    return type(field) is models.JSONField and field.encoder is None


def _columns(fields: Sequence[Any], prepared: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """The prepared rows as one list per column, each value of one Python type, as psycopg
    needs for an array (it refuses a list that mixes int and float, or Decimal and int):
    a float column's ints become floats, a decimal column's ints and floats Decimals, an
    integer column's booleans ints. A JSON column is one document (:func:`_arrays`)."""
    return [_column(field, [row[k] for row in prepared]) for k, field in enumerate(fields)]


def _prepared_columns(fields: Sequence[Any], rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """``_columns(fields, rows prepared value by value)``, prepared a column at a time: a plain
    value into a field that stores it as it is, and a JSON column's documents, are taken as
    they are (what :func:`_prep` and :func:`_column` would make of them), without a list a row."""
    out = []
    for field, values in zip(fields, zip(*rows, strict=True), strict=True):
        if _is_json(field):
            out.append(_column(field, [v if v is not None else _prep(field, v) for v in values]))
        elif isinstance(field, _CONVERTING):
            out.append(_column(field, [_prep(field, v) for v in values]))
        else:
            out.append(_column(field, [v if type(v) in _NATIVE else _prep(field, v) for v in values]))
    return out


def _column(field: Any, values: list[Any]) -> Any:
    """One column of :func:`_columns` (``values`` prepared), for PostgreSQL: a JSON column as one
    document, a number or boolean column as an array literal (``infra.encoding``), any other as a list."""
    if _is_json(field):  # one document for the column: one dump, not one per value inside an array literal
        return encoding.document([getattr(v, "obj", v) for v in values])
    if isinstance(field, models.FloatField):
        return encoding.array_literal([v if v is None else float(v) for v in values], float)
    if isinstance(field, models.DecimalField):
        return encoding.array_literal(
            [v if v is None or isinstance(v, Decimal) else Decimal(repr(v) if isinstance(v, float) else v) for v in values], Decimal)
    if isinstance(field, models.BooleanField):
        return encoding.array_literal([v if v is None else bool(v) for v in values], bool)
    if field.get_internal_type().endswith(("IntegerField", "AutoField")) or field.is_relation:
        return encoding.array_literal([v if v is None else int(v) for v in values], int)
    return values


def insert_with_children(model: type[models.Model], names: Sequence[str], row: Sequence[Any], child: type[models.Model],
                         child_names: Sequence[str], child_rows: Iterable[Sequence[Any]]) -> int:
    """INSERT one row of ``model`` (as :func:`insert_rows`) and rows of ``child`` that refer to it:
    ``child_names[0]`` is the foreign key, filled with the new row's primary key, and each of
    ``child_rows`` gives the values of the other names. Returns the new primary key. One statement
    on PostgreSQL (``WITH p AS (INSERT ... RETURNING id) INSERT ... SELECT p.id, v.* FROM p,
    unnest(...) AS v ... RETURNING``), two elsewhere or without children."""
    child_rows = list(child_rows)
    if connection.vendor != "postgresql" or not child_rows:
        [pk] = insert_rows(model, names, [row], returning_pk=True)
        insert_rows(child, child_names, [(pk, *r) for r in child_rows])
        return pk
    sql, fields = _statement(model, tuple(names), True, 1)
    params = [_prep(f, v) for f, v in zip(fields, row, strict=True)]
    meta = child._meta
    child_fields = [meta.get_field(name) for name in child_names]
    q = connection.ops.quote_name
    columns = ", ".join(q(f.column) for f in child_fields)  # type: ignore[union-attr]
    aliases = ", ".join(f"c{k}" for k in range(1, len(child_fields)))
    statement = (f"WITH p AS ({sql}) INSERT INTO {q(meta.db_table)} ({columns}) SELECT p.{q(model._meta.pk.column)}, {aliases}"  # type: ignore[union-attr]
                 f" FROM p, unnest({_arrays(child_fields[1:])}) AS v({aliases}) RETURNING {q(child_fields[0].column)}")  # type: ignore[union-attr]
    prepared = [[_prep(f, v) for f, v in zip(child_fields[1:], r, strict=True)] for r in child_rows]
    params += _columns(child_fields[1:], prepared)
    with cursor_for(params) as cursor:
        cursor.execute(statement, params)
        return int(cursor.fetchone()[0])


def insert_instances(objs: Sequence[models.Model]) -> None:
    """INSERT unsaved model instances of one model in one statement, as ``save()`` would store
    them (every concrete field's ``pre_save``, so ``auto_now_add`` and defaults apply), and give
    each its primary key; no signals are sent (the project connects none to these models)."""
    if not objs:
        return
    model = type(objs[0])
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    values = [[f.pre_save(obj, True) for f in fields] for obj in objs]
    ids = insert_rows(model, [f.attname for f in fields], values, returning_pk=True)
    for obj, pk in zip(objs, ids, strict=True):
        obj.pk = pk
        obj._state.adding = False
        obj._state.db = connection.alias


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


def any_of(column_sql: str, ids: Sequence[int]) -> tuple[str, list[Any]]:
    """(condition, parameters): ``column_sql`` is one of the integers ``ids``. On PostgreSQL one array
    parameter (``= ANY(%s::bigint[])``, an array literal: the same statement text for any number of ids, so the driver's
    prepared statement serves them all); elsewhere ``IN (%s, ...)``, one parameter per id (at least one:
    ``IN (NULL)`` matches nothing)."""
    if connection.vendor == "postgresql":
        return f"{column_sql} = ANY(%s::bigint[])", [encoding.array_literal([int(i) for i in ids], int)]
    if not ids:
        return f"{column_sql} IN (NULL)", []
    return f"{column_sql} IN ({', '.join(['%s'] * len(ids))})", [int(i) for i in ids]


@lru_cache(maxsize=64)
def _update_statement(
    model: type[models.Model], names: tuple[str, ...], keys: tuple[str, ...]
) -> tuple[str, tuple[models.Field[Any, Any], ...]]:
    meta = model._meta
    fields = tuple(meta.get_field(name) for name in (*names, *keys))
    sets = ", ".join(f"{connection.ops.quote_name(f.column)} = %s" for f in fields[: len(names)])  # type: ignore[union-attr]
    where = " AND ".join(f"{connection.ops.quote_name(f.column)} = %s" for f in fields[len(names) :])  # type: ignore[union-attr]
    return f"UPDATE {connection.ops.quote_name(meta.db_table)} SET {sets} WHERE {where}", fields  # type: ignore[return-value]


def update_rows(model: type[models.Model], names: Sequence[str], keys: Sequence[str], rows: Iterable[Sequence[Any]], *,
                batch: Batch | None = None) -> None:
    """UPDATE ``model``'s table, one prepared statement for all ``rows``: each row gives
    the new values of ``names`` followed by the values of ``keys`` that select the row
    (a row that matches nothing changes nothing).

    On PostgreSQL, several rows whose keys differ go in one ``UPDATE ... FROM unnest(...)``
    statement (:func:`_joined_statement`): the same rows change in
    the same way, but the server plans and runs one statement instead of one per row, which
    is most of a tick's time in the database (a tick updates the task counts of every job
    that ran). Rows that repeat a key keep the one-statement-per-row path, whose order
    decides which update wins. With ``batch``, a one-statement update is added to it (rows
    that repeat a key run the batch first, then their statements)."""
    sql, fields = _update_statement(model, tuple(names), tuple(keys))
    prepared = [[_prep(f, v) for f, v in zip(fields, row, strict=True)] for row in rows]
    if not prepared:
        return
    width = len(tuple(names))
    if len(prepared) > 1 and connection.vendor == "postgresql" and len({tuple(r[width:]) for r in prepared}) == len(prepared):
        joined, fields = _joined_statement(model, tuple(names), tuple(keys))
        if batch is not None:
            batch.add(joined, _columns(fields, prepared))
            return
        with connection.cursor() as cursor:
            cursor.execute(joined, _columns(fields, prepared))
        return
    if batch is not None and batch.deferring:
        if len(prepared) == 1:
            batch.add(sql, prepared[0])
            return
        batch.run()
    with cursor_for(prepared[0]) as cursor:
        if len(prepared) == 1:
            cursor.execute(sql, prepared[0])
        else:
            cursor.executemany(sql, prepared)


@lru_cache(maxsize=64)
def _joined_statement(
    model: type[models.Model], names: tuple[str, ...], keys: tuple[str, ...]
) -> tuple[str, tuple[models.Field[Any, Any], ...]]:
    """PostgreSQL: ``UPDATE t SET a = v.c0 ... FROM unnest(%s::ta[], ...) AS v(c0, ...) WHERE
    t.key = v.ck ...``, one statement for all rows (keys all different), one array parameter per
    column (:func:`_columns`): its text does not change with the number of rows, so the driver
    converts it once (a statement with a placeholder per value was re-parsed on every call: 16 %
    of a tick). Returns it and its fields (``names`` then ``keys``)."""
    meta = model._meta
    q = connection.ops.quote_name
    fields = tuple(meta.get_field(name) for name in (*names, *keys))
    table = q(meta.db_table)
    aliases = [f"c{k}" for k in range(len(fields))]
    sets = ", ".join(f"{q(f.column)} = v.{a}" for f, a in zip(fields[: len(names)], aliases, strict=False))  # type: ignore[union-attr]
    where = " AND ".join(f"{table}.{q(f.column)} = v.{a}"  # type: ignore[union-attr]
                         for f, a in zip(fields[len(names):], aliases[len(names):], strict=True))
    sql = f"UPDATE {table} SET {sets} FROM unnest({_arrays(fields)}) AS v({', '.join(aliases)}) WHERE {where}"
    return sql, fields  # type: ignore[return-value]


def insert_new(model: type[models.Model], names: Sequence[str], conflict: Sequence[str], row: Sequence[Any]) -> int | None:
    """INSERT one row as :func:`insert_rows` does unless a stored row matches its ``conflict`` columns
    (a unique constraint's): ``ON CONFLICT ... DO NOTHING``, PostgreSQL and SQLite. Returns the new
    primary key, or None when a row was there (on PostgreSQL after waiting for an uncommitted one's
    transaction to end, as a unique violation would; no error, so no savepoint is needed around it)."""
    sql, fields = _statement(model, tuple(names), False, 1)
    q = connection.ops.quote_name
    target = ", ".join(q(f.column) for f in fields if f.name in conflict)  # type: ignore[union-attr]
    sql += f" ON CONFLICT ({target}) DO NOTHING RETURNING {q(model._meta.pk.column)}"  # type: ignore[union-attr]
    params = [_prep(f, v) for f, v in zip(fields, row, strict=True)]
    with cursor_for(params) as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchone()
    return None if found is None else int(found[0])


def upsert_rows(model: type[models.Model], names: Sequence[str], conflict: Sequence[str], rows: Iterable[Sequence[Any]], *,
                batch: Batch | None = None) -> None:
    """INSERT ``rows`` as :func:`insert_rows` does; a row whose ``conflict`` columns (a unique
    constraint's) match a stored row updates that row's other columns instead
    (``ON CONFLICT ... DO UPDATE``, PostgreSQL and SQLite). One statement for all rows on
    PostgreSQL (added to ``batch`` when given); the rows' ``conflict`` values must differ."""
    prepared_rows = list(rows)
    if not prepared_rows:
        return
    names = tuple(names)
    sql, fields = _statement(model, names, False, 1)
    q = connection.ops.quote_name
    target = ", ".join(q(f.column) for f in fields if f.name in conflict)  # type: ignore[union-attr]
    sets = ", ".join(f"{q(f.column)} = EXCLUDED.{q(f.column)}" for f in fields if f.name not in conflict)  # type: ignore[union-attr]
    suffix = f" ON CONFLICT ({target}) DO UPDATE SET {sets}"
    prepared = [[_prep(f, v) for f, v in zip(fields, row, strict=True)] for row in prepared_rows]
    if batch is not None and batch.deferring:
        if len(prepared) == 1:
            batch.add(sql + suffix, prepared[0])
        else:
            batch.add(_unnest_insert(model, names) + suffix, _columns(fields, prepared))
        return
    if len(prepared) > 1 and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_unnest_insert(model, names) + suffix, _columns(fields, prepared))
        return
    with cursor_for(prepared[0]) as cursor:
        if len(prepared) == 1:
            cursor.execute(sql + suffix, prepared[0])
        else:
            cursor.executemany(sql + suffix, prepared)


def upsert_documents(model: type[models.Model], *, fixed: dict[str, Any], key: str, document: str,
                     rows: Sequence[tuple[int, Any]], batch: Batch | None = None) -> None:
    """:func:`upsert_rows` for rows of (``key``, ``document``: a JSON field) whose other columns
    are ``fixed`` (their unique constraint: the ``fixed`` columns and ``key``). On PostgreSQL
    the rows go as one JSON array bound on the server and are unpacked there
    (``jsonb_array_elements``): one document for the client to encode, not one per row inside
    an array literal (added to ``batch`` when given)."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        upsert_rows(model, (*fixed, key, document), (*fixed, key), [(*fixed.values(), k, doc) for k, doc in rows])
        return
    names = [column(model, name) for name in (*fixed, key, document)]
    target = ", ".join(names[:-1])
    values = ", ".join(["%s"] * len(fixed) + ["(e->>0)::bigint", "e->1"])
    sql = (f"INSERT INTO {table(model)} ({', '.join(names)}) SELECT {values} FROM jsonb_array_elements(%s) AS e"
           f" ON CONFLICT ({target}) DO UPDATE SET {names[-1]} = EXCLUDED.{names[-1]}")
    params = [*fixed.values(), encoding.document([[k, doc] for k, doc in rows])]
    if batch is not None:
        batch.add(sql, params)
        return
    with cursor_for(params) as cursor:
        cursor.execute(sql, params)


def delete_where(model: type[models.Model], *, equal: dict[str, Any], within: tuple[str, Sequence[Any]] | None = None,
                 batch: Batch | None = None) -> None:
    """DELETE ``model``'s rows whose columns equal ``equal`` (and whose ``within[0]`` is one of
    ``within[1]``: nothing when that is empty), one statement (added to ``batch`` when given)."""
    where = [f"{column(model, k)} = %s" for k in equal]
    params = list(equal.values())
    if within is not None:
        name, values = within
        if not values:
            return
        where.append(f"{column(model, name)} IN ({', '.join(['%s'] * len(values))})")
        params += list(values)
    if batch is not None and batch.deferring:
        batch.add(f"DELETE FROM {table(model)} WHERE {' AND '.join(where)}", params)
        return
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table(model)} WHERE {' AND '.join(where)}", params)


def ids_where(model: type[models.Model], *, equal: dict[str, Any], within: tuple[str, Sequence[Any]]) -> set[int]:
    """Ids of ``model``'s rows whose columns equal ``equal`` and whose ``within[0]`` is one of
    ``within[1]`` (the clock's read of a market's active jobs, after every bid)."""
    name, values = within
    where = " AND ".join([*(f"{column(model, k)} = %s" for k in equal), f"{column(model, name)} IN ({', '.join(['%s'] * len(values))})"])
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # one row holding every id: no row object per id
            cursor.execute(f"SELECT array_agg(id) FROM {table(model)} WHERE {where}", [*equal.values(), *values])
            return set(cursor.fetchone()[0] or ())
        cursor.execute(f"SELECT id FROM {table(model)} WHERE {where}", [*equal.values(), *values])
        return {int(r[0]) for r in cursor.fetchall()}
