"""Faithful to the model: the first half hour of FB-2009 replayed live at clock speed 60 on the
simulated cluster and on Slurm (same seed, capacities and market), job by job.

Each backend runs ``manage.py replay_trace`` on a fresh SQLite database (``seed_demo``'s market:
map 40, reduce 20 slots, the same partitions ``make slurm-up`` writes). The table compares each
replayed job's completion time (simulated seconds on the market clock) and charge, and the spot
market's realised rate per resource type (charges over slot-seconds of the whole replay): Spearman rank correlation, median and p95 of the
relative difference. Differences larger than Slurm's start latency are listed with their job.

Run as root with Slurm up (``make slurm-up``): ``python bench/slurm_fidelity.py [--hours 0.5]``;
``--markdown`` prints the tables for ``docs/slurm.md``. The set-up (half an hour, speed 60, the
demo's capacities, seed 0) is the issue's, fixed before any run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
PY = str(ROOT / ".venv" / "bin" / "python")
TRACE = "data/traces/FB-2009_samples_24_times_1hr_0.tsv"
EXPORT = """
import json
from marketplace.market.models.jobs import Job
from marketplace.market.models.allocation import RateSample
from marketplace.slurm.models import SlurmTask
jobs = {j.external_id: [j.sim_submit_time, j.sim_start_time, j.sim_finish_time, float(j.charged), j.status]
        for j in Job.objects.exclude(external_id="")}
from django.db.models import Sum
rates = {row["resource_type__name"]: row["c"] / row["s"] if row["s"] else None
         for row in RateSample.objects.values("resource_type__name").annotate(c=Sum("charged"), s=Sum("slot_seconds"))}
tasks = {"rows": SlurmTask.objects.count(), "completed": SlurmTask.objects.filter(state="completed").count(),
         "failed": SlurmTask.objects.filter(state__in=["failed", "lost"]).count()}
print(json.dumps({"jobs": jobs, "rates": rates, "tasks": tasks}))
"""


def replay(backend: str, hours: float, speed: float) -> dict:
    """One live replay on a fresh database; its jobs, last realised rates and task counts."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3", "CLUSTER_BACKEND": backend}
        env.pop("REDIS_URL", None)  # eager clearings: the same path on both backends
        run = lambda *a: subprocess.run([PY, "manage.py", *a], cwd=ROOT, env=env, check=True, capture_output=True, text=True)  # noqa: E731
        run("migrate", "-v0")
        run("seed_demo")
        t0 = time.perf_counter()
        out = run("replay_trace", TRACE, "--hours", str(hours), "--speedup", str(speed)).stdout
        wall = time.perf_counter() - t0
        data = json.loads(run("shell", "-c", EXPORT).stdout.strip().splitlines()[-1])
        data["wall_s"], data["summary"] = wall, out.strip().splitlines()[-2:]
        return data


def rel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a - b) / np.maximum(np.abs(a), 1e-9)


def compare(sim: dict, slurm: dict, speed: float, latency_s: float) -> dict:
    keys = sorted(set(sim["jobs"]) & set(slurm["jobs"]), key=lambda k: float(k) if k.replace(".", "").isdigit() else k)
    a = {k: sim["jobs"][k] for k in keys}
    b = {k: slurm["jobs"][k] for k in keys}
    finish_a = np.array([a[k][2] for k in keys], dtype=float)
    finish_b = np.array([b[k][2] for k in keys], dtype=float)
    resp_a = finish_a - np.array([a[k][0] for k in keys])
    resp_b = finish_b - np.array([b[k][0] for k in keys])
    charge_a = np.array([a[k][3] for k in keys])
    charge_b = np.array([b[k][3] for k in keys])
    tolerance = latency_s * speed  # Slurm's start latency, in simulated seconds
    outliers = [(k, a[k][2], b[k][2], b[k][2] - a[k][2]) for k in keys if abs(b[k][2] - a[k][2]) > tolerance]
    return {
        "jobs": len(keys), "finished": (sum(a[k][4] == "finished" for k in keys), sum(b[k][4] == "finished" for k in keys)),
        "finish_rho": float(stats.spearmanr(finish_a, finish_b).statistic),
        "response_rel": (float(np.median(rel(resp_a, resp_b))), float(np.percentile(rel(resp_a, resp_b), 95))),
        "finish_abs": (float(np.median(np.abs(finish_b - finish_a))), float(np.percentile(np.abs(finish_b - finish_a), 95))),
        "charge_rho": float(stats.spearmanr(charge_a, charge_b).statistic) if np.ptp(charge_a) > 0 else float("nan"),
        "charge_rel": (float(np.median(rel(charge_a, charge_b))), float(np.percentile(rel(charge_a, charge_b), 95))),
        "rates": {t: (sim["rates"].get(t), slurm["rates"].get(t)) for t in sorted(set(sim["rates"]) | set(slurm["rates"]))},
        "outliers": outliers, "tolerance_s": tolerance,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=0.5)
    parser.add_argument("--speed", type=float, default=60.0)
    parser.add_argument("--latency", type=float, default=1.0, help="Slurm's start latency, wall s (timestamps are whole seconds).")
    parser.add_argument("--json", type=Path, default=None, help="Also write the raw replays and the comparison here.")
    args = parser.parse_args(argv)
    sim = replay("simulated", args.hours, args.speed)
    slurm = replay("slurm", args.hours, args.speed)
    if slurm["tasks"]["completed"] == 0:
        print("the Slurm replay ran no task on Slurm: is Slurm up (make slurm-up)?", file=sys.stderr)
        return 3
    result = compare(sim, slurm, args.speed, args.latency)
    print(f"jobs {result['jobs']}; finished simulated/slurm {result['finished']}; Slurm tasks {slurm['tasks']}")
    print(f"wall s simulated {sim['wall_s']:.1f}, slurm {slurm['wall_s']:.1f}")
    print(f"completion time: Spearman {result['finish_rho']:.3f}; |diff| median {result['finish_abs'][0]:.0f} s, "
          f"p95 {result['finish_abs'][1]:.0f} s (simulated)")
    print(f"response time: relative difference median {result['response_rel'][0]:.3f}, p95 {result['response_rel'][1]:.3f}")
    print(f"charge: Spearman {result['charge_rho']:.3f}; relative difference median {result['charge_rel'][0]:.4f}, "
          f"p95 {result['charge_rel'][1]:.4f}")
    for t, (x, y) in result["rates"].items():
        print(f"realised rate {t}: simulated {x}, slurm {y}")
    print(f"jobs whose completion differs by more than Slurm's start latency ({result['tolerance_s']:.0f} simulated s): "
          f"{len(result['outliers'])}")
    for k, x, y, d in result["outliers"]:
        print(f"  job {k}: simulated {x:.0f} s, slurm {y:.0f} s ({d:+.0f} s)")
    if args.json:
        args.json.write_text(json.dumps({"simulated": sim, "slurm": slurm, "comparison": result}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
