"""Benchmark: wall time of one `market_clear` (load, auction, store) by number of active jobs.

Runs on a throw-away SQLite database (or on DATABASE_URL if given with --use-env-db).
Usage: .venv/bin/python bench/bench_clearing.py [--jobs 10 100 500 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, nargs="+", default=[10, 100, 500, 1000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--use-env-db", action="store_true")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp()
    if not args.use_env_db:
        os.environ["DATABASE_URL"] = f"sqlite:///{tmp}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from decimal import Decimal

    import numpy as np

    from marketplace.models import Queue
    from marketplace.services.bids import WorkItem, bid_submit
    from marketplace.services.clearing import market_clear
    from marketplace.services.setup import market_create, tenant_create

    rng = np.random.default_rng(0)
    hierarchy = {"root": 1.0, "root.a": 2.0, "root.a.x": 1.0, "root.a.y": 1.0, "root.b": 1.0, "root.b.z": 1.0}
    print(f"{'active jobs':>12} {'clear median ms':>16} {'solve median ms':>16} {'rounds':>7}")
    for n in args.jobs:
        market = market_create(name=f"bench{n}", hierarchy=hierarchy)
        leaves = [q for q in Queue.objects.filter(market=market) if not q.children.exists()]
        tenants = [tenant_create(market=market, username=f"b{n}-{i}", password=None, queue=leaves[i % 3], deposit=Decimal("1e7")) for i in range(8)]
        os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
        from marketplace.celery import app

        app.conf.task_always_eager = True
        for i in range(n):
            work = [WorkItem("map", int(rng.integers(1, 50)), 10.0, float(rng.uniform(0.5, 2))),
                    WorkItem("reduce", int(rng.integers(0, 10)), 20.0, float(rng.uniform(0.5, 2)))]
            bid_submit(tenant=tenants[i % 8], budget=str(round(float(rng.uniform(50, 200)), 2)), work=work)
        totals, solves, rounds = [], [], []
        for _ in range(args.repeat):
            # a fresh version each time, as an arrival would make
            from marketplace.models import Market

            Market.objects.filter(pk=market.pk).update(state_version=market.state_version + 1000 + len(totals))
            t0 = time.perf_counter()
            r = market_clear(market_id=market.pk)
            totals.append((time.perf_counter() - t0) * 1000)
            solves.append(r.solve_ms)
            rounds.append(r.rounds)
        print(f"{n:>12} {statistics.median(totals):>16.1f} {statistics.median(solves):>16.1f} {statistics.median(rounds):>7.0f}")


if __name__ == "__main__":
    main()
