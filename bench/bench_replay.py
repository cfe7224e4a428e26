"""Benchmark: the live market (`replay_trace --drain`) against the offline runner, same slice, same market.

1. A throw-away SQLite database with the demo market (``seed_demo``: 40 map + 20 reduce
   slots, two organisations 2:1, four tenants), Celery eager: the README's default set-up.
2. ``replay_trace --drain`` of FB-2009 hours [start, start + hours): every bid, clearing
   and clock tick through the services and the database.
3. The offline runner (``simulator.runner.run``) on exactly those jobs, bids and market
   parameters (job ids = the live primary keys), timed in the same process.

Prints simulated seconds per wall second of both (median of ``--repeat`` runs), their
ratio (of the medians, and the median of the per-run ratios, each run timing both sides
back to back), the same ratio in CPU time, and whether completion times and charges
agree job by job.

What it proves it timed (``bench.figures.require``): every trace job of the slice became a
bid (none rejected) and finished, live and offline; the live market cleared; and the two
runs agree job by job (completion time and charge). Its figure is the second
target: >= 2,500 simulated seconds per wall second on FB-2009 hours 0-3.

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

from bench.figures import python_additions_s, record, require, run_guarded  # noqa: E402


def live_run(hours: float, start_hour: float) -> tuple[float, float, float, int]:
    """(wall s, CPU s, simulated s, market id) of one drain on a fresh database; requires
    that every trace job became a bid and finished, and that the market cleared."""
    from django.core.management import call_command
    from django.db import connections

    connections.close_all()
    from marketplace.market import adapters

    adapters.forget_bids()  # a fresh database reuses primary keys
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite3"
    from django.conf import settings

    settings.DATABASES["default"]["NAME"] = os.environ["DATABASE_URL"].removeprefix("sqlite:///")
    call_command("migrate", verbosity=0)
    call_command("seed_demo", stdout=io.StringIO())
    from marketplace.market.models.market import Market

    market = Market.objects.earliest("id")
    from marketplace.market.models.jobs import Job
    from simulator.workloads.traces import load_swim

    clearings0 = market.clearings
    t0, c0 = time.perf_counter(), time.process_time()
    call_command("replay_trace", str(TRACE), "--hours", str(hours), "--start-hour", str(start_hour), "--drain", stdout=io.StringIO())
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    market.refresh_from_db()
    trace = load_swim(TRACE, start_hour=start_hour, hours=hours, users=4, seed=0)
    jobs = Job.objects.filter(market=market)
    finished = jobs.filter(status=Job.Status.FINISHED).count()
    require(len(trace) > 0 and jobs.count() == len(trace) == finished,
            f"every trace job became a bid and finished ({len(trace)} in the slice, {jobs.count()} bids, {finished} finished)")
    require(market.clearings - clearings0 >= len(trace), f"the live market cleared every bid ({market.clearings - clearings0} clearings)")
    return wall, cpu, market.sim_time, market.pk


def offline_run(market_id: int) -> tuple[float, float, object, dict[int, tuple[float, object]]]:
    """(wall s, CPU s, RunResult, live job id -> (finish time, charged)) of the offline replay
    of the live market's jobs (``marketplace.market.adapters.offline_replay``)."""
    from marketplace.market.adapters import offline_replay
    from marketplace.market.models.jobs import Job
    from marketplace.market.models.market import Market

    market = Market.objects.get(pk=market_id)
    live = {pk: (t, c) for pk, t, c in Job.objects.filter(market=market).values_list("id", "sim_finish_time", "charged")}
    t0, c0 = time.perf_counter(), time.process_time()
    result = offline_replay(market, live)
    return time.perf_counter() - t0, time.process_time() - c0, result, live


def agreement(live: dict[int, tuple[float, object]], result: object) -> str:
    """How many completion times and charges agree; requires all of them to, and every job to
    have finished offline."""
    from decimal import Decimal

    from marketplace.ledger.services import money

    finish = {f.job_id: f.finish_time for f in result.finished}  # type: ignore[attr-defined]
    paid: dict[int, Decimal] = {}
    for c in result.charges:  # type: ignore[attr-defined]
        paid[c.job_id] = paid.get(c.job_id, Decimal("0")) + money(c.amount)
    same_time = sum(1 for job, (t, _) in live.items() if t is not None and finish.get(job) == t)
    same_money = sum(1 for job, (_, charged) in live.items() if paid.get(job, Decimal("0")) == charged)
    note = f"{same_time}/{len(live)} completion times and {same_money}/{len(live)} charges identical"
    require(len(finish) == len(live) == same_time == same_money, f"live and offline agree job by job: {note}")
    return note


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
    live_speed, live_cpu_speed, offline_speed, ratios, cpu_ratios = [], [], [], [], []
    note = ""
    for _ in range(args.repeat):
        wall, cpu, sim, market_id = live_run(args.hours, args.start_hour)
        live_speed.append(sim / wall)
        live_cpu_speed.append(sim / cpu)
        off_wall, off_cpu, result, live = offline_run(market_id)
        span = result.end_time - result.start_time  # type: ignore[attr-defined]
        offline_speed.append(span / off_wall)
        ratios.append((span / off_wall) / (sim / wall))
        cpu_ratios.append((span / off_cpu) / (sim / cpu))
        note = agreement(live, result)
    live_med, off_med = statistics.median(live_speed), statistics.median(offline_speed)
    print(f"FB-2009 hours {args.start_hour:g}-{args.start_hour + args.hours:g}, demo market (40 map + 20 reduce slots), "
          f"median of {args.repeat}")
    print(f"{'live replay_trace --drain (SQLite, eager)':<44} {live_med:>9.0f} simulated s per wall s")
    print(f"{'offline runner, same jobs and market':<44} {off_med:>9.0f} simulated s per wall s")
    print(f"{'offline / live (ratio of the medians)':<44} {off_med / live_med:>9.2f}x")
    print(f"{'offline / live (median of per-run ratios)':<44} {statistics.median(ratios):>9.2f}x   runs: "
          + " ".join(f"{r:.2f}" for r in ratios))
    print(f"{'offline / live in CPU time (median)':<44} {statistics.median(cpu_ratios):>9.2f}x   (less sensitive to a busy machine)")
    print(f"live vs offline: {note}")
    print(f"10^7 pure-Python additions: {python_additions_s():.2f} s (the goal is for about 0.6 s)")
    slice_ = f"FB-2009 hours {args.start_hour:g}-{args.start_hour + args.hours:g}"
    goal = GOAL if (args.start_hour, args.hours) == (0.0, 3.0) else None
    record(f"live replay_trace --drain, SQLite, {slice_} (wall)", live_med, unit="sim s/s", goal=goal,
           extra={"cpu": statistics.median(live_cpu_speed)},
           note=f"{statistics.median(live_cpu_speed):.0f} simulated s per CPU s; median of {args.repeat}")
    record(f"live replay_trace --drain, SQLite, {slice_} (CPU)", statistics.median(live_cpu_speed), unit="sim s/s", goal=goal,
           note="simulated s per CPU s of this process (SQLite runs in it)")
    record(f"offline runner, same jobs as the live drain, {slice_}", off_med, unit="sim s/s")


GOAL = 2500.0  # README's goal: simulated seconds per wall second of the live drain, hours 0-3


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
