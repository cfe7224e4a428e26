"""Time paper 003's deadline quote: Algorithm 1 (continuous) and the whole-slot search.

Usage::

    .venv/bin/python bench/bench_deadline.py --repeat 25

Cases (random seeded instances, deadline at 1.5x the fastest whole-slot time):

* ``alg1 R=r P=p``: ``scheduler.deadline.payment.min_payment`` on p candidate nodes of r dimensions,
  limits binding on about half the dimensions;
* ``slots R=r slots=a``: ``scheduler.deadline.slots.min_payment_slots`` on one node with a
  slots of each of r dimensions, divisible work;
* ``waves R=2 tasks=n``: the market's case: map and reduce phases of n tasks each on
  (100, 50) slots with task waves.

Prints the median time per call in milliseconds.

What it proves it timed (``bench.figures.require``): every call returned a feasible
allocation (by construction each instance can meet its deadline) with a positive, finite
payment.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.figures import record, require, run_guarded
from scheduler.deadline.payment import min_payment, unlimited_optimum
from scheduler.deadline.slots import min_payment_slots


def median_ms(call: Callable[[], object], repeat: int, name: str = "") -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t0)
    payment, feasible = float(out.payment), bool(out.feasible)  # type: ignore[attr-defined]
    require(feasible and 0 < payment < float("inf"), f"{name}: a feasible allocation with a finite payment ({feasible}, {payment})")
    return statistics.median(times) * 1000.0


def alg1_case(R: int, P: int, rng: np.random.Generator) -> Callable[[], object]:
    l_, b = rng.uniform(1, 100, R), rng.uniform(0.1, 5, (P, R))
    D = 10.0
    a = np.array([unlimited_optimum(l_, D, b[p]) * rng.uniform(0.5, 2.0, R) for p in range(P)])
    a = np.maximum(a, l_ / D * R)  # keep every node feasible
    return lambda: min_payment(l_, D, b, a)


def slots_case(R: int, slots: int, rng: np.random.Generator) -> Callable[[], object]:
    l_, b = rng.uniform(100, 5000, R), rng.uniform(0.1, 3, R)
    D = 1.5 * float(np.sum(l_ / slots))
    return lambda: min_payment_slots(l_, D, b, [slots] * R)


def waves_case(n: int, rng: np.random.Generator) -> Callable[[], object]:
    tasks = [n, n]
    dur = rng.uniform(5, 60, 2)
    l_, cap = np.array(tasks) * dur, [100, 50]
    fastest = sum(np.ceil(t / c) * d for t, c, d in zip(tasks, cap, dur, strict=True))
    return lambda: min_payment_slots(l_, 1.5 * fastest, [0.02, 0.05], cap, tasks=tasks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    cases: list[tuple[str, Callable[[], object]]] = []
    cases += [(f"alg1 R={R} P={P}", alg1_case(R, P, rng)) for R, P in ((2, 1), (4, 10), (8, 100))]
    cases += [(f"slots R={R} slots={a}", slots_case(R, a, rng)) for R, a in ((2, 100), (2, 1000), (3, 100), (4, 40))]
    cases += [(f"waves R=2 tasks={n}", waves_case(n, rng)) for n in (10, 1000, 100_000)]
    print(f"{'case':<26}{'median ms':>12}")
    for name, call in cases:
        ms = median_ms(call, args.repeat, name)
        print(f"{name:<26}{ms:>12.3f}")
        if name == "waves R=2 tasks=100000":
            record(f"deadline quote, whole slots with task waves ({name.split(' ', 1)[1]})", ms, unit="ms", better="lower")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
