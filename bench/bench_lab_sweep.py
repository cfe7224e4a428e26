"""Benchmark: a split lab run (the published-schedulers study, one part per (trace, window) cell) on
one and on two real Celery workers.

Needs PostgreSQL and Redis (``DATABASE_URL``, ``REDIS_URL``; the database is created if missing and migrated here and a
staff user ``bench-lab`` created). For each worker count W it flushes the Redis db, starts W
``celery worker -Q simulation --concurrency=1`` processes (prefork, one child each: W processes
working in parallel, as ``docker compose up --scale sim-worker=W``), starts one lab run of
``published_schedulers`` (``lab.services.experiments.experiment_start``: a parent and one part
per cell, each part a task on the ``simulation`` queue) and times from the start to the parent
done (wall seconds), printing the parent's progress as it moves. Prints wall time per W, the
speed-up, the parts' summed wall seconds and the machine's load average (the machine is shared:
other processes compete for the same cores).

What it proves it timed (``bench.figures.require``): the parent is done and every part of it is
done; the combined result has a row for every (trace, window, policy) asked (H-LTRF always runs,
the study's paired baseline); the result of every W equals the first W's (the study is
deterministic: same numbers whatever the number of workers; ``wall_s`` and ``workers`` aside);
with W workers and at least W parts, the parts ran on W distinct workers.

The default is the quick size (FB-2009, KTH-SP2 and LCG, 2 windows each, short windows: about
half a minute of work on one worker); the study's full size is ``--seeds 10 --no-quick`` (hours).
The workers run as compose's ``sim-worker`` does, with ``--disable-prefetch`` (a worker takes a
part only when its process is free); ``--prefetch`` starts them without it, for comparison: a
part is acknowledged when it starts (``acks_late=False``), so a busy worker then reserves the
next part while another worker may sit idle (measured: one worker ran both LCG cells, 19 s, while
the other was idle for 14 s of a 24 s run).

Usage: DATABASE_URL=postgres://postgres@127.0.0.1:5432/wtlab REDIS_URL=redis://127.0.0.1:6379/11 \\
       .venv/bin/python bench/bench_lab_sweep.py [--workers 1 2] [--traces fb2009 kth lcg] [--seeds 2] [--quick | --no-quick]
       [--policies H-LTRF DRF ...] [--prefetch]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")

from bench import scratch_db, sim_workers  # noqa: E402
from bench.figures import record, require, run_guarded  # noqa: E402

EXPERIMENT = "published_schedulers"
STRIP = ("wall_s", "workers")  # what may differ between W (wall seconds, worker count)


def _params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {"traces": args.traces, "seeds": args.seeds, "quick": args.quick}
    if args.policies:
        params["policies"] = args.policies
    return params


def _wait_done(run_id: int, n: int, timeout_s: float) -> None:
    """Poll the parent until it ends, printing its progress whenever it moves."""
    from marketplace.lab.models import ExperimentRun

    shown, deadline = None, time.monotonic() + timeout_s
    while True:
        status, progress, message = ExperimentRun.objects.values_list("status", "progress", "message").get(pk=run_id)
        if (status, message) != shown:
            shown = (status, message)
            print(f"  W={n}: {status:<9} {100 * progress:5.1f} %  {message}", flush=True)
        if status in ("done", "failed", "cancelled"):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"W={n}: the run did not end within {timeout_s:.0f} s; see var/bench-lab-worker-*.log")
        time.sleep(0.2)


def one(n: int, args: argparse.Namespace) -> tuple[float, dict[str, Any], float, int]:
    """Run the study on ``n`` workers: (wall s from start to the parent done, its result without
    ``STRIP``, the parts' summed wall s, the number of parts)."""
    import redis
    from django.contrib.auth import get_user_model

    from marketplace.celery import app
    from marketplace.lab.models import ExperimentRun
    from marketplace.lab.services.experiments import experiment_start

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    procs = sim_workers.start(n, "bench-lab", prefetch=args.prefetch)
    try:
        deadline = time.monotonic() + 90
        while len(app.control.ping(timeout=1.0)) < n:
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise SystemExit("workers did not start; see var/bench-lab-worker-*.log")
        user, _ = get_user_model().objects.get_or_create(username="bench-lab", defaults={"is_staff": True})
        t0 = time.perf_counter()
        run = experiment_start(name=EXPERIMENT, params=_params(args), user=user)
        _wait_done(run.pk, n, args.timeout)
        wall = time.perf_counter() - t0
    finally:
        sim_workers.stop(procs)
    run.refresh_from_db()
    parts = list(ExperimentRun.objects.filter(parent=run).order_by("part_index"))
    require(run.status == "done", f"W={n}: the run done ({run.status}: {run.message})")
    require(bool(parts) and all(p.status == "done" for p in parts), f"W={n}: every part done ({[p.status for p in parts]})")
    workers = {p.worker for p in parts}
    require(len(parts) < n or len(workers) == n, f"W={n}: the parts ran on {n} distinct workers ({sorted(workers)})")
    busy = sum((p.finished_at - p.started_at).total_seconds() for p in parts if p.started_at and p.finished_at)
    return wall, {k: v for k, v in run.result.items() if k not in STRIP}, busy, len(parts)


def _check_rows(result: dict[str, Any], params: dict[str, Any]) -> None:
    """Require a row of the combined result's table "Every run" for each (trace, window, policy) asked."""
    from simulator import experiments
    from simulator.experiments.published.setup import TRACES
    from simulator.experiments.published.study import policies

    values = experiments.get(EXPERIMENT).params(params)
    want = {(TRACES[t], s, p) for t in values["traces"] for s in range(int(values["seeds"])) for p in policies(values)}
    runs = next((t for t in result.get("tables", []) if t["title"] == "Every run"), None)
    require(runs is not None, "the combined result has the table 'Every run'")
    assert runs is not None
    col = {c: k for k, c in enumerate(runs["columns"])}
    got = {(r[col["trace"]], r[col["seed"]], r[col["configuration"]]) for r in runs["rows"]}
    require(got == want and len(runs["rows"]) == len(want),
            f"a row per (trace, window, policy) asked: {len(want)} wanted, {len(runs['rows'])} rows, missing {sorted(want - got)[:5]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--traces", nargs="+", default=["fb2009", "kth", "lcg"])
    parser.add_argument("--seeds", type=int, default=2, help="windows per trace")
    parser.add_argument("--quick", action=argparse.BooleanOptionalAction, default=True, help="the study's short windows")
    parser.add_argument("--policies", nargs="+", default=None, help="default: every policy of the study")
    parser.add_argument("--prefetch", action="store_true",
                        help="start the workers without --disable-prefetch (a busy worker may reserve the next part)")
    parser.add_argument("--timeout", type=float, default=6 * 3600.0, help="wall seconds to wait for one run")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get("REDIS_URL"):
        raise SystemExit("set DATABASE_URL=postgres://... and REDIS_URL=redis://...")
    scratch_db.ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    require(not settings.EXPERIMENTS_IN_THREAD, "runs go to the workers (EXPERIMENTS_IN_THREAD is off)")
    call_command("migrate", verbosity=0)
    rows, first = [], None
    for n in args.workers:
        load = os.getloadavg()[0]
        wall, result, busy, parts = one(n, args)
        _check_rows(result, _params(args))
        if first is None:
            first = result
        require(result == first, f"W={n}: the same result as W={args.workers[0]} (the study is deterministic)")
        rows.append((n, wall, busy, parts, load))
    size = f"traces {' '.join(args.traces)}, {args.seeds} windows each, {'quick' if args.quick else 'full'} windows"
    print(f"lab sweep: {EXPERIMENT} ({size}), {rows[0][3]} parts")
    print(f"{'workers':>7} {'wall s':>8} {'speed-up':>8} {'parts busy s':>12} {'load avg (1 min) before':>24}")
    for n, wall, busy, _, load in rows:
        print(f"{n:>7} {wall:>8.1f} {rows[0][1] / wall:>8.2f} {busy:>12.1f} {load:>24.2f}")
    for n, wall, _, parts, _ in rows:
        record(f"lab sweep ({EXPERIMENT}, {parts} parts), {n} worker{'s' if n > 1 else ''}: wall", wall, unit="s", better="lower",
               note=size)
    if len(rows) > 1:
        record(f"lab sweep ({rows[0][3]} parts), {rows[-1][0]} workers vs {rows[0][0]}: speed-up", rows[0][1] / rows[-1][1], unit="x",
               note=size)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
