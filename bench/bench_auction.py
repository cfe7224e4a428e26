"""Wall time and rounds of the Abacus auction, cold vs warm start.

Instances follow paper 000, Sec. 7.1.1 (budgets U[50, 200], weights U[0.5, 2],
one leaf queue). "warm" clears the market after one arrival, starting from the
sub-budgets of the clearing before it (the live market's case); its time does
not include that earlier clearing.

Run from the repository root:

    .venv/bin/python -m bench.bench_auction
    .venv/bin/python -m bench.bench_auction --sizes 10 100 --resources 2 --utility log
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

from scheduler.abacus import AuctionResult, auction

HEADER = (f"{'utility':>7} {'n':>5} {'m':>2}  {'cold ms':>9} {'rounds':>6}  "
          f"{'warm ms':>9} {'rounds':>6}")


def _best_time(run: Callable[[], AuctionResult], repeats: int) -> tuple[float, AuctionResult]:
    """Fastest of ``repeats`` runs in milliseconds, with the last result."""
    best = float("inf")
    result = run()
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best * 1e3, result


def _row(n: int, m: int, kind: str, args: argparse.Namespace) -> str:
    rng = np.random.default_rng(args.seed)
    budgets, weights = rng.uniform(50, 200, n), rng.uniform(0.5, 2.0, (n, m))
    common = {"utility": kind, "alpha": args.alpha, "tol": args.tol, "max_rounds": args.max_rounds}
    before = auction(budgets[:-1], weights[:-1], **common)
    warm = np.vstack([before.sub_budgets, np.full((1, m), np.nan)])
    cold_ms, cold = _best_time(lambda: auction(budgets, weights, **common), args.repeats)
    warm_ms, hot = _best_time(
        lambda: auction(budgets, weights, warm_start=warm, **common), args.repeats)
    flag = "" if cold.converged and hot.converged else "  (not converged)"
    return (f"{kind:>7} {n:>5} {m:>2}  {cold_ms:>9.2f} {cold.rounds:>6}  "
            f"{warm_ms:>9.2f} {hot.rounds:>6}{flag}")


def main(argv: Sequence[str] | None = None) -> int:
    """Print one table row per (utility, n, m); returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 5000])
    parser.add_argument("--resources", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--utility", choices=["log", "linear", "both"], default="both")
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--max-rounds", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs; the fastest is kept")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    kinds = ["log", "linear"] if args.utility == "both" else [args.utility]
    sys.stdout.write(f"alpha={args.alpha} tol={args.tol} best of {args.repeats}\n{HEADER}\n")
    for kind in kinds:
        for m in args.resources:
            for n in args.sizes:
                sys.stdout.write(_row(n, m, kind, args) + "\n")
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
