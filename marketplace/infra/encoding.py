"""Parameters for PostgreSQL's hot-path statements, encoded where the driver's generic encoders are slow.

A tick sends a few dozen array parameters (one per column of an ``unnest`` write: ``infra.rows``)
and a few JSON documents. psycopg encodes an array element by element through a Python loop that
looks up a dumper for each value (about 90 us for 400 ints, 190 us for 400 floats), and a JSON
document with the standard library's ``json.dumps``. Here the same values go as PostgreSQL's own
text forms, built in a few C-level calls:

- :func:`array_literal`: a list of ints, floats, Decimals or booleans as an array literal
  (``'{1,2,NULL}'``), which the statement's ``%s::type[]`` cast reads as psycopg's array would be
  read: the same values.
- :func:`document`: a JSON document (psycopg's ``Jsonb``) encoded by orjson, whose text PostgreSQL
  parses to the same ``jsonb`` value as the standard library's.

Neither changes what is stored; ``tests/marketplace/infra/test_encoding.py`` reads the values back
and compares them with what psycopg's own encoders store.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import orjson

_FLOAT_WORDS = {math.inf: "Infinity", -math.inf: "-Infinity"}
_OPTIONS = orjson.OPT_NON_STR_KEYS


def array_literal(values: list[Any], kind: type) -> str:
    """``values`` (each None or of type ``kind``: int, float, Decimal or bool, as ``infra.rows``
    prepares a column) as PostgreSQL's array literal, e.g. ``'{1,2,NULL}'``.

    Floats are written by ``repr`` (the shortest text that reads back as the same double), infinities
    as ``Infinity`` and NaN as ``NaN``; Decimals by ``str``; booleans as ``t``/``f``.

    Raises:
        TypeError: ``kind`` is not one of the four.
    """
    if kind is int:
        texts = map(str, values) if None not in values else ("NULL" if v is None else str(v) for v in values)
    elif kind is float:
        texts = (_float_text(v) for v in values)
    elif kind is Decimal:
        texts = ("NULL" if v is None else str(v) for v in values)
    elif kind is bool:
        texts = ("NULL" if v is None else ("t" if v else "f") for v in values)
    else:
        raise TypeError(f"no array literal for {kind!r}")
    return "{" + ",".join(texts) + "}"


def _float_text(v: float | None) -> str:
    if v is None:
        return "NULL"
    if v != v:
        return "NaN"
    return _FLOAT_WORDS.get(v) or repr(v)


def dumps(value: Any) -> bytes:
    """``value`` as JSON text (UTF-8), for psycopg's ``Jsonb``: orjson's encoding (about ten times
    faster than the standard library's on a tick's documents), or the standard library's where
    orjson refuses the value (an int beyond 64 bits, a type it does not know), so that anything
    ``json.dumps`` could write is written.

    One difference: orjson writes a float NaN or infinity as ``null``, where the standard library
    writes ``NaN``, which PostgreSQL refuses. The documents written through here are the market's
    own (the engine's state, Plans, samples), whose numbers are counts, times and the mechanisms'
    finite results; a scan for non-finite floats would cost more than the encoding saves.

    Raises:
        TypeError: a value neither can write (as ``json.dumps`` would).
    """
    try:
        return orjson.dumps(value, option=_OPTIONS)
    except TypeError:
        return json.dumps(value).encode()


def document(value: Any) -> Any:
    """psycopg's ``Jsonb`` of ``value``, encoded by :func:`dumps` when it is sent."""
    from psycopg.types.json import Jsonb

    return Jsonb(value, dumps=dumps)
