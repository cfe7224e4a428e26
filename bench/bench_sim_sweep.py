"""Benchmark: a simulation-lab sweep on one and on two real Celery workers.

Needs PostgreSQL and Redis (``DATABASE_URL``, ``REDIS_URL``; the database is created
if missing and migrated here and a staff user ``bench-sim`` created). For each worker count W it flushes the
Redis db, starts W ``celery worker -Q simulation --concurrency=1`` processes (prefork,
one child each: W processes working in parallel, as ``docker compose up --scale
sim-worker=W``; ``bench.sim_workers``, without prefetch), starts one study (``--values`` of alpha x ``--seeds``, FB-2009 hours
[0, --hours), ``--capacity`` map and reduce slots, default 20 and 10), and times from the
enqueue to the gathered table (wall seconds). Prints wall time per W, the speed-up,
the per-run wall seconds (median) and the machine's load average (the machine is
shared: other processes compete for the same cores).

What it proves it timed (``bench.figures.require``): every run of the study is done, and
each finished every job of its workload (its metrics: ``finished`` equals ``jobs`` > 0).

Usage: DATABASE_URL=postgres://postgres@127.0.0.1:5432/wt14 REDIS_URL=redis://127.0.0.1:6379/14 \\
       .venv/bin/python bench/bench_sim_sweep.py [--workers 1 2] [--hours 2] [--values 0.2 0.5 0.8] [--seeds 0 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")

from bench import scratch_db, sim_workers  # noqa: E402
from bench.figures import record, require, run_guarded  # noqa: E402


def one(n: int, args: argparse.Namespace) -> tuple[float, list[float]]:
    import redis
    from django.contrib.auth import get_user_model

    from marketplace.celery import app
    from marketplace.lab.models import ExperimentRun, SimulationStudy
    from marketplace.lab.services.simulations import simulation_start
    from simulator.whatif.run import FB2009

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    procs = sim_workers.start(n, "bench-sim")
    try:
        deadline = time.monotonic() + 90
        while len(app.control.ping(timeout=1.0)) < n:
            if time.monotonic() > deadline:
                raise SystemExit("workers did not start; see var/bench-sim-worker-*.log")
        user, _ = get_user_model().objects.get_or_create(username="bench-sim", defaults={"is_staff": True})
        workload = {"trace": str(FB2009), "trace_format": "auto", "start_hour": 0.0, "hours": args.hours, "time_scale": 1.0,
                    "tenants": 8, "groups": 2, "max_jobs": 0, "workload_seed": 0}  # fmt: skip
        base = {"mechanism": "abacus", "fairshare": "hltrf", "dispatch": "stride", "alpha": 0.5, "t_wait": 30.0}
        t0 = time.perf_counter()
        study = simulation_start(title=f"bench {n} workers", workload=workload, capacity=args.capacity, base=base, vary="alpha",
                                 values=args.values, seeds=args.seeds, user=user)  # fmt: skip
        while not SimulationStudy.objects.filter(pk=study.pk, gathered_at__isnull=False).exists():
            time.sleep(0.1)
        wall = time.perf_counter() - t0
        runs = list(ExperimentRun.objects.filter(study=study))
        require(len(runs) == len(args.values) * len(args.seeds) and all(r.status == "done" for r in runs),
                f"every run of the study done ({[r.status for r in runs]})")
        metrics = [(r.result or {}).get("metrics", {}) for r in runs]
        require(all(m.get("jobs", 0) > 0 and m.get("finished") == m.get("jobs") for m in metrics),
                f"every run finished its jobs ({[(m.get('finished'), m.get('jobs')) for m in metrics]})")
        per_run = [(r.finished_at - r.started_at).total_seconds() for r in runs]
        return wall, per_run
    finally:
        sim_workers.stop(procs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--capacity", type=int, nargs="+", default=[20, 10])
    parser.add_argument("--values", type=float, nargs="+", default=[0.2, 0.5, 0.8])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get("REDIS_URL"):
        raise SystemExit("set DATABASE_URL=postgres://... and REDIS_URL=redis://...")
    scratch_db.ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    rows = []
    for n in args.workers:
        load = os.getloadavg()[0]
        wall, per_run = one(n, args)
        rows.append((n, wall, statistics.median(per_run), len(per_run), load))
    runs = len(args.values) * len(args.seeds)
    print(f"sweep: alpha {args.values} x seeds {args.seeds} = {runs} runs, FB-2009 hours [0, {args.hours}), capacity {args.capacity}")
    print(f"{'workers':>7} {'wall s':>8} {'speed-up':>8} {'median run s':>12} {'load avg (1 min) before':>24}")
    for n, wall, med, _, load in rows:
        print(f"{n:>7} {wall:>8.1f} {rows[0][1] / wall:>8.2f} {med:>12.2f} {load:>24.2f}")
    if len(rows) > 1:
        record(f"simulation-lab sweep ({runs} runs), {rows[-1][0]} workers vs {rows[0][0]}: speed-up", rows[0][1] / rows[-1][1], unit="x")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
