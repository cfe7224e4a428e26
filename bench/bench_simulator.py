"""Offline replay speed: the first N hours of FB-2009 through market and cluster.

Usage:
    .venv/bin/python bench/bench_simulator.py --hours 3
    .venv/bin/python bench/bench_simulator.py --hours 24 --capacity 100 50 --users 8

Prints simulated seconds per wall second (and per CPU second of this process, the figure
that does not move with the machine's other load), the number of clearings, the mean
wall time of a clearing and the run's summary. Wall-clock figures depend on the machine;
the run itself is deterministic (seeded).

What it proves it timed (``bench.figures.require``): every job of the window was submitted
and finished, the auction ran on every arrival and departure (at least one clearing per
arrival, none unconverged, rounds > 0; a departure that leaves the market empty has nothing
to clear), and the simulated span covers the
window. Its goal (README, "Tests and benchmarks"): >= 6,000x real time on the 24 h window.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for scheduler and simulator

from bench.figures import Timer, python_additions_s, record, require, run_guarded
from scheduler.fairshare.fairness import QueueTree
from simulator.runner import MarketParams, run
from simulator.workloads.traces import SwimRule, load_swim

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=3.0, help="hours of the trace to replay (from hour 0)")
    parser.add_argument("--start-hour", type=float, default=0.0)
    parser.add_argument("--capacity", type=int, nargs=2, default=[100, 50], metavar=("MAP", "REDUCE"))
    parser.add_argument("--users", type=int, default=8, help="users, split over two groups")
    parser.add_argument("--fairshare", default="hltrf", choices=["fifo", "hltrf", "ltrf", "mlrf"])
    parser.add_argument("--t-wait", type=float, default=30.0)
    parser.add_argument("--dispatch", default="stride", choices=["stride", "lottery", "fifo"])
    parser.add_argument("--mechanism", default="abacus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace", type=Path, default=TRACE)
    return parser.parse_args(argv)


def two_group_tree(users: int) -> tuple[QueueTree, dict[str, int]]:
    """Users ``u<k>`` in groups ``g<k mod 2>`` (the loader's assignment), equal weights."""
    tree = QueueTree.from_paths({f"root.g{k % 2}.u{k}": 1.0 for k in range(users)})
    return tree, {name.rsplit(".", 1)[1]: pos for pos, name in enumerate(tree.leaf_names)}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    jobs = load_swim(args.trace, rule=SwimRule(), start_hour=args.start_hour, hours=args.hours,
                     users=args.users, groups=2, seed=args.seed)  # fmt: skip
    tree, leaf = two_group_tree(args.users)
    params = MarketParams(mechanism=args.mechanism, fairshare=args.fairshare, t_wait=args.t_wait,
                          dispatch=args.dispatch, seed=args.seed)  # fmt: skip
    with Timer() as timed:
        result = run(jobs, tree=tree, leaf_of_user=leaf, capacity=args.capacity, params=params,
                     timer=time.perf_counter)  # fmt: skip
    wall, cpu = timed.wall, timed.cpu
    sim = result.end_time - result.start_time
    _require_the_work(jobs, result, args)
    tasks = sum(sum(j.tasks) for j in jobs)
    clear_s = sum(result.clearing_wall_s)
    lines = [
        f"trace window: {args.hours:g} h from hour {args.start_hour:g}, {len(jobs)} jobs, {tasks} tasks",
        (
            f"cluster: {args.capacity[0]} map + {args.capacity[1]} reduce slots, {args.fairshare}, "
            f"T_wait {args.t_wait:g} s, {args.dispatch} dispatch, mechanism {args.mechanism}"
        ),
        f"simulated {sim:.0f} s in {wall:.2f} s wall ({cpu:.2f} s CPU): {sim / max(wall, 1e-9):.0f} simulated s per wall s, "
        f"{sim / max(cpu, 1e-9):.0f} per CPU s",
        (
            f"clearings: {result.clearings}, mean clearing {1e3 * clear_s / max(result.clearings, 1):.2f} ms "
            f"({100 * clear_s / max(wall, 1e-9):.0f} % of wall), auction rounds {result.auction_rounds}"
        ),
        "summary: " + json.dumps(result.summary()),
        f"10^7 pure-Python additions: {python_additions_s():.2f} s (the goal is for about 0.6 s)",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    window = f"offline FB-2009 {args.hours:g} h from hour {args.start_hour:g}"
    goal = GOAL_X if (args.hours, args.start_hour, args.mechanism) == (24.0, 0.0, "abacus") else None
    record(f"{window}, x real time (wall)", sim / wall, unit="x", goal=goal, extra={"cpu_x": sim / cpu},
           note=f"{sim / cpu:.0f}x per CPU second; clearing {100 * clear_s / max(wall, 1e-9):.0f} % of wall")
    record(f"{window}, x real time (CPU)", sim / cpu, unit="x", goal=goal, note="simulated s per CPU s of this process")


GOAL_X = 6000.0  # README's goal: the 24 h window, the auction on every event, >= 6,000x real time


def _require_the_work(jobs: list, result: object, args: argparse.Namespace) -> None:
    """The run did the work the figure names (module docstring)."""
    s = result.summary()  # type: ignore[attr-defined]
    require(s["jobs"] == len(jobs) > 0 and s["finished"] == s["jobs"],
            f"every job of the window submitted and finished ({len(jobs)} in the window, {s['jobs']} submitted, {s['finished']} finished)")
    require(s["clearings"] >= len(jobs) and s["auction_rounds"] >= s["clearings"] and s["unconverged_clearings"] == 0,
            f"a converged clearing with rounds on every arrival and departure ({s['clearings']} clearings, {s['auction_rounds']} "
            f"rounds, {len(jobs)} arrivals, {s['unconverged_clearings']} unconverged)")
    span = result.end_time - result.start_time  # type: ignore[attr-defined]
    require(span >= 0.9 * args.hours * 3600, f"the simulated span covers the {args.hours:g} h window ({span:.0f} s)")


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
