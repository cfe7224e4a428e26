"""PostgreSQL: the Plans' and the engine columns' bytes compressed with LZ4 instead of pglz.

Both are float64 arrays of hundreds of kilobytes at thousands of jobs, written by every clearing and
every clock tick while the market row is locked. pglz spends about 15 ms on a 285 kB Plan (and then
stores it uncompressed: it gains too little) and tens of milliseconds on the 760 kB of columns; LZ4
does either in a few milliseconds and still stores a Plan in about 70 % of its bytes. Only values
written from now on change. Nothing to do on SQLite."""

from django.db import migrations

COLUMNS = [("marketplace_allocationsnapshot", "plan"), ("marketplace_enginecolumns", "data")]


def compression(method: str):  # type: ignore[no-untyped-def]
    def apply(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
        if schema_editor.connection.vendor != "postgresql":
            return
        for table, column in COLUMNS:
            schema_editor.execute(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" SET COMPRESSION {method}')

    return apply


class Migration(migrations.Migration):

    dependencies = [
        ("marketplace", "0027_job_history_indexes"),
    ]

    operations = [
        migrations.RunPython(compression("lz4"), compression("pglz")),
    ]
