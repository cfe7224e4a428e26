"""infra.encoding's array literals and orjson documents store on PostgreSQL exactly what psycopg's own encoders store."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marketplace.infra import encoding
from tests.integration.conftest import _require

pytestmark = pytest.mark.integration

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def pg(db):  # type: ignore[no-untyped-def]
    _require(connection.vendor == "postgresql", "DATABASE_URL does not point at PostgreSQL")
    with connection.cursor() as cursor:
        yield cursor


def _both(cursor, sql: str, ours: object, theirs: object) -> tuple[object, object]:  # type: ignore[no-untyped-def]
    cursor.execute(f"SELECT {sql}, {sql}", [ours, theirs])
    return cursor.fetchone()


def _column(values: st.SearchStrategy) -> st.SearchStrategy:  # type: ignore[type-arg]
    return st.lists(st.one_of(st.none(), values), max_size=40)


EXACT = [  # (kind, the column's type, its values): what reads back must equal what was sent
    (int, "bigint", st.integers(-(2**63), 2**63 - 1)),
    (Decimal, "numeric(20,4)", st.decimals(allow_nan=False, allow_infinity=False, places=4, min_value=-(10**12), max_value=10**12)),
    (bool, "boolean", st.booleans()),
]


@pytest.mark.parametrize(("kind", "sql_type", "values"), EXACT, ids=[k.__name__ for k, _, _ in EXACT])
@_SETTINGS
@given(data=st.data())
def test_an_array_literal_reads_back_as_psycopg_s_array(pg, kind, sql_type, values, data):  # type: ignore[no-untyped-def]
    sent = data.draw(_column(values))
    ours, theirs = _both(pg, f"%s::{sql_type}[]", encoding.array_literal(sent, kind), sent)
    assert ours == theirs == sent


@_SETTINGS
@given(values=_column(st.floats(allow_nan=True, allow_infinity=True)))
def test_a_float_array_literal_reads_back_bit_for_bit(pg, values):  # type: ignore[no-untyped-def]
    ours, theirs = _both(pg, "%s::double precision[]", encoding.array_literal(values, float), values)
    assert [repr(v) for v in ours] == [repr(v) for v in theirs] == [repr(v) for v in values]


_text = st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=8)  # jsonb stores no NUL, whoever encodes it
documents = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False), _text),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_text | st.integers(-50, 50), inner, max_size=5),
    max_leaves=30,
)


@_SETTINGS
@given(value=documents)
def test_an_orjson_document_is_the_same_jsonb_as_the_standard_library_s(pg, value):  # type: ignore[no-untyped-def]
    from psycopg.types.json import Jsonb

    pg.execute("SELECT %s::jsonb = %s::jsonb, %s::jsonb::text, %s::jsonb::text",
               [encoding.document(value), Jsonb(value), encoding.document(value), Jsonb(value)])
    same, ours, theirs = pg.fetchone()
    assert same and ours == theirs  # the same stored value, to the digit


def test_what_orjson_refuses_is_written_by_the_standard_library_and_an_unknown_kind_is_refused():
    assert encoding.dumps({"x": None, 1: [2.5], "big": 2**70}) == b'{"x": null, "1": [2.5], "big": 1180591620717411303424}'
    assert encoding.dumps({"x": None, 1: [2.5]}) == b'{"x":null,"1":[2.5]}'
    with pytest.raises(TypeError):
        encoding.dumps({"x": object()})
    with pytest.raises(TypeError):
        encoding.array_literal([1], str)
