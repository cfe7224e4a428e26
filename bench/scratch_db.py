"""A throw-away database for the Django benchmarks: SQLite in a temporary directory, or a
PostgreSQL database dropped and re-created (``--pg-url``, default ``$BENCH_PG_URL``, else
``postgres://postgres@127.0.0.1:5432/bench_clearing``; use your own name on a shared server)."""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from typing import Any
from urllib.parse import urlparse

from bench.figures import require

PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/bench_clearing")
# Settings as a site runs the market (README, "Configuration"): DEBUG off, so Django keeps no log of every
# statement (with DEBUG on, each one is formatted and kept: a tick's 10 statements cost 1-5 ms more).
DEPLOYED = {"DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": "bench-scratch-" + "x" * 50, "DJANGO_SECURE_SSL_REDIRECT": "0",
            "DJANGO_SECURE_COOKIES": "0", "DJANGO_SECURE_HSTS_SECONDS": "0", "DJANGO_ALLOWED_HOSTS": "testserver",
            "LOG_LEVEL": "ERROR", "MARKET_LOG_LEVEL": "ERROR"}


def as_deployed() -> None:
    """Put :data:`DEPLOYED` in the environment, where it does not set them already (before Django starts)."""
    for name, value in DEPLOYED.items():
        os.environ.setdefault(name, value)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL instead of SQLite")
    parser.add_argument("--pg-url", default=PG_URL, help="the scratch PostgreSQL database (dropped and re-created)")


def database_url(postgres: bool, url: str) -> str:
    """A fresh database's URL (module docstring)."""
    if not postgres:
        return f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite3"
    name, conn = _admin(url)
    with conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return url


def _admin(url: str) -> tuple[str, Any]:
    """(the database name ``url`` gives, checked to be a plain name, an autocommit connection to the server's
    ``postgres`` database), for creating and dropping it."""
    import psycopg

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    require(name.replace("_", "").isalnum(), f"a plain database name in the URL, got {name!r}")
    return name, psycopg.connect(parsed._replace(scheme="postgresql", path="/postgres").geturl(), autocommit=True)


def ensure_database(url: str) -> None:
    """Create the PostgreSQL database ``url`` names when it does not exist (kept when it does: unlike
    :func:`database_url`, nothing is dropped), so a benchmark that migrates the database it is given
    also runs on a name nobody created yet."""
    name, conn = _admin(url)
    with conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            conn.execute(f"CREATE DATABASE {name}")


def django_on_scratch(args: argparse.Namespace) -> str:
    """Point Django at a fresh database (eager Celery: no ``REDIS_URL``) under the deployed settings
    (:func:`as_deployed`), set it up and migrate; returns "PostgreSQL" or "SQLite"."""
    os.environ["DATABASE_URL"] = database_url(args.postgres, args.pg_url)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")
    as_deployed()
    import django

    django.setup()
    logging.disable(logging.WARNING)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return "PostgreSQL" if args.postgres else "SQLite"


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def backend_cpu_s() -> float:
    """CPU seconds the PostgreSQL backend of Django's connection has used (Linux /proc, the server
    on this machine; 1/100 s resolution), 0.0 on SQLite (it runs in this process: its time is in
    ``time.process_time``). With the client's CPU time, the cost of a measured step that does
    not move with the other processes' load."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return 0.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
