"""ERA (paper 001): the cheapest-start search by prefix sums against a naive double loop,
and the LP-based predictor's solve time.

1. Search: a window of L slots (1,440 = a day, 10,080 = a week of 1-minute slots),
   a request of W = 10 units for T = L / 2 slots (the double loop's worst case),
   100 units of capacity, half of it promised at random. "prefix" is
   ``scheduler.era.mechanisms.window_sums`` plus the earliest minimum over the per-slot costs;
   "naive" sums ``cost[t] + ... + cost[t + T - 1]`` for every start in Python
   (Alg. 1 lines 9-11 as written). Both get the same per-slot costs; their starts
   and prices are asserted equal. "quote" is the whole ``BasicEcon.quote`` (unit
   prices from a spreading predictor, then the prefix search).
2. LP predictor: n past requests with 24-slot windows over a day of 1,440 slots,
   W in [1, 10], T in [1, 12], capacity 100; the time to build ``LPPredictor``
   (the allocation, then the demand curves) with each solver: "flow", the exact
   greedy flow algorithm of ``scheduler.era.flow`` (the default), and "highs",
   the windowed sparse LP solved by HiGHS. Their welfare is asserted equal.

What it proves it timed (``bench.figures.require``): the two searches find the same start
and price, the quote starts there, and the two LP solvers reach the same welfare.

Medians of ``--repeats`` runs (the naive loop runs once; the LP rows use
``--lp-repeats``). Run from the repository root:

    .venv/bin/python -m bench.bench_era
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.figures import record, require, run_guarded
from scheduler.era.mechanisms import BasicEcon, window_sums
from scheduler.era.predictors import LPPredictor, PastRequest, SpreadingPredictor


def _median_ms(run: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), result


def _median_wall_cpu_ms(run: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """Median wall and CPU (this process) milliseconds: on a shared machine the CPU time
    is the figure that does not depend on the other processes' load."""
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = run()
        walls.append((time.perf_counter() - wall) * 1e3)
        cpus.append((time.process_time() - cpu) * 1e3)
    return statistics.median(walls), statistics.median(cpus), result


def prefix_search(cost: np.ndarray, duration: int) -> tuple[int, float]:
    totals = window_sums(cost, duration)
    k = int(np.argmin(totals))
    return k, float(totals[k])


def naive_search(cost: list[float], duration: int) -> tuple[int, float]:
    best, best_k = float("inf"), -1
    for start in range(len(cost) - duration + 1):
        total = 0.0
        for t in range(start, start + duration):
            total += cost[t]
        if total < best:
            best, best_k = total, start
    return best_k, best


def _history(rng: np.random.Generator, n: int, horizon: int, window: int = 24) -> list[PastRequest]:
    out = []
    for _ in range(n):
        a = int(rng.integers(0, horizon - window + 1))
        out.append(PastRequest(int(rng.integers(1, 11)), int(rng.integers(1, 13)), a, a + window, float(rng.uniform(1, 100))))
    return out


def search_row(length: int, repeats: int, rng: np.random.Generator) -> str:
    duration, units, capacity = length // 2, 10, 100
    econ = BasicEcon(capacity, length, SpreadingPredictor(_history(rng, 2000, length), length),
                     promised=rng.integers(0, capacity // 2, length))
    cost = econ.unit_prices(units, 0, length).sum(axis=1)
    fast_ms, fast = _median_ms(lambda: prefix_search(cost, duration), repeats)
    as_list = cost.tolist()
    naive_ms, slow = _median_ms(lambda: naive_search(as_list, duration), 1)
    require(fast[0] == slow[0] and abs(fast[1] - slow[1]) <= 1e-9 * abs(slow[1]), f"both searches find one start and price {fast} {slow}")
    quote_ms, offer = _median_ms(lambda: econ.quote(units, duration, 0, length), repeats)
    require(offer is not None and offer.start == fast[0], "the quote starts where the search found the cheapest start")
    if length == 10080:
        record("ERA cheapest start, a week of 1-minute slots: prefix sums vs double loop", naive_ms / fast_ms, unit="x")
    return f"{'search':>8} {length:>7} {duration:>6} {fast_ms:>10.3f} {naive_ms:>10.1f} {naive_ms / fast_ms:>9.0f}x {quote_ms:>9.2f}"


def lp_row(n: int, repeats: int, rng: np.random.Generator) -> str:
    history = _history(rng, n, 1440)
    flow_ms, flow_cpu, flow = _median_wall_cpu_ms(lambda: LPPredictor(history, 100.0, 1440, solver="flow"), repeats)
    highs_ms, highs_cpu, highs = _median_wall_cpu_ms(lambda: LPPredictor(history, 100.0, 1440, solver="highs"), repeats)
    a, b = flow.solution.welfare, highs.solution.welfare
    require(abs(a - b) <= 1e-7 * max(1.0, abs(b)), f"both LP solvers reach one welfare ({a}, {b})")
    variables = sum(r.deadline - r.arrival for r in history) + n
    return (f"{'lp':>8} {n:>7} {variables:>9} {flow_ms:>8.1f} / {flow_cpu:<8.1f} {highs_ms:>8.1f} / {highs_cpu:<8.1f}"
            f" {highs_cpu / flow_cpu:>6.1f}x  welfare {a:,.2f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[1440, 10080])
    parser.add_argument("--requests", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lp-repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"{'':>8} {'slots L':>7} {'T':>6} {'prefix ms':>10} {'naive ms':>10} {'ratio':>10} {'quote ms':>9}")
    for length in args.lengths:
        print(search_row(length, args.repeats, rng), flush=True)
    print(f"\n{'':>8} {'past n':>7} {'variables':>9} {'flow ms wall / CPU':>19} {'HiGHS ms wall / CPU':>19} {'ratio':>7}")
    for n in args.requests:
        print(lp_row(n, args.lp_repeats, rng), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_guarded(main))
