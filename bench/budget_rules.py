"""The replay's budget rules compared: paper 000's U[50, 200] against budgets priced from the level.

The set-up is the one fixed in ``docs/economy.md`` section 10 before any run: for each slice
(FB-2009 hours 6-9, a busy slice; hours 0-3, the benchmark slice) and each seed 0..4, a fresh
demo market (``seed_demo`` on SQLite, eager Celery), then ``replay_trace --drain --seed s`` with
``--budgets paper`` and with ``--budgets priced``. The two rules draw the same u, weights and
tenants for a seed.

Per run, over the finished replayed jobs (market clock):

* mean and 95th percentile of the response time, finish - submit (s);
* small jobs' slowdown: a small job's work (slot-seconds: tasks x task duration, summed over its
  types) is at most the median work of the slice's trace jobs (the same threshold for both rules);
  its slowdown is its response time over its run time alone (the sum of its types' task
  durations: maps, then reduces); the mean over small jobs;
* the realised rate, sum charged / sum slot-seconds served (credits per slot-second);
* the bids refused;
* the drain's wall and CPU seconds (what the live path costs under each rule).

Reported: the mean over the seeds (and its range) per rule and slice, and the ratio priced / paper.
Each run runs in a child process on a copy of one freshly seeded database, so no state leaks
between runs.

What it proves it measured (``bench.figures.require``): every run replayed at least one job, every
replayed job either finished or was refused, and the market cleared.

Usage: .venv/bin/python bench/budget_rules.py [--seeds 5] [--slices 6 0] [--hours 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TRACE = ROOT / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"
RULES = ("paper", "priced")

from bench.figures import python_additions_s, require, run_guarded  # noqa: E402


def _django(db: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "marketplace.settings")
    import logging

    import django

    django.setup()
    logging.disable(logging.WARNING)


def seed_template(db: Path) -> None:
    """Migrate and seed the demo market into ``db`` (run in a child process)."""
    _django(db)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("seed_demo", stdout=io.StringIO())


def one_run(db: Path, rule: str, seed: int, start_hour: float, hours: float) -> dict[str, Any]:
    """Drain one slice on ``db`` (a copy of the seeded template) and measure it (module docstring)."""
    _django(db)
    from django.core.management import call_command

    from marketplace.market.models.jobs import Job
    from marketplace.market.models.market import Market

    market = Market.objects.earliest("id")
    clearings0 = market.clearings
    out = io.StringIO()
    t0, c0 = time.perf_counter(), time.process_time()
    call_command("replay_trace", str(TRACE), "--start-hour", str(start_hour), "--hours", str(hours), "--drain",
                 "--seed", str(seed), "--budgets", rule, stdout=out)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    market.refresh_from_db()
    summary = dict(kv.split("=", 1) for line in out.getvalue().splitlines() for kv in line.split() if "=" in kv)
    refused = int(summary.get("rejected", "-1"))
    jobs = list(Job.objects.filter(market=market).exclude(external_id="").prefetch_related("work"))
    done = [j for j in jobs if j.status == Job.Status.FINISHED]
    require(len(jobs) > 0, f"the slice replayed jobs ({len(jobs)})")
    require(refused >= 0 and len(done) == len(jobs), f"every replayed job finished ({len(done)} of {len(jobs)}; {refused} refused)")
    require(market.clearings > clearings0, "the market cleared")
    work, alone, response = {}, {}, {}
    for j in done:
        rows = list(j.work.all())
        work[j.pk] = sum(w.tasks * w.task_duration for w in rows)
        alone[j.pk] = sum(w.task_duration for w in rows)
        response[j.pk] = j.sim_finish_time - j.sim_submit_time
    from simulator.workloads.traces import load_swim

    trace = load_swim(TRACE, start_hour=start_hour, hours=hours, users=4, seed=seed)
    median_work = statistics.median(sum(n * d for n, d in zip(t.tasks, t.task_duration, strict=True)) for t in trace)
    small = [response[k] / alone[k] for k in work if work[k] <= median_work and alone[k] > 0]
    served = sum(j.slot_seconds or 0.0 for j in done)
    resp = sorted(response.values())
    return {
        "rule": rule, "seed": seed, "start_hour": start_hour, "jobs": len(jobs), "refused": refused,
        "mean_response_s": statistics.fmean(resp), "p95_response_s": resp[min(len(resp) - 1, int(0.95 * len(resp)))],
        "small_slowdown": statistics.fmean(small), "small_jobs": len(small),
        "realised_rate": float(sum(j.charged for j in done)) / served if served else 0.0,
        "wall_s": wall, "cpu_s": cpu, "sim_s": float(summary.get("sim_s", "0")),
    }


def _child(args: list[str]) -> str:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    return proc.stdout


FIGURES = ("mean_response_s", "p95_response_s", "small_slowdown", "realised_rate", "refused", "wall_s", "cpu_s")


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: per slice and figure, each rule's mean [min, max] over the seeds, and priced / paper."""
    lines = ["| slice | figure | paper 000's U[50, 200] | priced from the level | priced / paper |", "|---|---|---|---|---|"]
    for hour in sorted({r["start_hour"] for r in rows}, reverse=True):
        for fig in FIGURES:
            cells, means = [], []
            for rule in RULES:
                vals = [r[fig] for r in rows if r["rule"] == rule and r["start_hour"] == hour]
                means.append(statistics.fmean(vals))
                cells.append(f"{means[-1]:,.3g} [{min(vals):,.3g}, {max(vals):,.3g}]")
            ratio = f"{means[1] / means[0]:.2f}" if means[0] else "-"
            lines.append(f"| hours {hour:g}-{hour + 3:g} | {fig} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--slices", type=float, nargs="+", default=[6.0, 0.0], help="start hours")
    parser.add_argument("--hours", type=float, default=3.0)
    parser.add_argument("--json", type=Path, default=None, help="also write every run's figures here")
    parser.add_argument("--seed-template", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--one", nargs=4, metavar=("DB", "RULE", "SEED", "START"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed_template:
        seed_template(args.seed_template)
        return
    if args.one:
        db, rule, seed, start = args.one
        print(json.dumps(one_run(Path(db), rule, int(seed), float(start), args.hours)))
        return
    print(f"10^7 pure-Python additions: {python_additions_s():.2f} s")
    work = Path(tempfile.mkdtemp())
    template = work / "template.sqlite3"
    _child(["--seed-template", str(template)])
    rows = []
    for start in args.slices:
        for seed in range(args.seeds):
            for rule in RULES:  # the two rules alternate, so the machine's drift hits both
                db = work / f"{rule}-{seed}-{start:g}.sqlite3"
                shutil.copy(template, db)
                answer = _child(["--one", str(db), rule, str(seed), str(start), "--hours", str(args.hours)])
                rows.append(json.loads(answer.splitlines()[-1]))
                db.unlink()
                r = rows[-1]
                print(f"hours {start:g}+{args.hours:g} seed {seed} {rule}: {r['jobs']} jobs, mean {r['mean_response_s']:.0f} s, "
                      f"p95 {r['p95_response_s']:.0f} s, small slowdown {r['small_slowdown']:.2f}, rate {r['realised_rate']:.3f}, "
                      f"refused {r['refused']}, drain {r['wall_s']:.1f} s wall / {r['cpu_s']:.1f} s CPU", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(table(rows))


if __name__ == "__main__":
    sys.exit(run_guarded(main))
