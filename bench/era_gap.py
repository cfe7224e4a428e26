"""Why ERA's headline (``era_headline``) keeps ~42 % of the requested value where paper 001 saw 51 %.

A diagnosis, not a benchmark: for each seed it prints, on the headline's FB-2009 stream
(6 classes, 20 units, 60 s slots, as ``simulator.experiments.era``):

* ``offline``: the fractional, preemptive optimum of the stream itself (the allocation
  LP of paper 001 Sec. 3.2 solved on the real requests): an upper bound no online
  mechanism reaches;
* ``constant 2.0``: Basic-Econ with a reserve price between the classes' unit values
  ($0.5-1.5 for the largest class, $5-15 for the others), i.e. perfect class separation;
* ``LP`` / ``spreading``: Basic-Econ with the predictors as the market uses them
  (``inverse_demand(t, q)`` counts every history request whose window covers t);
* ``LP, from now`` / ``spreading, from now``: the same demand, but only of history
  requests arriving at or after the current request's arrival slot. That is the
  paper's interface (Sec. 3.2: "the demand that arrives from the current time till
  t"); without it, demand that has already arrived is counted twice, once as
  promised units (Alg. 1 line 7) and once more in the predicted curve, and prices
  come out too high.

The "from now" rows rebuild the curves at every arrival slot (slow: about a minute a
seed on a quiet machine). Run from the repository root:

    .venv/bin/python -m bench.era_gap --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from scheduler.era.mechanisms import BasicEcon, Decision
from scheduler.era.predictors import ConstantPrice, DemandCurves, LPPredictor, PastRequest, SpreadingPredictor, solve_allocation_flow
from simulator.era.workload import EraRequest, fb2009_requests, run_stream
from simulator.experiments.era import TRACE


class FromNow:
    """Demand curves of the history requests arriving at or after ``now`` only (paper 001, Sec. 3.2)."""

    def __init__(self, arrival: np.ndarray, job: np.ndarray, slot: np.ndarray, units: np.ndarray, unit: np.ndarray,
                 horizon: int, floor: float) -> None:
        self.arrival, self.job, self.slot, self.units, self.unit = arrival, job, slot, units, unit
        self.horizon, self.floor, self.now = horizon, floor, -1
        self.curves: DemandCurves | None = None

    def set_now(self, now: int) -> None:
        if now != self.now:
            self.now = now
            keep = self.arrival[self.job] >= now
            self.curves = DemandCurves(self.horizon, self.slot[keep], self.unit[self.job[keep]], self.units[keep],
                                       floor=self.floor)

    def inverse_demand(self, t: Any, quantity: Any) -> Any:
        assert self.curves is not None
        return self.curves.inverse_demand(t, quantity)


class _AtArrival:
    """Basic-Econ whose predictor is told the current time (the request's arrival) before each quote."""

    def __init__(self, econ: BasicEcon, predictor: FromNow) -> None:
        self.econ, self.predictor = econ, predictor
        self.capacity, self.horizon, self.promised = econ.capacity, econ.horizon, econ.promised

    def reserve(self, units: int, duration: int, arrival: int, deadline: int, value: float) -> Decision:
        self.predictor.set_now(arrival)
        return self.econ.reserve(units, duration, arrival, deadline, value)


def rows(seed: int, capacity: int = 20, floor: float = 0.1) -> list[tuple[str, float]]:
    reqs: list[EraRequest] = fb2009_requests(TRACE, slot_s=60.0, max_units=20, seed=seed, hours=24.0)
    history: list[PastRequest] = [r.past for r in fb2009_requests(TRACE, slot_s=60.0, max_units=20, seed=seed + 1, hours=24.0)]
    horizon = max(max(r.deadline for r in reqs), max(p.deadline for p in history)) + 1
    requested = sum(r.value for r in reqs)
    out = [("offline fractional optimum", solve_allocation_flow([r.past for r in reqs], capacity, horizon).welfare / requested)]
    unit = np.array([p.unit_value for p in history])
    arrival = np.array([p.arrival for p in history])
    lp = LPPredictor(history, capacity, horizon, floor=floor)
    spread = SpreadingPredictor(history, horizon, floor=floor)
    lengths = np.array([p.deadline - p.arrival for p in history])
    job = np.repeat(np.arange(len(history)), lengths)
    slot = arrival[job] + np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    spread_units = np.array([p.units * p.duration / (p.deadline - p.arrival) for p in history])[job]
    for name, mech in (
        ("constant 2.0", BasicEcon(capacity, horizon, ConstantPrice(2.0))),
        ("LP (flow)", BasicEcon(capacity, horizon, lp)),
        ("LP (HiGHS)", BasicEcon(capacity, horizon, LPPredictor(history, capacity, horizon, floor=floor, solver="highs"))),
        ("spreading", BasicEcon(capacity, horizon, spread)),
    ):
        out.append((name, run_stream(name, mech, reqs).share))
    s = lp.solution
    for name, pred in (
        ("LP (flow), from now", FromNow(arrival, s.job, s.slot, s.units, unit, horizon, floor)),
        ("spreading, from now", FromNow(arrival, job, slot, spread_units, unit, horizon, floor)),
    ):
        out.append((name, run_stream(name, _AtArrival(BasicEcon(capacity, horizon, pred), pred), reqs).share))  # type: ignore[arg-type]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args(argv)
    for seed in args.seeds:
        for name, share in rows(seed):
            print(f"seed {seed}  {name:<28} {100 * share:6.1f} %", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
