"""Paper 000, Sec. 7.1.2, Fig. 9b: user 3's reported map:reduce weight
ratio against every user's job efficiency, with 95 % confidence intervals over seeds, and
the set-up's knobs exposed for a sensitivity study.

Prints, per ratio, each user's mean job efficiency (mean over its jobs of 1 / response
time, in 1 / 1000 simulated s; ``--metric inverse-mean`` for 1 / mean response time) with
the 95 % CI over the seeds, then user 3's efficiency at each ratio minus at the ratio
nearest its true 6, paired by seed. Defaults are the experiment's (``_abacus_table1``).

Usage (the experiment's set-up, 10 seeds):
    PYTHONPATH=. .venv/bin/python bench/abacus_fig9b_table.py --seeds 10
Variants: ``--capacity 30 10 --tasks 10 4 --pending-bids`` (the earlier set-up),
``--staged``, ``--rate 1.5`` (every arrival rate times 1.5), ``--waves 6`` (6x the tasks
at 1/6 of the task times).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from simulator.experiments.abacus.setup import CAPACITY, simulate
from simulator.market.records import Bid
from simulator.workloads.table1 import MAP_TASKS, REDUCE_TASKS, TABLE1, Job, table1_jobs

TRUE_RATIO = TABLE1[2].map_s / TABLE1[2].reduce_s


def efficiencies(ratio: float, seed: int, args: argparse.Namespace) -> list[float]:
    """Per user: mean job efficiency (1 / 1000 simulated s) in one run."""
    k = float(args.waves)
    jobs = [Job(j.job_id, j.user, j.submit, (round(args.tasks[0] * k), round(args.tasks[1] * k)),
                (j.task_s[0] / k, j.task_s[1] / k))
            for j in table1_jobs(TABLE1, seed=seed, rate_scale=args.rate)]

    def bid(j: Job) -> Bid:
        return Bid(TABLE1[j.user].budget, (ratio, 1.0) if j.user == 2 else TABLE1[j.user].true_weights, "linear")

    out = simulate(jobs, bid, alpha=args.alpha, capacity=args.capacity, seed=seed, staged=args.staged,
                   whole_job_bids=not args.pending_bids)
    result = []
    for user in range(3):
        times = np.array([o.response_s for o in out if o.job.user == user])
        value = np.mean(1.0 / times) if args.metric == "mean-inverse" else 1.0 / np.mean(times)
        result.append(1000.0 * float(value))
    return result


def ci(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), 1.96 * float(values.std(ddof=1)) / math.sqrt(values.size)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ratios", type=float, nargs="+", default=[0.25, 0.5, 1, 2, 4, 6, 8, 16, 64])
    p.add_argument("--seeds", type=int, default=10, help="seeds 0 .. N-1")
    p.add_argument("--capacity", type=int, nargs=2, default=list(CAPACITY), help="map and reduce slots")
    p.add_argument("--tasks", type=int, nargs=2, default=[MAP_TASKS, REDUCE_TASKS], help="map and reduce tasks per job")
    p.add_argument("--waves", type=float, default=1.0, help="k: k times the tasks at 1 / k of the task times")
    p.add_argument("--rate", type=float, default=1.0, help="multiplies every arrival rate")
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--staged", action="store_true", help="reduces only after all the job's maps")
    p.add_argument("--pending-bids", action="store_true", help="jobs bid only on types they still have tasks of")
    p.add_argument("--metric", choices=["mean-inverse", "inverse-mean"], default="mean-inverse")
    args = p.parse_args()
    if args.seeds < 2:
        p.error("--seeds must be at least 2 for a confidence interval")
    runs = np.array([[efficiencies(r, s, args) for s in range(args.seeds)] for r in args.ratios])  # (ratio, seed, user)
    print(f"capacity {args.capacity}, tasks {args.tasks} x {args.waves:g}, rate x {args.rate:g}, staged {args.staged}, "
          f"bids {'pending types' if args.pending_bids else 'whole job'}, alpha {args.alpha:g}, {args.seeds} seeds, "
          f"efficiency = {args.metric} (1 / 1000 simulated s, mean +- 95 % CI)")
    print(f"{'ratio':>7} | {'user 1':>14} | {'user 2':>14} | {'user 3':>14} | user 3 minus at nearest-6 (wins)")
    near = int(np.argmin([abs(math.log(r / TRUE_RATIO)) for r in args.ratios]))
    for i, r in enumerate(args.ratios):
        cells = [f"{m:6.2f} +- {h:5.2f}" for m, h in (ci(runs[i, :, u]) for u in range(3))]
        d, h = ci(runs[i, :, 2] - runs[near, :, 2])
        wins = int(np.sum(runs[i, :, 2] > runs[near, :, 2]))
        print(f"{r:7g} | " + " | ".join(cells) + f" | {d:+.3f} +- {h:.3f} ({wins}/{args.seeds})")
    best = args.ratios[int(np.argmax(runs[:, :, 2].mean(axis=1)))]
    print(f"user 3 peaks at ratio {best:g} (true {TRUE_RATIO:g}; paper: 4 of its five ratios)")


if __name__ == "__main__":
    main()
