"""Time FairShareAllocator.pick_leaf for growing numbers of leaf queues.

Usage::

    .venv/bin/python bench/bench_fairshare.py --leaves 10 100 1000 --running 2000

Each case builds a two-level tree (groups of ``--fanout`` leaves), starts
``--running`` tasks (half of unknown duration, so the Q estimate is used),
then times ``--picks`` rounds of record_finish + pick_leaf + record_start at
advancing times with 70 % of the leaves demanding (the path a freed unit
takes). Reports the best of ``--repeat`` runs, in microseconds per round.

What it proves it timed (``bench.figures.require``): every timed pick chose a demanding
leaf (a pick of -1 or of a leaf without demand would time nothing), and the allocator
counted every start and finish.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import record, require, run_guarded
from scheduler.fairshare.allocator import POLICIES, FairShareAllocator
from scheduler.fairshare.fairness import QueueTree


def build_tree(n_leaves: int, fanout: int) -> QueueTree:
    """Two-level tree: ceil(n / fanout) groups under the root, weights 1..3."""
    paths = {f"root.g{i // fanout}.q{i}": float(1 + i % 3) for i in range(n_leaves)}
    return QueueTree.from_paths(paths)


def time_picks(tree: QueueTree, policy: str, running: int, picks: int, seed: int) -> float:
    """Mean seconds per record_finish + pick_leaf + record_start over ``picks`` rounds."""
    rng = np.random.default_rng(seed)
    n_leaves = len(tree.leaves)
    alloc = FairShareAllocator(tree, policy=policy, t_wait=2.0)
    for key in range(running):
        expected = None if key % 2 else float(rng.uniform(1, 30))
        alloc.record_start(key, int(rng.integers(n_leaves)), 0.0, expected)
    masks = rng.random((picks, n_leaves)) < 0.7
    masks[:, 0] |= ~masks.any(axis=1)  # a leaf demands at every pick
    leaves = [0] * picks
    start = time.perf_counter()
    for i in range(picks):
        now = 1.0 + 0.01 * i
        alloc.record_finish(i, now)  # a unit frees up (and Q is re-estimated)
        leaf = leaves[i] = alloc.pick_leaf(masks[i], now)
        alloc.record_start(running + i, max(leaf, 0), now, None if i % 2 else 5.0)
    elapsed = (time.perf_counter() - start) / picks
    require(all(leaf >= 0 and masks[i, leaf] for i, leaf in enumerate(leaves)), f"every pick chose a demanding leaf ({policy})")
    require(int(alloc.running().sum()) == running, f"the allocator counted every start and finish ({int(alloc.running().sum())} running)")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leaves", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--fanout", type=int, default=10, help="leaves per group")
    parser.add_argument("--running", type=int, default=1000, help="tasks already running")
    parser.add_argument("--picks", type=int, default=500, help="timed rounds per case (<= running)")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    parser.add_argument("--repeat", type=int, default=5, help="report the best of this many runs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out = sys.stdout
    out.write(f"{'leaves':>7} {'policy':>6} {'us/round':>9}\n")
    for n_leaves in args.leaves:
        tree = build_tree(n_leaves, args.fanout)
        for policy in args.policies:
            sec = min(
                time_picks(tree, policy, args.running, args.picks, args.seed) for _ in range(args.repeat)
            )
            out.write(f"{n_leaves:>7} {policy:>6} {sec * 1e6:>9.1f}\n")
            if n_leaves == max(args.leaves) and policy == "hltrf":
                record(f"H-LTRF finish + pick + start, {n_leaves} leaves, {args.running} running", sec * 1e6, unit="us", better="lower")
    return 0


if __name__ == "__main__":
    sys.exit(run_guarded(main))
