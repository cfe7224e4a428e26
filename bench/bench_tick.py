"""Benchmark: wall time of one clock tick (`cluster_advance`) with about N active jobs.

The set-up of ``make load``'s market: the demo hierarchy (two organisations 2:1, four leaf
queues), 40 map + 20 reduce slots, ``clock_speed`` 60 and a tick every 0.5 wall seconds,
so each tick advances 30 simulated seconds (``--sim-per-tick``). The market gets
``--active`` bids (map tasks U{1..49} x 10 s, reduce tasks U{1..9} x 20 s, budgets U[50,
200]), a clearing and ``--warmup`` ticks; then ``--repeat`` times: as many bids as jobs
departed in the last tick arrive (so about N jobs stay active), the clearing task clears
them (``market_clear``, not timed: the worker's), and the tick is timed. Each tick
applies that Plan, takes a step per departure, clears after each (paper 000, Sec. 4) and
writes the progress, the money and the samples.

What it proves it timed (``bench.figures.require``): every timed tick moved the clock by
``--sim-per-tick`` with at least 90 % of N jobs active, the ticks together started and
finished tasks and saw departures, and the jobs the database shows finished are the
departures the ticks reported.

It ends with the time of 10^7 pure-Python additions (the goals, 50 ms at 400 and 250 ms at 5,000
active jobs on PostgreSQL, are for about 0.6 s).

Usage: .venv/bin/python bench/bench_tick.py [--active 400] [--repeat 41] [--postgres [--pg-url URL]]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import scratch_db  # noqa: E402
from bench.figures import python_additions_s, record, require, run_guarded  # noqa: E402

GOAL_MS = {400: 50.0, 5000: 250.0}  # README's goals: the tick at 400 and 5,000 active jobs, p50 (PostgreSQL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--active", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=41)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--sim-per-tick", type=float, default=30.0)
    parser.add_argument("--profile", type=Path, default=None, help="write a cProfile of the timed ticks here")
    scratch_db.add_arguments(parser)
    args = parser.parse_args()
    db = scratch_db.django_on_scratch(args)
    run(args, db)
    return 0


def demo_market(name: str) -> tuple[Any, list[Any]]:
    """``make load``'s market (module docstring) and its tenants, one per demo leaf queue, with deposits no
    bid exhausts: ``(Market, [Tenant])``. Django must be set up."""
    from decimal import Decimal

    from marketplace.management.commands.seed_demo import DEMO_HIERARCHY, DEMO_TENANTS
    from marketplace.market.models.queues import Queue
    from marketplace.market.services.setup import market_create, tenant_create

    market = market_create(name=name, resources={"map": 40, "reduce": 20}, hierarchy=DEMO_HIERARCHY)
    leaves = {q.name: q for q in Queue.objects.filter(market=market)}
    return market, [tenant_create(market=market, username=user, password=None, queue=leaves[path.rsplit(".", 1)[1]],
                                  deposit=Decimal("1e9")) for user, path in DEMO_TENANTS.items()]


def place_bids(tenants: list[Any], rng: Any, count: int, first: int = 0) -> None:
    """``count`` bids of the module docstring's random work and budgets, drawn from ``rng`` (a numpy
    Generator), by the tenants in turn from ``tenants[first % len]``, in one transaction with the
    clearings deferred (the caller clears)."""
    from django.db import transaction

    from marketplace.auction.services import WorkItem, bid_submit
    from marketplace.market.services.market import clearings_deferred

    with clearings_deferred(), transaction.atomic():
        for k in range(first, first + count):
            work = [WorkItem("map", int(rng.integers(1, 50)), 10.0, float(rng.uniform(0.5, 2))),
                    WorkItem("reduce", int(rng.integers(1, 10)), 20.0, float(rng.uniform(0.5, 2)))]
            bid_submit(tenant=tenants[k % len(tenants)], budget=str(round(float(rng.uniform(50, 200)), 2)), work=work)


def run(args: argparse.Namespace, db: str) -> None:
    import cProfile

    import numpy as np

    from marketplace.market.models.jobs import Job
    from marketplace.market.models.market import Market
    from marketplace.market.services.clearing import market_clear
    from marketplace.market.services.clock import cluster_advance

    rng = np.random.default_rng(0)
    market, tenants = demo_market(f"bench-tick-{args.active}")
    placed = 0

    def bids(count: int) -> None:  # the worker's clearing below covers them
        nonlocal placed
        place_bids(tenants, rng, count, first=placed)
        placed += count

    bids(args.active)
    market_clear(market_id=market.pk)
    departed = 0
    for _ in range(args.warmup):
        departed = cluster_advance(market_id=market.pk, seconds=args.sim_per_tick).finished_jobs
    walls, cpus, active_seen = [], [], []
    db_cpu = 0.0
    finished_jobs = started = finished_tasks = clearings = 0
    profiler = cProfile.Profile() if args.profile else None
    for _ in range(args.repeat):
        bids(max(departed, 1))
        market_clear(market_id=market.pk)
        before = Market.objects.values_list("sim_time", "clearings").get(pk=market.pk)
        active_seen.append(Job.objects.filter(market=market, status__in=Job.ACTIVE).count())
        b0 = scratch_db.backend_cpu_s()
        t0, c0 = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        result = cluster_advance(market_id=market.pk, seconds=args.sim_per_tick)
        if profiler:
            profiler.disable()
        walls.append((time.perf_counter() - t0) * 1000)
        cpus.append((time.process_time() - c0) * 1000)
        db_cpu += scratch_db.backend_cpu_s() - b0
        require(abs(result.sim_time - (before[0] + args.sim_per_tick)) < 1e-6,
                f"each timed tick moves the clock by {args.sim_per_tick} s (from {before[0]} it reached {result.sim_time})")
        departed = result.finished_jobs
        finished_jobs += departed
        started += result.started_tasks
        finished_tasks += result.finished_tasks
        clearings += Market.objects.values_list("clearings", flat=True).get(pk=market.pk) - before[1]
    require(min(active_seen) >= 0.9 * args.active, f"about {args.active} jobs active at every tick (fewest: {min(active_seen)})")
    require(started > 0 and finished_tasks > 0 and finished_jobs > 0,
            f"the ticks ran tasks and jobs departed (started {started}, finished {finished_tasks} tasks, {finished_jobs} jobs)")
    done_in_db = Job.objects.filter(market=market, status=Job.Status.FINISHED).count()
    require(done_in_db >= finished_jobs, f"the {finished_jobs} departures the timed ticks reported are finished jobs ({done_in_db})")
    if profiler:
        profiler.dump_stats(str(args.profile))
    p50, p95 = statistics.median(walls), float(np.percentile(walls, 95))
    print(f"cluster_advance on {db}: {args.repeat} ticks of {args.sim_per_tick:g} simulated s, "
          f"{statistics.median(active_seen):.0f} active jobs (median), {finished_jobs / args.repeat:.1f} departures "
          f"and {clearings / args.repeat:.1f} clearings a tick")
    print(f"tick wall p50 {p50:.1f} ms, p95 {p95:.1f} ms; CPU p50 {statistics.median(cpus):.1f} ms; "
          f"database server CPU {1000 * db_cpu / args.repeat:.1f} ms a tick (mean)")
    cpu_ms, server_ms = statistics.median(cpus), 1000 * db_cpu / args.repeat
    additions = python_additions_s()
    print(f"10^7 pure-Python additions: {additions:.2f} s (the goals are for about 0.6 s)")
    record(f"clock tick p50, {args.active:,} active jobs, {db}", p50, unit="ms", goal=GOAL_MS.get(args.active) if args.postgres else None,
           better="lower", extra={"cpu_ms": cpu_ms, "server_cpu_ms": server_ms, "additions_s": additions},
           note=f"CPU {cpu_ms:.1f} ms + server {server_ms:.1f} ms, {finished_jobs / args.repeat:.1f} departures a tick, "
                f"10^7 additions {additions:.2f} s")


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
