"""Stride dispatch per unit: the ledgers of ``scheduler.dispatch`` against the dict reference.

One leaf of k jobs (ids in arrival order, 80 % eligible, Dirichlet shares for two resource
types), ``--units`` units alternating between the types; every 50 units one job's
eligibility flips through a fresh mask array, as ``simulator.cluster.placement`` rebuilds
its cached members when a job runs out of (or gets) eligible tasks. The same calls go to
``bench.dispatch_reference.ReferenceDispatcher`` (the dict of Python floats updated job by
job, as before the fast ledgers) and to ``ShareDispatcher``; each is timed ``--repeat`` times (a
fresh dispatcher each time) and the median CPU time per unit is reported, with the speed-up.
``--ledgers`` also times the new dispatcher with each ledger kind forced (Python lists,
numpy vectors), the measurement behind ``scheduler.dispatch._SMALL_LEDGER``.

What it proves it timed (``bench.figures.require``): every unit was granted (no -1), both
variants chose the same winners in the same order and ended with the same ``to_state()``,
and the new dispatcher served the leaf from the ledger kind its size calls for.

Usage: .venv/bin/python bench/bench_dispatch.py [--jobs 10 100 500] [--units 10000] [--repeat 3] [--ledgers]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root

from bench.dispatch_reference import ReferenceDispatcher
from bench.figures import Timer, record, require, run_guarded
from scheduler import dispatch
from scheduler.dispatch import ShareDispatcher

Call = tuple[np.ndarray, np.ndarray, np.ndarray, int]


def calls(k: int, units: int, seed: int = 26) -> list[Call]:
    """The ``choose`` arguments of each unit (module docstring)."""
    rng = np.random.default_rng(seed + k)
    ids = np.arange(1, k + 1, dtype=np.int64) * 7  # arrival order: increasing
    shares = [rng.dirichlet(np.ones(k)) for _ in range(2)]
    eligible = rng.random(k) < 0.8
    out: list[Call] = []
    for unit in range(units):
        if unit % 50 == 49:
            eligible = eligible.copy()
            eligible[rng.integers(k)] ^= True
        if not eligible.any():
            eligible = eligible.copy()
            eligible[0] = True
        j = unit % 2
        out.append((ids, shares[j], eligible, j))
    return out


def timed(make: Callable[[], Any], work: list[Call], repeat: int) -> tuple[float, list[int], Any]:
    """Median CPU microseconds per unit over ``repeat`` fresh dispatchers; the last run's
    winners and dispatcher."""
    cpu: list[float] = []
    winners: list[int] = []
    dispatcher = None
    for _ in range(repeat):
        dispatcher = make()
        choose = dispatcher.choose
        with Timer() as t:
            winners = [choose(ids, shares, eligible, j) for ids, shares, eligible, j in work]
        cpu.append(t.cpu / len(work) * 1e6)
    return statistics.median(cpu), winners, dispatcher


@contextmanager
def ledger_kind(small: int) -> Iterator[None]:
    """Force the ledger kind: lists up to ``small`` jobs (measurement only)."""
    saved = dispatch._SMALL_LEDGER
    dispatch._SMALL_LEDGER = small
    try:
        yield
    finally:
        dispatch._SMALL_LEDGER = saved


def ledger_kinds(dispatcher: ShareDispatcher) -> set[str]:
    return {type(ledger).__name__ for by_resource in dispatcher._ledgers.values() for ledger in by_resource.values()}


def measure(k: int, units: int, repeat: int, ledgers: bool) -> None:
    work = calls(k, units)
    ref_us, ref_winners, ref = timed(lambda: ReferenceDispatcher("stride"), work, repeat)
    new_us, new_winners, new = timed(lambda: ShareDispatcher("stride"), work, repeat)
    require(len(new_winners) == units and min(ref_winners) >= 0, f"k={k}: all {units} units granted")
    require(new_winners == ref_winners, f"k={k}: the new dispatcher chose the reference's winners in the same order")
    require(json.dumps(new.to_state()) == json.dumps(ref.to_state()), f"k={k}: the same to_state() after the run")
    want = "_ListLedger" if k <= dispatch._SMALL_LEDGER else "_ArrayLedger"
    require(ledger_kinds(new) == {want}, f"k={k}: served from {want}")
    extra = {"reference_us_per_unit": ref_us, "new_us_per_unit": new_us}
    if ledgers:
        for name, small in (("lists", sys.maxsize), ("vectors", -1)):
            with ledger_kind(small):
                us, winners, _ = timed(lambda: ShareDispatcher("stride"), work, repeat)
            require(winners == ref_winners, f"k={k}: {name} chose the reference's winners")
            extra[f"{name}_us_per_unit"] = us
    note = ", ".join(f"{key.removesuffix('_us_per_unit')} {value:.1f} us" for key, value in extra.items()) + " CPU per unit"
    record(f"stride dispatch k={k}, {units} units: speed-up over the dict reference (CPU)",
           ref_us / new_us, unit="x", note=note, extra=extra)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, nargs="+", default=[10, 100, 500], help="k, jobs of the leaf (>= 1)")
    parser.add_argument("--units", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ledgers", action="store_true", help="also time each ledger kind forced")
    args = parser.parse_args(argv)
    require(min(args.jobs) >= 1 and args.units >= 1 and args.repeat >= 1, "k >= 1, units >= 1, repeat >= 1")
    for k in args.jobs:
        measure(k, args.units, args.repeat, args.ledgers)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
