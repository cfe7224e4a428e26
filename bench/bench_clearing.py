"""Benchmark: wall time of one `market_clear` (load, solve, store) by number of active jobs.

For each size n, the market gets n active jobs that the clock has seen (one tick), then
``--repeat`` times: one more bid arrives and the market clears (as after every arrival).
Reports the median and 95th percentile of the whole clearing and of the solve alone,
and how many Plans keep their arrays (pruning keeps it constant).

Runs on a throw-away SQLite database, or on PostgreSQL with ``--postgres`` (a scratch
database ``bench_clearing`` on ``postgres://postgres@127.0.0.1:5432``, dropped and
re-created).

Usage: .venv/bin/python bench/bench_clearing.py [--jobs 10 100 500 1000] [--repeat 21] [--postgres]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PG_URL = "postgres://postgres@127.0.0.1:5432/bench_clearing"


def _database(postgres: bool) -> str:
    if not postgres:
        return f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite3"
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS bench_clearing")
        conn.execute("CREATE DATABASE bench_clearing")
    return PG_URL


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, nargs="+", default=[10, 100, 500, 1000])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile the timed clearings of the last size; print the top 25")
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = _database(args.postgres)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    run(args)


def run(args: argparse.Namespace) -> None:
    from decimal import Decimal

    import numpy as np

    import marketplace.auction.services as bids
    from marketplace.auction.services import WorkItem, bid_submit
    from marketplace.market.models.allocation import AllocationSnapshot
    from marketplace.market.models.queues import Queue
    from marketplace.market.services import market as market_service
    from marketplace.market.services.clearing import market_clear
    from marketplace.market.services.clock import cluster_advance
    from marketplace.market.services.setup import market_create, tenant_create

    # clearings are run (and timed) by hand below: a bid must not clear itself (auction.services imports the
    # trigger by name, so under eager Celery it cleared every bid at once and the timed clearing found nothing)
    market_service.enqueue_clearing = bids.enqueue_clearing = lambda **kw: None
    rng = np.random.default_rng(0)
    hierarchy = {"root": 1.0, "root.a": 2.0, "root.a.x": 1.0, "root.a.y": 1.0, "root.b": 1.0, "root.b.z": 1.0}
    db = "PostgreSQL" if args.postgres else "SQLite"
    print(f"market_clear on {db}: median and p95 of {args.repeat} clearings, each after one arrival")
    print(f"{'active jobs':>12} {'clear p50 ms':>13} {'clear p95 ms':>13} {'solve p50 ms':>13} {'rounds':>7} {'plans kept':>11}")

    def bid(tenant: object) -> None:
        work = [WorkItem("map", int(rng.integers(1, 50)), 10.0, float(rng.uniform(0.5, 2))),
                WorkItem("reduce", int(rng.integers(1, 10)), 20.0, float(rng.uniform(0.5, 2)))]
        bid_submit(tenant=tenant, budget=str(round(float(rng.uniform(50, 200)), 2)), work=work)

    for n in args.jobs:
        market = market_create(name=f"bench{n}", resources={"map": 100, "reduce": 50}, hierarchy=hierarchy)
        leaves = [q for q in Queue.objects.filter(market=market) if not q.children.exists()]
        tenants = [tenant_create(market=market, username=f"b{n}-{i}", password=None, queue=leaves[i % 3], deposit=Decimal("1e9"))
                   for i in range(8)]
        for i in range(n):
            bid(tenants[i % 8])
        market_clear(market_id=market.pk)
        cluster_advance(market_id=market.pk, seconds=0.0)  # the clock has seen every job
        totals, solves, rounds = [], [], []
        profiler = cProfile.Profile() if args.profile and n == args.jobs[-1] else None
        for k in range(args.repeat):
            bid(tenants[k % 8])
            t0 = time.perf_counter()
            if profiler:
                profiler.enable()
            result = market_clear(market_id=market.pk)
            if profiler:
                profiler.disable()
            assert result.status == "cleared", f"the timed clearing did not clear ({result.status}): nothing was measured"
            totals.append((time.perf_counter() - t0) * 1000)
            solves.append(result.solve_ms)
            rounds.append(result.rounds)
        kept = AllocationSnapshot.objects.filter(market=market, plan__isnull=False).count()
        p95 = float(np.percentile(totals, 95))
        print(f"{n:>12} {statistics.median(totals):>13.1f} {p95:>13.1f} {statistics.median(solves):>13.1f} "
              f"{statistics.median(rounds):>7.0f} {kept:>11}")
        if profiler:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
