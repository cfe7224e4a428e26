"""Rounds of the Abacus auction across alpha, both utilities (paper 000, Sec. 4.2).

Paper 000's set-up (Sec. 7.1.1: 32 users, 4 resource types, budgets U[50, 200],
weights U[0.5, 2]), default tol 1e-6 and cap 1000 rounds, seeds 0..seeds-1; then
a harder mix: budgets log-uniform on [1e-2, 1e6] in one market with 30 % zero
weights, for n = 2, 8, 32, 200. Prints converged runs, median and largest rounds.
``--hard``: only the issue's hard case, linear at alpha = 1 on that mix, for
n = 2, 3, 4, 5, 6, 8 and seeds 0..seeds-1 (100 per n: 600 markets).

    .venv/bin/python bench/bench_abacus_convergence.py
    .venv/bin/python bench/bench_abacus_convergence.py --hard --seeds 100

What it proves it measured (``bench.figures.require``): every auction ran rounds and
returned an allocation (each resource type's shares sum to 1 among the jobs that bid on
it). Its figure: the fraction of the paper set-up's markets that converged (goal: all).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import record, require, run_guarded
from scheduler.abacus.auction import AuctionResult, auction

ALPHAS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 1.0)


def _paper(seed: int, n: int = 32, m: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(50, 200, n), rng.uniform(0.5, 2, (n, m))


def _mixed(seed: int, n: int, m: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.0, 2.0, (n, m))
    weights[rng.random((n, m)) < 0.3] = 0.0
    return 10 ** rng.uniform(-2, 6, n), weights


def _checked(result: AuctionResult, weights: np.ndarray) -> AuctionResult:
    """``result``, once it is an allocation reached by rounds (module docstring)."""
    bidding = (weights > 0).any(axis=0)
    sums = result.shares.sum(axis=0)
    require(result.rounds > 0 and bool(np.allclose(sums[bidding], 1.0)),
            f"an auction that ran rounds and allocated ({result.rounds} rounds, share sums {sums.round(6).tolist()})")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--hard", action="store_true", help="linear, alpha 1, 2-8 jobs on the 1e-2..1e6 mix only")
    args = parser.parse_args(argv)
    if args.hard:
        print(f"{'n':>3} {'converged':>9} {'median':>6} {'max':>5}")
        for n in (2, 3, 4, 5, 6, 8):
            results = [_checked(auction(*mix, utility="linear", alpha=1.0), mix[1]) for mix in (_mixed(s, n) for s in range(args.seeds))]
            rounds = [r.rounds for r in results]
            ok = sum(r.converged for r in results)
            print(f"{n:>3} {ok:>4}/{args.seeds:<4} {statistics.median(rounds):>6} {max(rounds):>5}")
        return 0
    print(f"{'set-up':>14} {'utility':>7} {'alpha':>5}  {'converged':>9} {'median':>6} {'max':>5}")
    paper_ok = paper_runs = 0
    setups = [("paper n=32", lambda s: _paper(s))] + [(f"mixed n={n}", lambda s, n=n: _mixed(s, n)) for n in (2, 8, 32, 200)]
    for label, make in setups:
        for kind in ("linear", "log"):
            for alpha in ALPHAS:
                rounds, ok = [], 0
                for seed in range(args.seeds):
                    budgets, weights = make(seed)
                    r = _checked(auction(budgets, weights, utility=kind, alpha=alpha), weights)
                    rounds.append(r.rounds)
                    ok += r.converged
                print(f"{label:>14} {kind:>7} {alpha:>5}  {ok:>4}/{args.seeds:<4} {statistics.median(rounds):>6} {max(rounds):>5}")
                if label == "paper n=32":
                    paper_ok, paper_runs = paper_ok + ok, paper_runs + args.seeds
    record("auction convergence, paper 000 set-up (n=32, all alphas)", paper_ok / paper_runs, unit="converged", goal=1.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
