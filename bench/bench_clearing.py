"""Benchmark: wall time of one `market_clear` (load, solve, store) by number of active jobs.

For each size n, the market gets n active jobs that the clock has seen (one tick), then
``--repeat`` times: one more bid arrives and the market clears (as after every arrival).
Reports the median and 95th percentile of the whole clearing and of the solve alone,
the median CPU time of the clearing (this process: on a shared machine the figure that
does not move with the others' load), and how many Plans keep their arrays (pruning
keeps it constant).

What it proves it timed (``bench.figures.require``): every timed clearing returns
"cleared" with rounds > 0 and covers every active job (the n jobs, the bids of the timed
repeats so far, and the new one). The bids are placed inside
``services.market.clearings_deferred`` (as ``replay_trace --drain`` places them), so no
clearing runs at their commit: with eager Celery, a bid's own clearing would clear the
market before the timed ``market_clear``, which then returns "current" after one UPDATE
and one SELECT (the hollow figure: 1.4 ms, 0 rounds). ``--hollow`` places the bids
that way, to show the benchmark refusing that measurement (exit status 3).

Runs on a throw-away SQLite database, or on PostgreSQL with ``--postgres``: the database
named by ``--pg-url`` (default ``$BENCH_PG_URL``, else
``postgres://postgres@127.0.0.1:5432/bench_clearing``) is dropped and re-created.

Usage: .venv/bin/python bench/bench_clearing.py [--jobs 10 100 1000] [--repeat 21] [--postgres [--pg-url URL]]
       [--goal N:MS ...] [--profile] [--hollow]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import scratch_db  # noqa: E402
from bench.figures import record, require, run_guarded  # noqa: E402

GOALS_PG = {1000: 15.0, 5000: 60.0, 10_000: 150.0}  # README, "Tests and benchmarks": market_clear p50 on PostgreSQL, ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, nargs="+", default=[10, 100, 500, 1000])
    parser.add_argument("--repeat", type=int, default=21)
    scratch_db.add_arguments(parser)
    parser.add_argument("--profile", action="store_true", help="cProfile the timed clearings of the last size; print the top 25")
    parser.add_argument("--hollow", action="store_true", help="let each bid clear at its commit (the hollow no-op)")
    args = parser.parse_args()
    scratch_db.django_on_scratch(args)
    run(args)
    return 0


def run(args: argparse.Namespace) -> None:
    from decimal import Decimal

    import numpy as np
    from django.db import transaction

    from marketplace.auction.models import WorkItem
    from marketplace.auction.services import bid_submit
    from marketplace.market.models.allocation import AllocationSnapshot
    from marketplace.market.models.jobs import Job
    from marketplace.market.models.queues import Queue
    from marketplace.market.services.clearing import market_clear
    from marketplace.market.services.clock import cluster_advance
    from marketplace.market.services.market import clearings_deferred
    from marketplace.market.services.setup import market_create, tenant_create

    rng = np.random.default_rng(0)
    hierarchy = {"root": 1.0, "root.a": 2.0, "root.a.x": 1.0, "root.a.y": 1.0, "root.b": 1.0, "root.b.z": 1.0}
    db = "PostgreSQL" if args.postgres else "SQLite"
    deferred = contextlib.nullcontext if args.hollow else clearings_deferred
    print(f"market_clear on {db}: median and p95 of {args.repeat} clearings, each after one arrival")
    print(f"{'active jobs':>12} {'clear p50 ms':>13} {'clear p95 ms':>13} {'cpu p50 ms':>11} {'solve p50 ms':>13} "
          f"{'rounds':>7} {'plans kept':>11}")

    def bid(tenant: object) -> None:
        work = [WorkItem("map", int(rng.integers(1, 50)), 10.0, float(rng.uniform(0.5, 2))),
                WorkItem("reduce", int(rng.integers(1, 10)), 20.0, float(rng.uniform(0.5, 2)))]
        with deferred():  # the bid's own clearing would run at its commit (eager Celery) and leave nothing to time
            bid_submit(tenant=tenant, budget=str(round(float(rng.uniform(50, 200)), 2)), work=work)

    for n in args.jobs:
        market = market_create(name=f"bench{n}", resources={"map": 100, "reduce": 50}, hierarchy=hierarchy)
        leaves = [q for q in Queue.objects.filter(market=market) if not q.children.exists()]
        tenants = [tenant_create(market=market, username=f"b{n}-{i}", password=None, queue=leaves[i % 3], deposit=Decimal("1e9"))
                   for i in range(8)]
        with transaction.atomic():  # one commit for the set-up's bids
            for i in range(n):
                bid(tenants[i % 8])
        market_clear(market_id=market.pk)
        cluster_advance(market_id=market.pk, seconds=0.0)  # the clock has seen every job
        totals, cpus, solves, rounds, server = [], [], [], [], []
        profiler = cProfile.Profile() if args.profile and n == args.jobs[-1] else None
        for k in range(args.repeat):
            bid(tenants[k % 8])
            active = Job.objects.filter(market=market, status__in=Job.ACTIVE).count()
            b0 = scratch_db.backend_cpu_s()
            t0, c0 = time.perf_counter(), time.process_time()
            if profiler:
                profiler.enable()
            result = market_clear(market_id=market.pk)
            if profiler:
                profiler.disable()
            totals.append((time.perf_counter() - t0) * 1000)
            cpus.append((time.process_time() - c0) * 1000)
            server.append((scratch_db.backend_cpu_s() - b0) * 1000)
            require(result.status == "cleared" and result.rounds > 0,
                    f"every timed market_clear clears (status 'cleared', rounds > 0); clearing {k + 1} of {args.repeat} "
                    f"at {n} jobs returned {result.status!r} with {result.rounds} rounds")
            require(result.n_jobs == active, f"the clearing covers the {active} active jobs, it covered {result.n_jobs}")
            solves.append(result.solve_ms)
            rounds.append(result.rounds)
        kept = AllocationSnapshot.objects.filter(market=market, plan__isnull=False).count()
        p50, p95 = statistics.median(totals), float(np.percentile(totals, 95))
        print(f"{n:>12} {p50:>13.1f} {p95:>13.1f} {statistics.median(cpus):>11.1f} {statistics.median(solves):>13.1f} "
              f"{statistics.median(rounds):>7.0f} {kept:>11}")
        goal = GOALS_PG.get(n) if args.postgres else None
        record(f"market_clear p50, {n:,} active jobs, {db}", p50, unit="ms", goal=goal, better="lower",
               extra={"cpu_ms": statistics.median(cpus), "server_cpu_ms": statistics.mean(server), "solve_ms": statistics.median(solves)},
               note=f"CPU {statistics.median(cpus):.1f} ms + server {statistics.mean(server):.1f} ms (mean), "
                    f"solve {statistics.median(solves):.1f} ms")
        if profiler:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
