"""Benchmark: the live market (`replay_trace --drain`) against the offline runner, same slice, same market.

1. A throw-away SQLite database with the demo market (``seed_demo``: 40 map + 20 reduce
   slots, two organisations 2:1, four tenants), Celery eager: the README's default set-up.
2. ``replay_trace --drain`` of FB-2009 hours [start, start + hours): every bid, clearing
   and clock tick through the services and the database.
3. The offline runner (``simulator.runner.run``) on exactly those jobs, bids and market
   parameters (job ids = the live primary keys), timed in the same process.

Prints simulated seconds per wall second of both (median of ``--repeat`` runs), their
ratio, and whether completion times and charges agree job by job.

Usage: .venv/bin/python bench/bench_replay.py [--hours 3] [--start-hour 0] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TRACE = ROOT / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"


def live_run(hours: float, start_hour: float) -> tuple[float, float, int]:
    """(wall s, simulated s, market id) of one drain on a fresh database."""
    from django.core.management import call_command
    from django.db import connections

    connections.close_all()
    from marketplace import adapters

    adapters.forget_bids()  # a fresh database reuses primary keys
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite3"
    from django.conf import settings

    settings.DATABASES["default"]["NAME"] = os.environ["DATABASE_URL"].removeprefix("sqlite:///")
    call_command("migrate", verbosity=0)
    call_command("seed_demo", stdout=io.StringIO())
    from marketplace.models import Market

    market = Market.objects.earliest("id")
    t0 = time.perf_counter()
    call_command("replay_trace", str(TRACE), "--hours", str(hours), "--start-hour", str(start_hour), "--drain", stdout=io.StringIO())
    wall = time.perf_counter() - t0
    market.refresh_from_db()
    return wall, market.sim_time, market.pk


def offline_inputs(market_id: int) -> dict[str, object]:
    """The live market's jobs and parameters as the offline runner's arguments."""
    from marketplace import adapters
    from marketplace.models import Job, JobWork, Market
    from simulator.runner import MarketParams
    from simulator.workload import TraceJob

    market = Market.objects.get(pk=market_id)
    tree_map = adapters.queue_tree(market)
    types = adapters.resource_types(market)
    col = {t.pk: j for j, t in enumerate(types)}
    jobs = list(Job.objects.filter(market=market).select_related("tenant").order_by("pk"))
    work: dict[int, dict[int, JobWork]] = {}
    for w in JobWork.objects.filter(job__market=market):
        work.setdefault(w.job_id, {})[col[w.resource_type_id]] = w
    m = len(types)
    trace = [
        TraceJob(job.pk, job.sim_submit_time, job.tenant.name, "",
                 tuple(work[job.pk][j].tasks if j in work[job.pk] else 0 for j in range(m)),
                 tuple(work[job.pk][j].task_duration if j in work[job.pk] else 1.0 for j in range(m)))
        for job in jobs
    ]
    by_id = {job.pk: job for job in jobs}
    params = MarketParams(
        alpha=market.alpha, tol=market.auction_tolerance, max_rounds=market.auction_max_rounds,
        mechanism=market.mechanism, fairshare=market.fairshare_policy, dispatch=market.dispatch_mode, t_wait=market.t_wait,
        budget=lambda j: float(by_id[j.job_id].budget),
        weights=lambda j: [work[j.job_id][k].weight if k in work[j.job_id] else 0.0 for k in range(m)],
        utility=lambda j: by_id[j.job_id].utility, seed=market.pk,
    )
    leaf = {job.tenant.name: tree_map.leaf_position(job.queue_id) for job in jobs}
    live = {job.pk: (job.sim_finish_time, job.charged) for job in jobs}
    return {"jobs": trace, "tree": tree_map.tree, "leaf": leaf, "capacity": [t.capacity for t in types], "params": params, "live": live}


def offline_run(inputs: dict[str, object]) -> tuple[float, object]:
    from simulator.runner import run

    t0 = time.perf_counter()
    result = run(inputs["jobs"], tree=inputs["tree"], leaf_of_user=inputs["leaf"], capacity=inputs["capacity"],  # type: ignore[arg-type]
                 params=inputs["params"])  # type: ignore[arg-type]
    return time.perf_counter() - t0, result


def agreement(inputs: dict[str, object], result: object) -> str:
    from decimal import Decimal

    live: dict[int, tuple[float, Decimal]] = inputs["live"]  # type: ignore[assignment]
    finish = {f.job_id: f.finish_time for f in result.finished}  # type: ignore[attr-defined]
    paid: dict[int, Decimal] = {}
    for c in result.charges:  # type: ignore[attr-defined]
        paid[c.job_id] = paid.get(c.job_id, Decimal("0")) + Decimal(repr(c.amount)).quantize(Decimal("0.0001"))
    same_time = sum(1 for job, (t, _) in live.items() if t is not None and finish.get(job) == t)
    same_money = sum(1 for job, (_, charged) in live.items() if paid.get(job, Decimal("0")) == charged)
    return f"{same_time}/{len(live)} completion times and {same_money}/{len(live)} charges identical"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=3.0)
    parser.add_argument("--start-hour", type=float, default=0.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite3"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")
    import logging

    import django

    django.setup()
    logging.disable(logging.WARNING)
    live_speed, offline_speed = [], []
    note = ""
    for _ in range(args.repeat):
        wall, sim, market_id = live_run(args.hours, args.start_hour)
        live_speed.append(sim / wall)
        inputs = offline_inputs(market_id)
        off_wall, result = offline_run(inputs)
        span = result.end_time - result.start_time  # type: ignore[attr-defined]
        offline_speed.append(span / off_wall)
        note = agreement(inputs, result)
    live_med, off_med = statistics.median(live_speed), statistics.median(offline_speed)
    print(f"FB-2009 hours {args.start_hour:g}-{args.start_hour + args.hours:g}, demo market (40 map + 20 reduce slots), "
          f"median of {args.repeat}")
    print(f"{'live replay_trace --drain (SQLite, eager)':<44} {live_med:>9.0f} simulated s per wall s")
    print(f"{'offline runner, same jobs and market':<44} {off_med:>9.0f} simulated s per wall s")
    print(f"{'offline / live':<44} {off_med / live_med:>9.2f}x")
    print(f"live vs offline: {note}")


if __name__ == "__main__":
    main()
