"""A serializer's answer written from value rows, without a model instance or a field walk per row.

``ModelSerializer(page, many=True).data`` builds a model instance per row (and one per related
object of ``select_related``), then asks every field of every row for its attribute through its
``source`` path. For the lists pollers read (the time series: 50 rows of 6-9 plain fields) that is
most of a request's CPU. :func:`row_fields` reads a serializer's fields once: the ``values()``
lookup of each (``source="resource_type.name"`` -> ``resource_type__name``) and the field that
writes it; :func:`answer_rows` writes each row as the serializer would (``to_representation`` of
the field; ``None`` stays ``None``, as DRF writes a missing value), with the ``SerializerMethodField``
values given by the caller. The serializer stays the answer's definition: its schema, its field
order and its fields' own formatting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from rest_framework import serializers

from marketplace.api.fields import representations

RowField = tuple[str, str | None, serializers.Field]  # (name in the answer, values() lookup or None if computed, field)


@lru_cache(maxsize=32)
def row_fields(serializer_class: type[serializers.Serializer]) -> tuple[RowField, ...]:
    """The fields of ``serializer_class`` in its order: a ``SerializerMethodField`` has no lookup
    (the caller computes it); every other field reads the ``values()`` lookup of its ``source``.

    Raises:
        ValueError: a field whose source is the whole object (``source="*"``) or a method.
    """
    out = []
    for name, field in serializer_class().fields.items():
        if isinstance(field, serializers.SerializerMethodField):
            out.append((name, None, field))
            continue
        if field.source == "*" or field.source_attrs == []:
            raise ValueError(f"{serializer_class.__name__}.{name}: a field of the whole object has no value lookup")
        out.append((name, "__".join(field.source_attrs), field))
    return tuple(out)


def lookups(serializer_class: type[serializers.Serializer], *extra: str) -> list[str]:
    """The ``values()`` lookups :func:`answer_rows` reads for ``serializer_class``, then ``extra``."""
    names = [lookup for _, lookup, _ in row_fields(serializer_class) if lookup is not None]
    return [*names, *(e for e in extra if e not in names)]


def answer_rows(serializer_class: type[serializers.Serializer], rows: Iterable[dict[str, Any]],
                computed: dict[str, Callable[[dict[str, Any]], Any]] | None = None) -> list[dict[str, Any]]:
    """``serializer_class(objects, many=True).data`` for the value rows of those objects
    (``QuerySet.values(*lookups(serializer_class))``); ``computed``: name -> the value of a
    ``SerializerMethodField`` for a row."""
    fields = row_fields(serializer_class)
    writes = dict(representations(tuple((name, field) for name, lookup, field in fields if lookup is not None)))
    computed = computed or {}
    out = []
    for row in rows:
        item: dict[str, Any] = {}
        for name, lookup, _ in fields:
            if lookup is None:
                item[name] = computed[name](row)
            else:
                value = row[lookup]
                item[name] = None if value is None else writes[name](value)
        out.append(item)
    return out
