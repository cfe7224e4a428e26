"""Medians of the fair-share pieces added for paper 002.

* ``unit_task_schedule`` on the starvation example (Sec. 5.2.1; 12 units, 87 slots);
* one replay of a KTH-SP2 slice per policy on the engine's cluster (the
  ``ltrf_traces_kth`` experiment's core; 1,171 jobs, 57 user queues, 100 units);
* ``estimate_start`` (why-is-my-job-waiting) on the starvation example at t = 27;
* ``explain_wait`` on the same.

Run from the repository root (one run; medians of ``--repeat``)::

    .venv/bin/python bench/bench_fairshare_policies.py

What it proves it timed (``bench.figures.require``): each KTH replay finished every job of
the slice, the starvation schedule ran every slot of its horizon, and the waiting estimate
and its explanation concern a job that does wait.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import record, require, run_guarded
from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.unit_tasks import unit_task_schedule
from simulator.cluster.model import Cluster
from simulator.cluster.waiting import estimate_start, explain_wait
from simulator.experiments.ltrf.traces import build_tree, replay, trace_path
from simulator.records import JobSpec
from simulator.workloads.traces import load_swf

STARVATION = {0: {"A": 200, "B": 10, "C": 50, "D": 60}, 27: {"A": 20, "B": 60, "C": 40, "D": 80}}
FIG1B = {"root.G1.A": 1.0, "root.G1.B": 1.0, "root.G2.C": 1.0, "root.G2.D": 1.0}


def median_s(run: Callable[[], object], repeat: int, check: Callable[[object], None] | None = None) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
        if check is not None:
            check(out)
    return statistics.median(times)


def starvation_cluster() -> Cluster:
    cluster = Cluster([12], QueueTree.from_paths(FIG1B), policy="hltrf", t_wait=math.inf, sample_interval=math.inf)
    for leaf, n in enumerate([200, 10, 50, 60]):
        cluster.submit(JobSpec(leaf + 1, leaf, (n,), (1.0,), 0.0))
    for leaf, n in enumerate([20, 60, 40, 80]):
        cluster.submit(JobSpec(leaf + 11, leaf, (n,), (1.0,), 27.0))
    cluster.advance(27.0)
    return cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--hours", type=float, default=336.0, help="KTH slice length (simulated h)")
    args = parser.parse_args(argv)
    out = sys.stdout
    out.write(f"{'case':<46} {'median':>12}\n")
    for policy in ("mlrf", "ltrf", "hltrf"):
        sec = median_s(lambda p=policy: unit_task_schedule(12, {"G1": ["A", "B"], "G2": ["C", "D"]}, STARVATION,
                                                           policy=p, t_wait=2, horizon=87), args.repeat,
                       lambda out: require(len(out) == 87, f"a schedule of every slot of the horizon ({len(out)} of 87)"))  # type: ignore[arg-type]
        out.write(f"{'unit_task_schedule starvation ' + policy:<46} {sec * 1e3:>9.2f} ms\n")
    jobs = load_swf(trace_path("kth"), hours=args.hours)
    tree, leaf = build_tree(jobs, 1)
    window = args.hours * 3600
    for policy in ("fifo", "mlrf", "ltrf", "hltrf"):
        sec = median_s(lambda p=policy: replay(jobs, tree, leaf, capacity=100, policy=p, t_wait=60.0,
                                               interval=window / 300, window=window), max(1, args.repeat // 2),
                       lambda out: require(len(out[1]) == len(jobs), f"the replay finished every job ({len(out[1])} of {len(jobs)})"))  # type: ignore[index]
        out.write(f"{f'KTH {len(jobs)} jobs replay {policy}':<46} {sec:>10.2f} s\n")
        if policy == "hltrf":
            record(f"KTH-SP2 replay, {len(jobs)} jobs, H-LTRF", sec, unit="s", better="lower")
    cluster = starvation_cluster()
    require(cluster.job_state(12)[0][0] > 0, "the job whose wait is estimated has pending tasks")
    sec = median_s(lambda: estimate_start(cluster, 12), args.repeat)
    out.write(f"{'estimate_start (starvation, t = 27)':<46} {sec * 1e3:>9.2f} ms\n")
    sec = median_s(lambda: explain_wait(cluster, 12, 0), args.repeat)
    out.write(f"{'explain_wait (starvation, t = 27)':<46} {sec * 1e3:>9.2f} ms\n")
    return 0


if __name__ == "__main__":
    sys.exit(run_guarded(main))
