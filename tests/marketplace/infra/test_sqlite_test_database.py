"""Without DATABASE_URL, tests run on a SQLite file in WAL mode (settings, "Database"), not on Django's default
shared-cache in-memory database: there a test's background writer (the lab's run thread, the live server) fails
at once with "database table is locked" while another connection reads, where a file's writer waits its turn."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def default_database() -> dict[str, Any]:
    """``DATABASES["default"]`` as the settings build it with no DATABASE_URL."""
    probe = "import json, marketplace.settings as s; print(json.dumps(s.DATABASES['default'], default=str))"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(DJANGO_SETTINGS_MODULE="marketplace.settings", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True)
    database: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return database


def connect(uri: str, options: dict[str, Any]) -> sqlite3.Connection:
    """A connection opened as Django's SQLite backend opens one under these OPTIONS (timeout, init pragmas)."""
    connection = sqlite3.connect(uri, uri=True, timeout=options["timeout"], isolation_level=None, check_same_thread=False)
    connection.executescript(options["init_command"])
    return connection


def writer_beside_a_reader(uri: str, options: dict[str, Any]) -> str | None:
    """Start a read on one connection, then write from another thread, as the run thread does while a page
    reads; the writer's error, or None when its write committed."""
    reader = connect(uri, options)
    reader.execute("CREATE TABLE run (id INTEGER PRIMARY KEY, progress REAL)")
    reader.executemany("INSERT INTO run (progress) VALUES (?)", [(i / 10,) for i in range(10)])
    rows = reader.execute("SELECT id, progress FROM run")
    assert rows.fetchone() is not None  # the read is in progress: its statement holds its locks
    errors: list[str] = []

    def write() -> None:
        writer = connect(uri, options)
        try:
            writer.execute(f"BEGIN {options['transaction_mode']}")
            writer.execute("UPDATE run SET progress = 1.0 WHERE id = 1")
            writer.execute("COMMIT")
        except sqlite3.OperationalError as error:
            errors.append(str(error))
        finally:
            writer.close()

    thread = threading.Thread(target=write)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    rows.fetchall()
    written = reader.execute("SELECT progress FROM run WHERE id = 1").fetchone()[0]
    reader.close()
    assert (written == 1.0) == (not errors)
    return errors[0] if errors else None


def test_the_default_test_database_is_a_file_in_wal_mode() -> None:
    database = default_database()
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    name = Path(database["TEST"]["NAME"])
    assert name.is_absolute() and name.suffix == ".sqlite3" and "memory" not in name.name
    assert name != Path(database["NAME"])  # never the marketplace's own database
    assert "journal_mode=WAL" in database["OPTIONS"]["init_command"]


def test_a_background_writer_waits_on_the_file_and_fails_on_the_shared_memory_database(tmp_path: Path) -> None:
    options = default_database()["OPTIONS"]
    assert writer_beside_a_reader(f"file:{tmp_path / 'test.sqlite3'}", options) is None
    error = writer_beside_a_reader("file:shared_test_db?mode=memory&cache=shared", options)
    assert error is not None and "locked" in error, error
