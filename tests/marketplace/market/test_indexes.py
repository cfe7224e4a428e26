"""No table keeps two indexes where one serves: an index whose columns lead another's costs a B-tree
write per row and serves no lookup the longer one does not (the share history gains a row per job
and sample)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection


@pytest.mark.django_db
def test_no_index_of_the_market_s_tables_is_the_leading_part_of_another():
    redundant = []
    with connection.cursor() as cursor:
        for model in apps.get_app_config("marketplace").get_models():
            table = model._meta.db_table
            found = connection.introspection.get_constraints(cursor, table)
            partial = {index.name for index in model._meta.indexes if index.condition is not None}  # they serve other rows
            indexes = {name: tuple(c["columns"]) for name, c in found.items()
                       if c["index"] and not c["unique"] and not c["primary_key"] and c["columns"] and name not in partial}
            unique = {name: tuple(c["columns"]) for name, c in found.items() if c["unique"] and c["columns"]}  # indexes too
            for name, cols in indexes.items():
                for other, longer in {**indexes, **unique}.items():
                    if len(longer) > len(cols) and longer[: len(cols)] == cols:
                        redundant.append(f"{table}: {name} {cols} leads {other} {longer}")
    assert not redundant, redundant
